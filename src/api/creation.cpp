// Leaf tensors: constants, index tensors and random values.
#include <atomic>

#include "api/builder.hpp"
#include "exec/operand.hpp"
#include "graph/values.hpp"
#include "kiln/ops.hpp"

namespace kiln {

using detail::Op;

namespace {
// The type a value gets where no type is named.
DType type_of_literal(Scalar value) {
  return is_float(value.dtype()) ? default_dtype() : value.dtype();
}
}  // namespace

Tensor scalar(Scalar value) { return scalar(value, type_of_literal(value)); }

Tensor scalar(Scalar given, DType dtype) {
  const Scalar value = given.cast(dtype);
  Tensor t = detail::make_node(Op::store, value.dtype(), {}, {});
  auto buffer = std::make_shared<detail::Buffer>(value.dtype(), 1);
  buffer->set(0, value);
  detail::set_host_values(*t.node(), std::move(buffer));
  return t;
}

Tensor full(Shape shape, Scalar value, DType dtype) {
  Tensor s = scalar(detail::fitting_value("full", value, dtype), dtype);
  return shape.empty() ? s : broadcast_to(s, std::move(shape));
}
Tensor full(Shape shape, Scalar value) {
  return full(std::move(shape), value, type_of_literal(value));
}
Tensor zeros(Shape shape) { return full(std::move(shape), 0, default_dtype()); }
Tensor zeros(Shape shape, DType dtype) { return full(std::move(shape), 0, dtype); }
Tensor ones(Shape shape) { return full(std::move(shape), 1, default_dtype()); }
Tensor ones(Shape shape, DType dtype) { return full(std::move(shape), 1, dtype); }

Tensor zeros_like(const Tensor& like) {
  return zeros_like(like, detail::node_of(like, "zeros_like")->dtype);
}
Tensor zeros_like(const Tensor& like, DType dtype) {
  return full(detail::node_of(like, "zeros_like")->shape, 0, dtype);
}
Tensor ones_like(const Tensor& like) {
  return ones_like(like, detail::node_of(like, "ones_like")->dtype);
}
Tensor ones_like(const Tensor& like, DType dtype) {
  return full(detail::node_of(like, "ones_like")->shape, 1, dtype);
}
Tensor full_like(const Tensor& like, Scalar value) {
  return full_like(like, value, detail::node_of(like, "full_like")->dtype);
}
Tensor full_like(const Tensor& like, Scalar value, DType dtype) {
  return full(detail::node_of(like, "full_like")->shape, value, dtype);
}
Tensor uniform_like(const Tensor& like) {
  const detail::NodePtr& n = detail::node_of(like, "uniform_like");
  return uniform(n->shape, n->dtype);
}

Tensor placeholder(Shape shape, DType dtype, std::string name) {
  detail::Attrs attrs;
  attrs.store_kind = detail::StoreKind::placeholder;
  Tensor t = detail::make_node(Op::store, dtype, std::move(shape), {}, std::move(attrs));
  if (!name.empty()) t.set_name(std::move(name));
  return t;
}

Tensor constant(const Tensor& values) {
  const detail::Node& source = *detail::node_of(values, "constant");
  values.eval();
  detail::Attrs attrs;
  attrs.store_kind = detail::StoreKind::constant;
  auto leaf = std::make_shared<detail::Node>(Op::store, source.dtype, source.shape,
                                             std::vector<detail::NodePtr>{}, std::move(attrs));
  detail::set_host_values(*leaf, detail::host_buffer(source));
  leaf->home = source.home;
  return Tensor(std::move(leaf));
}

Tensor arange(std::int64_t n) {
  if (n < 0) detail::fail(ErrorCode::illegal_dimension, "arange", "negative length " + std::to_string(n));
  Tensor t = detail::make_node(Op::store, DType::i64, {n}, {});
  auto buffer = std::make_shared<detail::Buffer>(DType::i64, n);
  for (std::int64_t i = 0; i < n; ++i) buffer->as<std::int64_t>()[i] = i;
  detail::set_host_values(*t.node(), std::move(buffer));
  return t;
}

Tensor arange(Shape shape, int axis) {
  const int rank = static_cast<int>(shape.size());
  const int ax = detail::normalize_axis("arange", axis, rank, shape);
  if (shape[ax] < 0)
    detail::fail(ErrorCode::illegal_dimension, "arange", "negative size in shape " + shape_to_string(shape));
  Shape column(shape.size(), 1);
  column[ax] = shape[ax];
  const Tensor line = reshape(arange(shape[ax]), column);
  return broadcast_to(line, std::move(shape));
}

Tensor uniform(Shape shape, std::uint64_t seed, DType dtype) {
  if (!is_float(dtype))
    detail::fail(ErrorCode::wrong_type, "uniform",
                 std::string("needs a float type, got ") + dtype_name(dtype));
  detail::Attrs attrs;
  attrs.seed = seed;
  return detail::make_node(Op::random_uniform, dtype, std::move(shape), {}, std::move(attrs));
}

namespace {
std::atomic<std::uint64_t> global_seed_state{0x2545f4914f6cdd1dULL};
}  // namespace

std::uint64_t detail::next_global_seed() {
  std::uint64_t z = global_seed_state.fetch_add(0x9e3779b97f4a7c15ULL) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Tensor uniform(Shape shape, DType dtype) {
  return uniform(std::move(shape), detail::next_global_seed(), dtype);
}
Tensor uniform(Shape shape, std::uint64_t seed) {
  return uniform(std::move(shape), seed, default_dtype());
}
Tensor uniform(Shape shape) { return uniform(std::move(shape), default_dtype()); }
void manual_seed(std::uint64_t seed) { global_seed_state.store(seed); }
std::uint64_t random_state() { return global_seed_state.load(); }
std::uint64_t next_seed() {
  const std::uint64_t s = detail::next_global_seed();
  return s == 0 ? 1 : s;
}

Tensor detail::in_default_dtype(const std::vector<double>& values, Shape shape) {
  return converted_leaf(Tensor::from(values, std::move(shape)), default_dtype());
}

Tensor detail::converted_leaf(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : convert(t, dtype).detach();
}

}  // namespace kiln
