// sort, argsort and topk. One primitive, argsort (a stable sort of each line along an axis, NaN
// as the largest value); the values are gathered with its indices, so their gradient is
// gather's (g scattered back to the indices) and needs no rule of its own. topk takes the first
// k of the sorted line.
#include <string>

#include "api/builder.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"

namespace kiln {

Tensor argsort(const Tensor& x, int dim, bool descending) {
  detail::node_of(x, "argsort");
  if (x.rank() == 0) {  // as libtorch: one element along dim 0 or -1
    detail::normalize_axis("argsort", dim, 1, x.shape());
    return reshape(argsort(reshape(x, {1}), 0, descending), {});
  }
  const int ax = detail::normalize_axis("argsort", dim, x.rank(), x.shape());
  detail::Attrs attrs;
  attrs.axes = {ax};
  attrs.descending = descending;
  return detail::make_node(detail::Op::argsort, DType::i64, x.shape(), {x.node()},
                           std::move(attrs));
}

ValuesIndices sort(const Tensor& x, int dim, bool descending) {
  detail::node_of(x, "sort");
  const Tensor indices = argsort(x, dim, descending);
  if (x.rank() == 0) return {x, indices};
  return {gather(x, dim, indices), indices};
}

ValuesIndices topk(const Tensor& x, std::int64_t k, int dim, bool largest, bool sorted) {
  (void)sorted;  // the k values always come sorted (libtorch leaves the order open when false)
  detail::node_of(x, "topk");
  const int rank = x.rank() == 0 ? 1 : x.rank();
  const int ax = detail::normalize_axis("topk", dim, rank, x.shape());
  const std::int64_t size = x.rank() == 0 ? 1 : x.shape()[ax];
  if (k < 0 || k > size)
    detail::fail(ErrorCode::invalid_select, "topk",
                 "k = " + std::to_string(k) + " out of range [0, " + std::to_string(size) +
                     "] for dimension " + std::to_string(ax) + " of shape " +
                     shape_to_string(x.shape()));
  if (x.rank() == 0) {
    const ValuesIndices one = topk(reshape(x, {1}), k, 0, largest, sorted);
    if (k == 0) return one;  // nothing to take: the empty [0] results
    return {reshape(one.values, {}), reshape(one.indices, {})};
  }
  const Tensor indices = slice_axis(argsort(x, ax, largest), ax, 0, k);
  return {gather(x, ax, indices), indices};
}

}  // namespace kiln
