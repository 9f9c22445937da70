// nn's uniform initialisations and Parameter slots.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <vector>

#include "graph/node.hpp"
#include "kiln/nn.hpp"
#include "kiln/ops.hpp"

namespace kiln::nn {

namespace {

void check_shape(const char* what, const Shape& shape) {
  for (auto d : shape)
    if (d < 0) throw Error(ErrorCode::illegal_dimension,
                           std::string("nn::") + what + ": negative size in shape " +
                               shape_to_string(shape));
}

}  // namespace

Tensor uniform(Shape shape, double low, double high, std::uint64_t seed) {
  check_shape("uniform", shape);
  if (!(low <= high))
    throw Error(ErrorCode::invalid_select, "nn::uniform: empty range [" + std::to_string(low) +
                                               ", " + std::to_string(high) + ")");
  if (seed == 0) seed = next_seed();
  const Tensor u = kiln::uniform(shape, seed, DType::f64);
  return detach(convert(u * (high - low) + low, DType::f32));
}

Tensor kaiming_uniform(Shape shape, std::int64_t fan_in, double a, std::uint64_t seed) {
  if (fan_in <= 0)
    throw Error(ErrorCode::illegal_dimension,
                "nn::kaiming_uniform: fan_in must be positive, got " + std::to_string(fan_in));
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fan_in));
  return uniform(std::move(shape), -bound, bound, seed);
}

Tensor xavier_uniform(Shape shape, std::int64_t fan_in, std::int64_t fan_out, double gain,
                      std::uint64_t seed) {
  if (fan_in <= 0 || fan_out <= 0)
    throw Error(ErrorCode::illegal_dimension,
                "nn::xavier_uniform: fans must be positive, got " + std::to_string(fan_in) +
                    " and " + std::to_string(fan_out));
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform(std::move(shape), -bound, bound, seed);
}

// ---- detach and Parameter -----------------------------------------------------------------------

namespace {
bool is_leaf(const Tensor& t) {
  return t.is_evaluated() && t.op_name() == "store" && t.inputs().empty();
}
}  // namespace

Tensor detach(const Tensor& t) {
  if (!t.defined()) throw Error(ErrorCode::illegal_dimension, "nn::detach: empty tensor handle");
  return t.detach();  // a leaf sharing the evaluated values
}

struct Parameter::Slot {
  std::string name;
  std::shared_ptr<detail::Variable> variable;  // the current value, read by every handle
  Tensor handle;                               // Tensor(variable): what value() gives out
  bool requires_grad = true;
  bool buffer = false;  // a module's buffer: not a gradient variable

  const Tensor& current() const { return variable->value(); }
};

namespace {
std::string type_name(DType t) { return std::string(kiln::dtype_name(t)); }
}  // namespace

Parameter Parameter::buffer(std::string name, const Tensor& value) {
  Parameter p(std::move(name), value);
  p.slot_->buffer = true;
  p.slot_->requires_grad = false;
  p.slot_->current().unwatch();
  return p;
}

Parameter::Parameter(std::string name, const Tensor& value) : slot_(std::make_shared<Slot>()) {
  slot_->name = std::move(name);
  if (!value.defined())
    throw Error(ErrorCode::illegal_dimension,
                "nn::Parameter: empty tensor for parameter '" + slot_->name + "'");
  // Floating values keep their type (a module of f64 parameters computes in f64); others, which
  // no gradient can train, become the default float type.
  Tensor v = is_float(value.dtype()) ? value : convert(value, default_dtype());
  if (!is_leaf(v)) v = detach(v);
  v.watch();
  slot_->variable = std::make_shared<detail::Variable>(v);
  slot_->handle = Tensor(slot_->variable);
}

const std::string& Parameter::name() const {
  if (!slot_) throw Error(ErrorCode::illegal_dimension, "nn::Parameter: empty handle");
  return slot_->name;
}

bool Parameter::requires_grad() const {
  if (!slot_) throw Error(ErrorCode::illegal_dimension, "nn::Parameter: empty handle");
  return slot_->requires_grad;
}

void Parameter::set_requires_grad(bool requires_grad) const {
  if (!slot_) throw Error(ErrorCode::illegal_dimension, "nn::Parameter: empty handle");
  slot_->requires_grad = requires_grad;
}

const Tensor& Parameter::value() const {
  if (!slot_) throw Error(ErrorCode::illegal_dimension, "nn::Parameter: empty handle");
  return slot_->handle;
}

DType Parameter::dtype() const { return value().dtype(); }

void Parameter::hold(const Tensor& pending) const { slot_->variable->set(pending); }

void Parameter::store(Tensor v) const {
  // A node of its own, sharing the values' memory: the value given (another parameter's, a
  // user's tensor) is not tied to this parameter, and an in-place step leaves it alone.
  v = detach(v);
  if (!slot_->buffer) v.watch();
  slot_->current().zero_grad();
  slot_->variable->set(v);
}

void Parameter::check_shape(const Tensor& value, const char* op) const {
  if (!slot_) throw Error(ErrorCode::illegal_dimension, "nn::Parameter: empty handle");
  if (!value.defined() || value.shape() != slot_->current().shape())
    throw Error(ErrorCode::incompatible_shapes,
                std::string("nn::Parameter::") + op + ": parameter '" + slot_->name +
                    "' has shape " + shape_to_string(slot_->current().shape()) +
                    ", the new value " +
                    (value.defined() ? shape_to_string(value.shape()) : std::string("is empty")));
}

Tensor Parameter::on_own_device(const Tensor& value) const {
  const Tensor& now = slot_->current();
  if (now.is_placed()) {
    if (value.is_placed() && value.device() == now.device()) return value;
    return value.detach().to(now.device());
  }
  if (!value.is_placed()) return value;
  Tensor unplaced = value.detach();  // a new leaf of the same values, on no device
  unplaced.node()->home.reset();
  return unplaced;
}

void Parameter::set(const Tensor& value) const {
  check_shape(value, "set");
  const DType own = slot_->current().dtype();
  if (value.dtype() != own)
    throw Error(ErrorCode::wrong_type,
                "nn::Parameter::set: parameter '" + slot_->name + "' is " + type_name(own) +
                    ", the new value " + type_name(value.dtype()) +
                    " (convert the value, copy_ it, or change the module's type with to(dtype))");
  store(on_own_device(value));
}

void Parameter::copy_(const Tensor& value) const {
  check_shape(value, "copy_");
  const DType own = slot_->current().dtype();
  store(on_own_device(value.dtype() == own ? value : convert(value, own)));
}

void Parameter::to(const Device& device) const {
  if (!slot_) throw Error(ErrorCode::illegal_dimension, "nn::Parameter: empty handle");
  const Tensor& now = slot_->current();
  if (now.is_placed() && now.device() == device) return;
  store(now.detach().to(device));
}

void Parameter::to(DType dtype) const {
  if (!slot_) throw Error(ErrorCode::illegal_dimension, "nn::Parameter: empty handle");
  if (!is_float(dtype))
    throw Error(ErrorCode::wrong_type, "nn::Parameter::to: parameter '" + slot_->name +
                                           "' cannot become " + type_name(dtype) +
                                           " (parameters are floating point)");
  const Tensor& now = slot_->current();
  if (now.dtype() == dtype) return;
  store(convert(now, dtype));
}

}  // namespace kiln::nn
