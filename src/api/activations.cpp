// Softmax family, cross-entropy and GELU, written with the max subtracted first so that large
// inputs never overflow.
#include <cmath>
#include <limits>
#include <numbers>

#include "api/builder.hpp"
#include "kiln/activations.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {
// The max over `axis` (kept), with infinite maxima replaced by 0 so that rows of -inf or +inf
// do not turn into NaN when the max is subtracted.
Tensor stable_shift(const Tensor& a, int axis) {
  const Tensor m = max(a, {axis}, true);
  return where(less(abs(m), std::numeric_limits<double>::infinity()), m, zeros({}, m.dtype()));
}
}  // namespace

namespace {
Tensor normalised(detail::Op op, const Tensor& a, int axis) {
  const std::string_view name = detail::op_info(op).name;
  detail::node_of(a, name);
  const int ax = detail::normalize_axis(name, axis, a.rank(), a.shape());
  detail::Attrs attrs;
  attrs.axes = {ax};
  const Tensor x = detail::float_operand(op, a);
  return detail::make_node(op, detail::result_type(op, x.dtype()), x.shape(), {x.node()},
                           std::move(attrs));
}
}  // namespace

Tensor softmax(const Tensor& a, int axis) { return normalised(detail::Op::softmax, a, axis); }

Tensor log_softmax(const Tensor& a, int axis) {
  return normalised(detail::Op::log_softmax, a, axis);
}

Tensor logsumexp(const Tensor& a, int axis, bool keepdims) {
  detail::node_of(a, "logsumexp");
  const int ax = detail::normalize_axis("logsumexp", axis, a.rank(), a.shape());
  if (a.shape()[ax] == 0) {  // no maximum to shift by: the empty sum gives log(0) = -inf
    const Tensor r = log(sum(exp(a), {ax}, true));
    return keepdims ? r : squeeze(r, ax);
  }
  const Tensor m = stable_shift(a, axis);
  const Tensor r = log(sum(exp(a - m), {axis}, true)) + m;
  return keepdims ? r : squeeze(r, axis);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  return detail::as_called("cross_entropy", {&logits, &labels}, [&] {
    detail::node_of(logits, "cross_entropy");
    detail::node_of(labels, "cross_entropy");
    if (logits.rank() != 2 || labels.rank() != 1 || labels.shape()[0] != logits.shape()[0])
      detail::fail(ErrorCode::incompatible_shapes, "cross_entropy",
                   "needs logits [N, C] and labels [N], got " + shape_to_string(logits.shape()) +
                       " and " + shape_to_string(labels.shape()));
    const Tensor picked = index(log_softmax(logits, 1), unsqueeze(labels, 1));
    return -mean(picked);
  });
}

Tensor gelu(const Tensor& a) {
  detail::node_of(a, "gelu");
  const Tensor x = detail::float_operand(a);
  const DType t = x.dtype();
  const Tensor half = full({}, 0.5, t), one = full({}, 1, t);
  return half * x * (one + erf(x * full({}, std::numbers::sqrt2 / 2, t)));
}

Tensor silu(const Tensor& a) {
  detail::node_of(a, "silu");
  const Tensor x = detail::float_operand(a);
  return x * sigmoid(x);
}

Tensor leaky_relu(const Tensor& a, double negative_slope) {
  detail::node_of(a, "leaky_relu");
  const Tensor x = detail::float_operand(a);
  return where(greater_equal(x, 0.0), x, negative_slope * x);
}

}  // namespace kiln
