// Reductions over any set of axes, with keepdims as a reshape of the result.
#include <algorithm>

#include "api/builder.hpp"
#include "api/flint_rules.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"

namespace kiln {

using detail::Op;

namespace {

Tensor reduce(Op op, const Tensor& a, std::vector<int> axes, bool keepdims,
              bool flint_ties = false) {
  const std::string_view name = detail::op_info(op).name;
  detail::node_of(a, name);
  if (detail::op_info(op).type_rule == detail::TypeRule::float_valued &&
      (is_integer(a.dtype()) || is_bool(a.dtype())))
    return reduce(op, detail::float_operand(a), std::move(axes), keepdims);
  // Sums and products of bool and of the 8- and 16-bit integers are i64, as libtorch's (the graph's
  // own sum of bool is `any`).
  if ((is_bool(a.dtype()) || is_narrow_integer(a.dtype())) && (op == Op::sum || op == Op::prod))
    return reduce(op, convert(a, DType::i64), std::move(axes), keepdims);
  const int rank = a.rank();
  if (axes.empty())
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  for (int& ax : axes) ax = detail::normalize_axis(name, ax, rank, a.shape());
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    detail::fail(ErrorCode::illegal_dimension, name,
                 "an axis appears twice for shape " + shape_to_string(a.shape()));
  const bool needs_elements = op == Op::min || op == Op::max || op == Op::argmax ||
                              op == Op::argmin;
  Shape shape, kept = a.shape();
  for (int d = 0; d < rank; ++d) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (reduced && needs_elements && a.shape()[d] == 0)
      detail::fail(ErrorCode::incompatible_shapes, name,
                   "cannot reduce the empty dimension " + std::to_string(d) + " of " +
                       shape_to_string(a.shape()));
    if (reduced) kept[d] = 1;
    else shape.push_back(a.shape()[d]);
  }
  // Axes that are not adjacent are reduced one adjacent run at a time, the last run first (so
  // the earlier axis numbers stay valid): every node then reduces one block of axes, which the
  // executors handle fastest. The result is the same (a mean of equal-sized means is the mean).
  std::size_t run = axes.empty() ? 0 : axes.size() - 1;
  while (run > 0 && axes[run - 1] + 1 == axes[run]) --run;
  Tensor source = a;
  if (run > 0) {
    source = reduce(op, a, {axes.begin() + static_cast<std::ptrdiff_t>(run), axes.end()}, false,
                    flint_ties);
    axes.resize(run);
  }
  detail::Attrs attrs;
  attrs.axes.assign(axes.begin(), axes.end());
  attrs.flint_ties = flint_ties;
  Tensor r = detail::make_node(op, detail::result_type(op, source.dtype()), std::move(shape),
                               {source.node()}, std::move(attrs));
  return keepdims ? reshape(r, kept) : r;
}

}  // namespace

Tensor detail::flint_reduce(Op op, const Tensor& a, int axis) {
  return reduce(op, a, {axis}, false, op == Op::min || op == Op::max);
}

Tensor sum(const Tensor& a, std::vector<int> axes, bool keepdims) {
  return reduce(Op::sum, a, std::move(axes), keepdims);
}
Tensor prod(const Tensor& a, std::vector<int> axes, bool keepdims) {
  return reduce(Op::prod, a, std::move(axes), keepdims);
}
Tensor min(const Tensor& a, std::vector<int> axes, bool keepdims) {
  return reduce(Op::min, a, std::move(axes), keepdims);
}
Tensor max(const Tensor& a, std::vector<int> axes, bool keepdims) {
  return reduce(Op::max, a, std::move(axes), keepdims);
}
Tensor mean(const Tensor& a, std::vector<int> axes, bool keepdims) {
  return reduce(Op::mean, a, std::move(axes), keepdims);
}
Tensor argmax(const Tensor& a, int axis, bool keepdims) {
  return reduce(Op::argmax, a, {axis}, keepdims);
}
Tensor argmin(const Tensor& a, int axis, bool keepdims) {
  return reduce(Op::argmin, a, {axis}, keepdims);
}
Tensor min(const Tensor& a, std::initializer_list<int> axes, bool keepdims) {
  return min(a, std::vector<int>(axes), keepdims);
}
Tensor max(const Tensor& a, std::initializer_list<int> axes, bool keepdims) {
  return max(a, std::vector<int>(axes), keepdims);
}
namespace {
// The values at the indices (gathered, as libtorch's gradient goes to the index it returns, not
// shared among ties).
ValuesIndices at_indices(const Tensor& a, int dim, bool keepdim, const Tensor& indices) {
  const int axis = detail::normalize_axis("max", dim, a.rank(), a.shape());
  const Tensor kept = keepdim ? indices : unsqueeze(indices, axis);
  const Tensor values = gather(a, axis, kept);
  return {keepdim ? values : squeeze(values, axis), indices};
}
}  // namespace
ValuesIndices min(const Tensor& a, int dim, bool keepdim) {
  return at_indices(a, dim, keepdim, argmin(a, dim, keepdim));
}
ValuesIndices max(const Tensor& a, int dim, bool keepdim) {
  return at_indices(a, dim, keepdim, argmax(a, dim, keepdim));
}
Tensor argmax(const Tensor& a) { return argmax(flatten(a), 0); }
Tensor argmin(const Tensor& a) { return argmin(flatten(a), 0); }

}  // namespace kiln
