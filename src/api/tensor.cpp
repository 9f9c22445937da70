// Tensor handles: counting, reading values, introspection and the method forms of ops.
#include "kiln/tensor.hpp"

#include <cstring>

#include "api/builder.hpp"
#include "exec/evaluate.hpp"
#include "exec/operand.hpp"
#include "graph/values.hpp"
#include "kiln/executor.hpp"
#include "kiln/ops.hpp"

namespace kiln {

using detail::Node;

Tensor::Tensor(std::shared_ptr<Node> node) : node_(std::move(node)) {
  if (node_) ++node_->handles;
}
Tensor::Tensor(std::shared_ptr<detail::Variable> variable) : variable_(std::move(variable)) {}
Tensor::Tensor(const Tensor& other)
    : node_(other.node_), variable_(other.variable_), inverse_broadcast_(other.inverse_broadcast_) {
  if (node_) ++node_->handles;
}
Tensor::Tensor(Tensor&& other) noexcept
    : node_(std::move(other.node_)),
      variable_(std::move(other.variable_)),
      inverse_broadcast_(other.inverse_broadcast_) {}
Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}
Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    if (node_) --node_->handles;
    node_ = std::move(other.node_);
    variable_ = std::move(other.variable_);
    inverse_broadcast_ = other.inverse_broadcast_;
  }
  return *this;
}
Tensor::~Tensor() {
  if (node_) --node_->handles;
}

const Node& Tensor::n() const { return *detail::node_of(*this, "tensor"); }

Tensor Tensor::from_bytes(const void* data, DType dtype, Shape shape) {
  Tensor t = detail::make_node(detail::Op::store, dtype, std::move(shape), {});
  auto buffer = std::make_shared<detail::Buffer>(dtype, t.numel());
  if (buffer->bytes() != 0) std::memcpy(buffer->data(), data, buffer->bytes());
  if (is_bool(dtype)) {  // kernels may rely on 0 and 1
    auto* bytes = buffer->as<std::uint8_t>();
    for (std::int64_t i = 0; i < buffer->numel(); ++i) bytes[i] = bytes[i] != 0 ? 1 : 0;
  }
  detail::set_host_values(*t.node_, std::move(buffer));
  return t;
}

Tensor Tensor::from(const std::vector<bool>& data, Shape shape) {
  check_count(static_cast<std::int64_t>(data.size()), shape);
  const std::vector<std::uint8_t> bytes(data.begin(), data.end());
  return from_bytes(bytes.data(), DType::boolean, std::move(shape));
}

std::vector<std::uint8_t> Tensor::to_bytes_of_bool() const {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(numel()));
  copy_to(out.data(), DType::boolean);
  return out;
}

Tensor Tensor::from_blob(void* data, Shape shape, DType dtype,
                         std::function<void(void*)> deleter) {
  Tensor t = detail::make_node(detail::Op::store, dtype, std::move(shape), {});
  if (data == nullptr && t.numel() > 0)
    detail::fail(ErrorCode::invalid_select, "from_blob",
                 "null data for shape " + shape_to_string(t.shape()));
  // A bool byte other than 0 and 1 is not a C++ bool (data<bool>() would hand it out): such
  // memory is copied, normalised, like misaligned memory.
  bool odd_bools = false;
  if (is_bool(dtype)) {
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    for (std::int64_t i = 0; i < t.numel() && !odd_bools; ++i) odd_bools = bytes[i] > 1;
  }
  if (reinterpret_cast<std::uintptr_t>(data) % 64 != 0 || odd_bools) {
    Tensor copy = from_bytes(data, dtype, t.shape());
    if (deleter) deleter(data);
    return copy;
  }
  detail::set_host_values(
      *t.node_, std::make_shared<detail::Buffer>(dtype, t.numel(), data, std::move(deleter)));
  return t;
}

const void* Tensor::data_ptr(DType expected) const {
  if (dtype() != expected)
    detail::fail(ErrorCode::wrong_type, "data",
                 std::string("a ") + dtype_name(dtype()) + " tensor " +
                     shape_to_string(shape()) + " read as " + dtype_name(expected));
  eval();
  return detail::host_values(n()).data();
}

void Tensor::check_count(std::int64_t count, const Shape& shape) {
  for (auto d : shape)
    if (d < 0)
      detail::fail(ErrorCode::illegal_dimension, "from",
                   "negative size in shape " + shape_to_string(shape));
  std::int64_t n = 1;
  bool overflow = false;
  for (auto d : shape) overflow |= __builtin_mul_overflow(n, d, &n);
  for (auto d : shape)
    if (d == 0) n = 0, overflow = false;
  if (overflow || n != count)
    detail::fail(ErrorCode::incompatible_shapes, "from",
                 std::to_string(count) + " values do not fill shape " + shape_to_string(shape));
}

const Shape& Tensor::shape() const { return n().shape; }
int Tensor::rank() const { return static_cast<int>(n().shape.size()); }
std::int64_t Tensor::numel() const { return n().numel(); }
DType Tensor::dtype() const { return n().dtype; }
std::int64_t Tensor::size(int axis) const {
  return shape()[detail::normalize_axis("size", axis, rank(), shape())];
}

const Tensor& Tensor::eval() const {
  detail::evaluate(*detail::node_of(*this, "eval"));
  return *this;
}
const Tensor& Tensor::eval(Executor& executor) const {
  detail::Node* targets[] = {detail::node_of(*this, "eval").get()};
  detail::evaluate(targets, executor);
  return *this;
}
bool Tensor::is_evaluated() const { return detail::has_values(n()); }
const Tensor& Tensor::place_on(Executor& executor) const {
  detail::Node* targets[] = {detail::node_of(*this, "place_on").get()};
  detail::place(targets, executor);
  return *this;
}
bool Tensor::is_on(const Executor& executor) const {
  return detail::has_values(n()) && executor.holds(n());
}

Tensor Tensor::detach() const {
  eval();
  const Node& source = n();
  auto leaf = std::make_shared<Node>(detail::Op::store, source.dtype, source.shape,
                                     std::vector<detail::NodePtr>{});
  detail::set_host_values(*leaf, detail::host_buffer(source));
  leaf->home = source.home;  // it stays on its device
  return Tensor(std::move(leaf));
}

void Tensor::copy_to(void* dst, DType as) const {
  eval();
  const detail::Buffer& b = detail::host_values(n());
  // Through memcpy, so that dst needs no alignment (a file format's buffer packs values of
  // several types); compilers make each copy one plain store.
  if (is_narrow_float(as)) {
    auto* out = static_cast<std::byte*>(dst);
    for (std::int64_t i = 0; i < b.numel(); ++i) {
      const std::uint16_t v = detail::narrow_bits(as, b.get<double>(i));
      std::memcpy(out + i * 2, &v, 2);
    }
    return;
  }
  if (is_bool(as)) {
    auto* out = static_cast<std::uint8_t*>(dst);
    for (std::int64_t i = 0; i < b.numel(); ++i) out[i] = b.get<bool>(i) ? 1 : 0;
    return;
  }
  if (is_narrow_integer(as)) {
    return detail::dispatch_stored(as, [&]<class T>() {
      auto* out = static_cast<std::byte*>(dst);
      for (std::int64_t i = 0; i < b.numel(); ++i) {
        const T v = b.get<T>(i);
        std::memcpy(out + i * static_cast<std::int64_t>(sizeof(T)), &v, sizeof(T));
      }
    });
  }
  detail::dispatch_with_complex(as, [&]<class T>() {
    auto* out = static_cast<std::byte*>(dst);
    for (std::int64_t i = 0; i < b.numel(); ++i) {
      const T v = b.get<T>(i);
      std::memcpy(out + i * static_cast<std::int64_t>(sizeof(T)), &v, sizeof(T));
    }
  });
}

Scalar Tensor::element(std::span<const std::int64_t> index) const {
  const Shape& s = shape();
  if (index.size() != s.size())
    detail::fail(ErrorCode::illegal_dimensionality, "at",
                 std::to_string(index.size()) + " indices for shape " + shape_to_string(s));
  std::int64_t position = 0;
  for (std::size_t d = 0; d < s.size(); ++d) {
    std::int64_t i = index[d] < 0 ? index[d] + s[d] : index[d];
    if (i < 0 || i >= s[d])
      detail::fail(ErrorCode::invalid_select, "at",
                   "index " + std::to_string(index[d]) + " out of range for dimension " +
                       std::to_string(d) + " of shape " + shape_to_string(s));
    position = position * s[d] + i;
  }
  eval();
  return detail::host_values(n()).scalar(position);
}

Scalar Tensor::item_scalar() const {
  if (numel() != 1)
    detail::fail(ErrorCode::incompatible_shapes, "item",
                 "tensor of shape " + shape_to_string(shape()) + " does not have one element");
  eval();
  return detail::host_values(n()).scalar(0);
}

std::string_view Tensor::op_name() const { return n().info().name; }
std::vector<Tensor> Tensor::inputs() const {
  std::vector<Tensor> out;
  for (const auto& in : n().inputs) out.emplace_back(in);
  return out;
}
const std::string& Tensor::name() const { return n().name; }
Tensor& Tensor::set_name(std::string name) {
  detail::node_of(*this, "set_name")->name = std::move(name);
  return *this;
}

Tensor Tensor::inverse_broadcast() const {
  Tensor t = *this;
  t.inverse_broadcast_ = true;
  return t;
}
Tensor Tensor::normal_broadcast() const {
  Tensor t = *this;
  t.inverse_broadcast_ = false;
  return t;
}

Tensor Tensor::reshape(Shape s) const { return kiln::reshape(*this, std::move(s)); }
Tensor Tensor::flatten() const { return kiln::flatten(*this); }
Tensor Tensor::permute(std::vector<int> perm) const {
  return kiln::permute(*this, std::move(perm));
}
Tensor Tensor::transpose(int a, int b) const { return kiln::transpose(*this, a, b); }
Tensor Tensor::slice(std::vector<std::int64_t> start, std::vector<std::int64_t> stop) const {
  return kiln::slice(*this, std::move(start), std::move(stop));
}
Tensor Tensor::slice(std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
                     std::vector<std::int64_t> step) const {
  return kiln::slice(*this, std::move(start), std::move(stop), std::move(step));
}
Tensor Tensor::squeeze() const { return kiln::squeeze(*this); }
Tensor Tensor::squeeze(int axis) const { return kiln::squeeze(*this, axis); }
Tensor Tensor::unsqueeze(int axis) const { return kiln::unsqueeze(*this, axis); }
Tensor Tensor::contiguous() const { return kiln::contiguous(*this); }
Tensor Tensor::convert(DType to) const { return kiln::convert(*this, to); }
Tensor Tensor::sum() const { return kiln::sum(*this); }
Tensor Tensor::sum(std::vector<int> axes, bool keepdims) const {
  return kiln::sum(*this, std::move(axes), keepdims);
}
Tensor Tensor::mean() const { return kiln::mean(*this); }
Tensor Tensor::mean(std::vector<int> axes, bool keepdims) const {
  return kiln::mean(*this, std::move(axes), keepdims);
}
Tensor Tensor::max() const { return kiln::max(*this); }
Tensor Tensor::max(std::vector<int> axes, bool keepdims) const {
  return kiln::max(*this, std::move(axes), keepdims);
}
Tensor Tensor::max(std::initializer_list<int> axes, bool keepdims) const {
  return kiln::max(*this, axes, keepdims);
}
ValuesIndices Tensor::max(int dim, bool keepdim) const { return kiln::max(*this, dim, keepdim); }
Tensor Tensor::min(std::initializer_list<int> axes, bool keepdims) const {
  return kiln::min(*this, axes, keepdims);
}
ValuesIndices Tensor::min(int dim, bool keepdim) const { return kiln::min(*this, dim, keepdim); }
Tensor Tensor::min() const { return kiln::min(*this); }
Tensor Tensor::min(std::vector<int> axes, bool keepdims) const {
  return kiln::min(*this, std::move(axes), keepdims);
}

}  // namespace kiln
