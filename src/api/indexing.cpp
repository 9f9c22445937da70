// Gather and scatter by index tensors; Flint's index/index_set and the PyTorch-style forms are
// all built on the two primitives gather and scatter_add.
#include "api/builder.hpp"
#include "graph/values.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"

namespace kiln {

using detail::Op;

namespace {

void check_index_type(std::string_view op, const Tensor& indices) {
  if (!is_integer(indices.dtype()))
    detail::fail(ErrorCode::wrong_type, op,
                 std::string("indices must be an integer tensor, got ") +
                     dtype_name(indices.dtype()) + " " + shape_to_string(indices.shape()));
}

// The buffer holding every value `indices` can show, when it is computed already: its own
// result, or that of the node under a chain of reshapes and broadcasts (which drop no values).
const detail::Buffer* known_values(const Tensor& indices) {
  const detail::Node* n = indices.node().get();
  while (!detail::has_values(*n) && (n->op == Op::reshape || n->op == Op::broadcast))
    n = n->inputs[0].get();
  return detail::has_values(*n) ? &detail::host_values(*n) : nullptr;
}

// Indices that are already known are checked when the node is built.
void check_known_indices(std::string_view op, const Tensor& indices, std::int64_t size,
                         bool negatives_dropped) {
  const detail::Buffer* values = known_values(indices);
  if (values == nullptr) return;
  for (std::int64_t i = 0; i < values->numel(); ++i) {
    const auto v = values->get<std::int64_t>(i);
    if (v >= size || (v < 0 && !negatives_dropped))
      detail::fail(ErrorCode::invalid_select, op,
                   "index " + std::to_string(v) + " out of range for a dimension of size " +
                       std::to_string(size));
  }
}

// `indices` [p..., J] spread over the trailing dimensions `rest` of the data: [p..., J, rest...].
Tensor spread(const Tensor& indices, const Shape& full) {
  return indices.shape() == full ? indices : broadcast_to(indices, full, /*inverse=*/true);
}

}  // namespace

Tensor gather(const Tensor& a, int axis, const Tensor& indices) {
  detail::node_of(a, "gather");
  detail::node_of(indices, "gather");
  check_index_type("gather", indices);
  const int ax = detail::normalize_axis("gather", axis, a.rank(), a.shape());
  if (indices.rank() != a.rank())
    detail::fail(ErrorCode::illegal_dimensionality, "gather",
                 "indices " + shape_to_string(indices.shape()) + " need the rank of " +
                     shape_to_string(a.shape()));
  for (int d = 0; d < a.rank(); ++d)
    if (d != ax && indices.shape()[d] > a.shape()[d])
      detail::fail(ErrorCode::incompatible_shapes, "gather",
                   "indices " + shape_to_string(indices.shape()) + " larger than " +
                       shape_to_string(a.shape()) + " outside axis " + std::to_string(ax));
  check_known_indices("gather", indices, a.shape()[ax], false);
  detail::Attrs attrs;
  attrs.axes = {ax};
  return detail::make_node(Op::gather, a.dtype(), indices.shape(), {a.node(), indices.node()},
                           std::move(attrs));
}

namespace {
Tensor scatter_node(std::string_view op, const Tensor& a, int axis, const Tensor& indices,
                    const Tensor& src, bool drop_negative) {
  detail::node_of(a, op);
  detail::node_of(indices, op);
  detail::node_of(src, op);
  check_index_type(op, indices);
  const int ax = detail::normalize_axis(op, axis, a.rank(), a.shape());
  if (indices.rank() != a.rank() || src.rank() != a.rank())
    detail::fail(ErrorCode::illegal_dimensionality, op,
                 "indices " + shape_to_string(indices.shape()) + " and source " +
                     shape_to_string(src.shape()) + " need the rank of " +
                     shape_to_string(a.shape()));
  for (int d = 0; d < a.rank(); ++d)
    if (indices.shape()[d] > src.shape()[d] || (d != ax && indices.shape()[d] > a.shape()[d]))
      detail::fail(ErrorCode::incompatible_shapes, op,
                   "indices " + shape_to_string(indices.shape()) + " do not fit source " +
                       shape_to_string(src.shape()) + " and target " +
                       shape_to_string(a.shape()));
  check_known_indices(op, indices, a.shape()[ax], drop_negative);
  detail::Attrs attrs;
  attrs.axes = {ax};
  attrs.drop_negative = drop_negative;
  return detail::make_node(Op::scatter_add, promote(a.dtype(), src.dtype()), a.shape(),
                           {a.node(), indices.node(), src.node()}, std::move(attrs));
}
}  // namespace

Tensor scatter_add(const Tensor& a, int axis, const Tensor& indices, const Tensor& src) {
  return scatter_node("scatter_add", a, axis, indices, src, false);
}

namespace {
// How many elements scatter sends to each element of `a` (i32, a's shape).
Tensor scatter_hits(const Tensor& a, int axis, const Tensor& indices) {
  return scatter_node("scatter", zeros(a.shape(), DType::i32), axis, indices,
                      ones(indices.shape(), DType::i32), false);
}
}  // namespace

Tensor scatter(const Tensor& a, int axis, const Tensor& indices, const Tensor& src) {
  detail::node_of(a, "scatter");
  detail::node_of(src, "scatter");
  // Integers are summed in i64, so that elements named several times cannot overflow.
  const bool exact = is_float(a.dtype()) || is_complex(a.dtype());
  const DType sum_type = exact ? a.dtype() : DType::i64;
  const Tensor values = src.dtype() == sum_type ? src : convert(src, sum_type);
  const Tensor sums = scatter_node("scatter", zeros(a.shape(), sum_type), axis, indices,
                                   values, false);
  const Tensor hits = scatter_hits(a, axis, indices);
  // An element named more than once takes the mean of what it is sent (deterministic, where
  // PyTorch leaves the choice open); named once, its value.
  const Tensor divisor = maximum(hits, ones(a.shape(), DType::i32));
  const Tensor merged = exact ? sums / convert(divisor, a.dtype())
                              : convert(div(sums, convert(divisor, DType::i64), "floor"),
                                        a.dtype());
  return where(hits > 0, merged, a);
}

Tensor scatter(const Tensor& a, int axis, const Tensor& indices, Scalar value) {
  detail::node_of(a, "scatter");
  // The value takes a's type, as PyTorch's.
  const Tensor filled = where(scatter_hits(a, axis, indices) > 0, value, a);
  return filled.dtype() == a.dtype() ? filled : convert(filled, a.dtype());
}

Tensor index(const Tensor& a, const Tensor& indices) {
  detail::node_of(a, "index");
  detail::node_of(indices, "index");
  const int d = indices.rank() - 1;
  bool prefix = d >= 0 && d < a.rank();
  for (int i = 0; prefix && i < d; ++i) prefix = indices.shape()[i] == a.shape()[i];
  if (!prefix)
    detail::fail(ErrorCode::incompatible_shapes, "index",
                 "indices " + shape_to_string(indices.shape()) +
                     " without their last dimension must be a prefix of " +
                     shape_to_string(a.shape()));
  Shape full = a.shape();
  full[d] = indices.shape()[d];
  return gather(a, d, spread(indices, full));
}

Tensor index_set(const Tensor& a, const Tensor& b, const Tensor& indices) {
  detail::node_of(a, "index_set");
  detail::node_of(b, "index_set");
  detail::node_of(indices, "index_set");
  const int d = indices.rank() - 1;
  bool fits = d >= 0 && d < b.rank() && a.rank() == b.rank();
  for (int i = 0; fits && i <= d; ++i) fits = indices.shape()[i] == b.shape()[i];
  for (int i = 0; fits && i < a.rank(); ++i) fits = i == d || a.shape()[i] == b.shape()[i];
  if (!fits)
    detail::fail(ErrorCode::incompatible_shapes, "index_set",
                 "indices " + shape_to_string(indices.shape()) + " must be a prefix of " +
                     shape_to_string(b.shape()) + ", which must match " +
                     shape_to_string(a.shape()) + " outside dimension " + std::to_string(d));
  const Tensor where_to = spread(indices, b.shape());
  const Tensor sums = scatter_node("index_set", zeros(a.shape(), promote(a.dtype(), b.dtype())),
                                   d, where_to, b, true);
  const Tensor hits =
      scatter_node("index_set", zeros(a.shape(), DType::i32), d, where_to,
                   ones(b.shape(), DType::i32), true);
  return where(hits, sums, a);
}

Tensor index_select(const Tensor& a, int axis, const Tensor& indices) {
  return detail::as_called("index_select", {&a, &indices}, [&] {
    detail::node_of(a, "index_select");
    detail::node_of(indices, "index_select");
    const int ax = detail::normalize_axis("index_select", axis, a.rank(), a.shape());
    if (indices.rank() != 1)
      detail::fail(ErrorCode::illegal_dimensionality, "index_select",
                   "indices must be 1-D, got " + shape_to_string(indices.shape()));
    Shape column(a.rank(), 1), full = a.shape();
    column[ax] = full[ax] = indices.shape()[0];
    return gather(a, ax, broadcast_to(reshape(indices, column), full));
  });
}

Tensor one_hot(const Tensor& labels, std::int64_t classes, DType dtype) {
  detail::node_of(labels, "one_hot");
  check_index_type("one_hot", labels);
  if (classes < 0)
    detail::fail(ErrorCode::illegal_dimension, "one_hot",
                 "negative class count " + std::to_string(classes));
  return convert(equal(unsqueeze(labels, -1), arange(classes)), dtype);
}

}  // namespace kiln
