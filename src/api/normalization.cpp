// layer_norm and group_norm as compositions of reductions and elementwise ops.
#include "kiln/normalization.hpp"

#include <numeric>
#include <string>
#include <vector>

#include "api/builder.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {

// (x - mean) / sqrt(var + eps) over `axes` (kept), with the biased variance.
Tensor standardise(const Tensor& x, const std::vector<int>& axes, double eps) {
  const Tensor centred = x - mean(x, axes, true);
  return centred / sqrt(mean(square(centred), axes, true) + eps);
}

void check_affine(std::string_view op, const Tensor& t, const Shape& want, const char* what) {
  if (t.defined() && t.shape() != want)
    detail::fail(ErrorCode::incompatible_shapes, op,
                 std::string(what) + " " + shape_to_string(t.shape()) + " where " +
                     shape_to_string(want) + " is needed");
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  detail::node_of(x, "layer_norm");
  const Shape& s = x.shape();
  const std::size_t k = normalized_shape.size();
  if (k == 0 || k > s.size() ||
      !std::equal(normalized_shape.begin(), normalized_shape.end(),
                  s.end() - static_cast<std::ptrdiff_t>(k)))
    detail::fail(ErrorCode::incompatible_shapes, "layer_norm",
                 "normalized_shape " + shape_to_string(normalized_shape) +
                     " is not the end of the input's shape " + shape_to_string(s));
  check_affine("layer_norm", weight, normalized_shape, "weight");
  check_affine("layer_norm", bias, normalized_shape, "bias");
  const Tensor v = detail::float_operand(x);
  std::vector<int> axes(k);
  std::iota(axes.begin(), axes.end(), static_cast<int>(s.size() - k));
  Tensor y = standardise(v, axes, eps);
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}

Tensor group_norm(const Tensor& x, std::int64_t groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  detail::node_of(x, "group_norm");
  const Shape& s = x.shape();
  if (s.size() < 2 || groups < 1 || s[1] % groups != 0)
    detail::fail(ErrorCode::incompatible_shapes, "group_norm",
                 "needs an input [N, C, ...] with C a multiple of groups " +
                     std::to_string(groups) + ", got " + shape_to_string(s));
  check_affine("group_norm", weight, {s[1]}, "weight");
  check_affine("group_norm", bias, {s[1]}, "bias");
  const Tensor v = detail::float_operand(x);
  // [N, groups, C / groups * rest]: each group of each sample is one row.
  const Tensor rows = reshape(v, {s[0], groups, -1});
  Tensor y = reshape(standardise(rows, {2}, eps), s);
  Shape per_channel(s.size() - 1, 1);  // [C, 1, ...] broadcasts over the rest
  per_channel[0] = s[1];
  if (weight.defined()) y = y * reshape(weight, per_channel);
  if (bias.defined()) y = y + reshape(bias, per_channel);
  return y;
}

}  // namespace kiln
