// cumsum and cumprod: inclusive scans along one axis, one `scan` node each.
#include "api/builder.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {
Tensor scan(detail::Op op, const Tensor& x, int dim) {
  const std::string_view name = detail::op_info(op).name;
  detail::node_of(x, name);
  // Counts, and running sums and products of the 8- and 16-bit integers, are i64, as libtorch's.
  if (is_bool(x.dtype()) || is_narrow_integer(x.dtype())) return scan(op, convert(x, DType::i64), dim);
  if (x.rank() == 0) {  // as libtorch: a 0-d tensor scans as one element along dim 0 or -1
    detail::normalize_axis(name, dim, 1, x.shape());
    return reshape(scan(op, reshape(x, {1}), 0), {});
  }
  const int ax = detail::normalize_axis(name, dim, x.rank(), x.shape());
  detail::Attrs attrs;
  attrs.axes = {ax};
  return detail::make_node(op, detail::result_type(op, x.dtype()), x.shape(), {x.node()},
                           std::move(attrs));
}
}  // namespace

Tensor cumsum(const Tensor& x, int dim) { return scan(detail::Op::cumsum, x, dim); }
Tensor cumprod(const Tensor& x, int dim) { return scan(detail::Op::cumprod, x, dim); }

}  // namespace kiln
