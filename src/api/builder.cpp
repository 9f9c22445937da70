#include "api/builder.hpp"

#include <algorithm>
#include <limits>

#include "exec/evaluate.hpp"
#include "kiln/autodiff.hpp"

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
  for (auto d : shape)
    if (d == 0) return;  // an empty tensor of any shape is fine
  // Element counts stay below 2^62 so that byte sizes and index arithmetic cannot overflow.
  constexpr std::int64_t limit = std::int64_t{1} << 62;
  std::int64_t n = 1;
  for (auto d : shape) {
    if (n > limit / d)
      fail(ErrorCode::out_of_memory, op, "shape " + shape_str(shape) + " has too many elements");
    n *= d;
  }
}
}  // namespace

namespace {

// Graphs built in a loop (x = x + y, a million times) must not grow without bound: a node this
// far from the nearest results is evaluated when it is built and becomes a leaf, releasing the
// graph below it. Inside a gradient context graphs are kept whole, since gradients need them.
constexpr std::uint32_t kAutoEvaluateDepth = 4096;

Tensor finish(NodePtr node) {
  std::uint32_t depth = 0;
  for (const auto& in : node->inputs) depth = std::max(depth, in->result ? 0u : in->depth);
  node->depth = depth + 1;
  node->in_gradient_context = gradient_context_active();
  Tensor t(std::move(node));
  Node& n = *t.node();
  if (n.depth > kAutoEvaluateDepth && !n.in_gradient_context) evaluate(n);  // and released
  return t;
}

}  // namespace

Tensor make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs, Attrs attrs) {
  check_shape(op_info(op).name, shape);
  return finish(
      std::make_shared<Node>(op, dtype, std::move(shape), std::move(inputs), std::move(attrs)));
}

Tensor make_view(Op op, const Tensor& input, Shape shape, Attrs attrs,
                 const std::function<ViewMap(const ViewMap&)>& fold) {
  const NodePtr& in = node_of(input, op_info(op).name);
  check_shape(op_info(op).name, shape);
  auto node = std::make_shared<Node>(op, in->dtype, std::move(shape), std::vector<NodePtr>{in},
                                     std::move(attrs));
  // Read through the input's own map unless the input holds its values already.
  const bool compose = in->is_view() && !in->result;
  node->view_base = compose ? in->view_base : in;
  node->view = fold(compose ? in->view : ViewMap::identity(in->shape));
  return finish(std::move(node));
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
