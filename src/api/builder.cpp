#include "api/builder.hpp"

#include <algorithm>
#include <limits>

#include "exec/evaluate.hpp"
#include "graph/gradient_mode.hpp"
#include "graph/graph_lock.hpp"
#include "graph/shape_math.hpp"
#include "graph/values.hpp"
#include "kiln/autodiff.hpp"
#include "kiln/eager_mode.hpp"
#include "kiln/executor.hpp"
#include "kiln/ops.hpp"

namespace kiln::detail {

void fail(ErrorCode code, std::string_view op, const std::string& what) {
  throw Error(code, std::string(op) + ": " + what);
}

std::string shape_str(const Shape& s) { return shape_to_string(s); }

const NodePtr& node_of(const Tensor& t, std::string_view op) {
  if (!t.defined()) fail(ErrorCode::invalid_select, op, "operand is an empty tensor handle");
  return t.node();
}

namespace {
void check_shape(std::string_view op, const Shape& shape) {
  for (auto d : shape)
    if (d < 0) fail(ErrorCode::illegal_dimension, op, "negative size in shape " + shape_str(shape));
  // Element counts stay below 2^62 so that byte sizes and index arithmetic cannot overflow; the
  // other sizes of an empty shape count too, since its strides multiply them (shape_math.hpp).
  if (!checked_numel(shape))
    fail(ErrorCode::out_of_memory, op, "shape " + shape_str(shape) + " has too many elements");
}

// The operands the op's type rule (Operands) applies to: the values it computes with, not
// conditions or indices. Sources are checked by the type they are built with.
void check_operand_types(Op op, DType dtype, const std::vector<NodePtr>& inputs) {
  const OpInfo& info = op_info(op);
  if (info.operands == Operands::any) return;
  const char* wanted = info.operands == Operands::integer   ? "integer"
                       : info.operands == Operands::numeric ? "numeric (not bool)"
                       : info.operands == Operands::real    ? "real (not complex)"
                                                            : "real float";
  if (inputs.empty()) {
    if (!accepts(op, dtype))
      fail(ErrorCode::wrong_type, info.name,
           std::string("makes ") + wanted + " tensors only, not " + dtype_name(dtype));
    return;
  }
  const std::size_t first = info.kind == OpKind::ternary ? 1 : 0;
  const std::size_t count = info.kind == OpKind::binary || info.kind == OpKind::ternary ? 2 : 1;
  bool ok = true;
  std::string operands;
  for (std::size_t i = first; i < first + count && i < inputs.size(); ++i) {
    ok = ok && accepts(op, inputs[i]->dtype);
    operands += (operands.empty() ? "" : " and ") + std::string(dtype_name(inputs[i]->dtype)) +
                " " + shape_str(inputs[i]->shape);
  }
  if (!ok) fail(ErrorCode::wrong_type, info.name, std::string("needs ") + wanted +
                                                       " operands, got " + operands);
}

}  // namespace

namespace {

// Graphs built in a loop (x = x + y, a million times) must not grow without bound: a node this
// far from the nearest results is evaluated when it is built and becomes a leaf, releasing the
// graph below it. Inside a gradient context graphs are kept whole, since gradients need them.
constexpr std::uint32_t kAutoEvaluateDepth = 4096;

// initial-exec: read for every node built (see graph_lock.cpp).
thread_local int auto_evaluation_pauses __attribute__((tls_model("initial-exec"))) = 0;
thread_local const char* called_op __attribute__((tls_model("initial-exec"))) = nullptr;

// An op of operands placed on two different executors: computation follows its inputs, so it
// has nowhere to run.
[[noreturn]] void fail_mixed_devices(const Node& node, const Node& a, const Node& b) {
  auto where = [](const Node& n) {
    return std::string(dtype_name(n.dtype)) + " " + shape_str(n.shape) + " on " +
           std::string(n.home->name());
  };
  fail(ErrorCode::device_error, node.info().name,
       "operands live on different devices: " + where(a) + " and " + where(b) +
           " (move one with .to(device) first)");
}

// Computes the node's depth and device and wraps it in a handle; the caller holds a
// GraphReadLock.
Tensor finish(NodePtr node) {
  std::uint32_t depth = 0;
  bool symbolic = node->op == Op::store && node->attrs.store_kind == StoreKind::placeholder;
  const Node* placed = nullptr;
  for (const auto& in : node->inputs) {
    depth = std::max(depth, has_values(*in) ? 0u : in->depth);
    symbolic = symbolic || in->symbolic;
    if (in->home == nullptr) continue;
    if (placed == nullptr) placed = in.get();
    else if (in->home != placed->home) fail_mixed_devices(*node, *placed, *in);
  }
  if (placed != nullptr) node->home = placed->home;
  node->called_as = called_op;
  node->depth = depth + 1;
  node->symbolic = symbolic;
  node->in_gradient_context = gradient_context_active();
  return Tensor(std::move(node));
}

// Evaluates a node that grew too far from any results, and in eager mode every node that
// computes values (not views, nor a store, whose builder gives it values next). Outside the
// lock: evaluating takes it.
Tensor auto_evaluated(Tensor t) {
  Node& n = *t.node();
  const bool too_deep = n.depth > kAutoEvaluateDepth && !n.in_gradient_context;
  const bool eager = in_eager_mode() && !n.is_view() && n.op != Op::store;
  if ((too_deep || eager) && !n.symbolic && !auto_evaluation_paused())
    evaluate(n);  // and released
  return t;
}

}  // namespace

Tensor float_operand(const Tensor& a) {
  return is_integer(a.dtype()) || is_bool(a.dtype()) ? convert(a, default_dtype()) : a;
}

Tensor float_operand(Op op, const Tensor& a) {
  const OpInfo& info = op_info(op);
  return info.type_rule == TypeRule::float_valued || info.type_rule == TypeRule::to_real_float
             ? float_operand(a)
             : a;
}

namespace {
template <class... MaybeAttrs>
Tensor new_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs,
                MaybeAttrs&&... attrs) {
  check_shape(op_info(op).name, shape);
  check_operand_types(op, dtype, inputs);
  Tensor t;
  if (inputs.empty()) {
    // A leaf or source reads no shared node, so it needs no lock: a thread preparing data (a
    // DataLoader's) does not wait for an evaluation on another thread, nor hold that one up.
    t = finish(std::make_shared<Node>(op, dtype, std::move(shape), std::move(inputs),
                                      std::forward<MaybeAttrs>(attrs)...));
  } else {
    GraphReadLock lock;
    t = finish(std::make_shared<Node>(op, dtype, std::move(shape), std::move(inputs),
                                      std::forward<MaybeAttrs>(attrs)...));
  }
  return auto_evaluated(std::move(t));
}
}  // namespace

Tensor make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs, Attrs attrs) {
  return new_node(op, dtype, std::move(shape), std::move(inputs), std::move(attrs));
}

Tensor make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs) {
  return new_node(op, dtype, std::move(shape), std::move(inputs));
}

Tensor make_view(Op op, const Tensor& input, Shape shape, Attrs attrs,
                 const std::function<ViewMap(const ViewMap&)>& fold) {
  const NodePtr& in = node_of(input, op_info(op).name);
  check_shape(op_info(op).name, shape);
  Tensor t;
  {
    GraphReadLock lock;
    auto node = std::make_shared<Node>(op, in->dtype, std::move(shape), std::vector<NodePtr>{in},
                                       std::move(attrs));
    // Read through the input's own map unless the input holds its values already.
    const bool compose = in->is_view() && !has_values(*in);
    node->view_base = compose ? in->view_base : in;
    node->view = fold(compose ? in->view : ViewMap::identity(in->shape));
    t = finish(std::move(node));
  }
  return auto_evaluated(std::move(t));
}

CalledOp::CalledOp(const char* name) : outermost_(called_op == nullptr) {
  if (outermost_) called_op = name;
}
CalledOp::~CalledOp() {
  if (outermost_) called_op = nullptr;
}

void rethrow_as_called(const char* name, std::initializer_list<const Tensor*> operands) {
  try {
    throw;
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(std::string(name) + ":", 0) == 0) throw;
    std::string called = name;
    const char* separator = " of ";
    for (const Tensor* t : operands) {
      called += separator;
      called += t != nullptr && t->defined()
                    ? std::string(dtype_name(t->dtype())) + " " + shape_str(t->shape())
                    : std::string("<empty>");
      separator = " and ";
    }
    throw Error(e.code(), called + ": " + what);
  }
}

PauseAutoEvaluation::PauseAutoEvaluation() { ++auto_evaluation_pauses; }
PauseAutoEvaluation::~PauseAutoEvaluation() { --auto_evaluation_pauses; }
bool auto_evaluation_paused() { return auto_evaluation_pauses > 0; }

namespace {
// The range of a u8, i8 or i16 type.
std::pair<double, double> narrow_range(DType t) {
  return t == DType::u8 ? std::pair{0.0, 255.0}
         : t == DType::i8 ? std::pair{-128.0, 127.0}
                          : std::pair{-32768.0, 32767.0};
}
}  // namespace

Scalar fitting_value(std::string_view op, Scalar value, DType t) {
  if (!is_narrow_integer(t) || is_complex(value.dtype())) return value;
  const auto [lo, hi] = narrow_range(t);
  const double v = value.as<double>();  // a float value truncates toward zero
  if (!(v > lo - 1 && v < hi + 1))
    fail(ErrorCode::wrong_type, op,
         "the value " + value.to_string() + " does not fit in " + dtype_name(t) + " (" +
             Scalar(lo).cast(DType::i32).to_string() + " to " +
             Scalar(hi).cast(DType::i32).to_string() + ")");
  return value;
}

Scalar saturated_to(Scalar value, DType t) {
  if (!is_narrow_integer(t) || is_complex(value.dtype())) return value;
  const auto [lo, hi] = narrow_range(t);
  const double v = value.as<double>();
  if (v < lo) return Scalar(static_cast<std::int32_t>(lo));
  if (v > hi) return Scalar(static_cast<std::int32_t>(hi));
  return value;
}

int normalize_axis(std::string_view op, int axis, int rank, const Shape& shape) {
  if (axis < -rank || axis >= rank)
    fail(ErrorCode::illegal_dimension, op,
         "axis " + std::to_string(axis) + " out of range for shape " + shape_str(shape));
  return axis < 0 ? axis + rank : axis;
}

void check_arity(std::string_view op, std::size_t given, const Shape& shape, const char* what) {
  if (given != shape.size())
    fail(ErrorCode::illegal_dimensionality, op,
         std::string(what) + " has " + std::to_string(given) + " entries for shape " +
             shape_str(shape) + " of rank " + std::to_string(shape.size()));
}

}  // namespace kiln::detail
