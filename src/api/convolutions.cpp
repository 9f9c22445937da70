// The convolutions of other ranks, built on conv2d so that they share its kernels and gradients:
// conv1d is conv2d over a height of 1, conv3d folds its depth taps into conv2d's channels.
#include "api/builder.hpp"
#include "graph/shape_math.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/ops.hpp"
#include "kiln/windows.hpp"

namespace kiln {

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, Conv1dOptions o) {
  detail::node_of(input, "conv1d");
  detail::node_of(weight, "conv1d");
  const int rank = input.rank();
  if ((rank != 2 && rank != 3) || weight.rank() != 3)
    detail::fail(ErrorCode::illegal_dimensionality, "conv1d",
                 "input " + shape_to_string(input.shape()) + " and weight " +
                     shape_to_string(weight.shape()) +
                     " (input [N, C, W] or [C, W] and weight [O, C / groups, K] expected)");
  Conv2dOptions o2;
  o2.stride = {1, o.stride};
  o2.padding = {0, o.padding};
  o2.dilation = {1, o.dilation};
  o2.groups = o.groups;
  const Tensor out = conv2d(unsqueeze(input, -2), unsqueeze(weight, 2), bias, o2);
  return squeeze(out, -2);
}

Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, Conv3dOptions o) {
  constexpr std::string_view op = "conv3d";
  detail::node_of(input, op);
  detail::node_of(weight, op);
  if ((input.rank() != 4 && input.rank() != 5) || weight.rank() != 5)
    detail::fail(ErrorCode::illegal_dimensionality, op,
                 "input " + shape_to_string(input.shape()) + " and weight " +
                     shape_to_string(weight.shape()) +
                     " (input [N, C, D, H, W] or [C, D, H, W] and weight [O, C / groups, kD, kH, "
                     "kW] expected)");
  const Tensor x = input.rank() == 4 ? unsqueeze(input, 0) : input;
  const Shape& xs = x.shape();
  const Shape& ws = weight.shape();
  const std::int64_t depth = xs[2], taps = ws[2];
  if (o.groups < 1 || (o.groups > 1 && o.groups > xs[1]) || xs[1] % o.groups != 0 ||
      ws[1] != xs[1] / o.groups || ws[0] % o.groups != 0)
    detail::fail(ErrorCode::incompatible_shapes, op,
                 "weight " + shape_to_string(ws) + " does not fit input " +
                     shape_to_string(input.shape()) + " with " + std::to_string(o.groups) +
                     " group(s) (weight [O, C / groups, kD, kH, kW] expected, O and C divisible "
                     "by groups)");
  const std::int64_t step = o.stride[0], pad_d = o.padding[0], dil = o.dilation[0];
  if (step < 1 || dil < 1 || pad_d < 0)
    detail::fail(ErrorCode::invalid_select, op,
                 "stride and dilation must be positive and padding not negative");
  const detail::Checked extent =
      taps < 1 ? std::nullopt : detail::checked_add(detail::checked_mul(taps - 1, dil), 1);
  const detail::Checked padded = detail::checked_add(depth, detail::checked_mul(2, pad_d));
  if (!extent || !padded || *padded < *extent)
    detail::fail(ErrorCode::invalid_select, op,
                 "depth window " + std::to_string(taps) + " (dilation " + std::to_string(dil) +
                     ", padding " + std::to_string(pad_d) + ") does not fit the padded input " +
                     shape_to_string(input.shape()));
  const std::int64_t out_depth = (*padded - *extent) / step + 1;
  if (!detail::checked_numel({xs[0], out_depth, xs[1], taps, xs[3], xs[4]}))
    detail::fail(ErrorCode::out_of_memory, op,
                 "the " + std::to_string(taps) + " depth taps of input " +
                     shape_to_string(input.shape()) + " are too large");
  // Tap k of output plane d reads input plane d * step + k * dil of the padded input: the taps'
  // planes, stacked after the channels, become kD channels per input channel, in the order of
  // the weight's [C / groups, kD] dimensions.
  const Tensor source =
      pad_d == 0 ? x : pad(x, {0, 0, pad_d, 0, 0}, {0, 0, pad_d, 0, 0}, 0);
  std::vector<Tensor> planes;
  planes.reserve(static_cast<std::size_t>(taps));
  for (std::int64_t k = 0; k < taps; ++k)
    planes.push_back(slice_axis(source, 2, k * dil, k * dil + (out_depth - 1) * step + 1, step));
  const Tensor stacked = permute(stack(planes, 2), {0, 3, 1, 2, 4, 5});  // [N, oD, C, kD, H, W]
  const Tensor folded = reshape(stacked, {xs[0] * out_depth, xs[1] * taps, xs[3], xs[4]});
  Conv2dOptions o2;
  o2.stride = {o.stride[1], o.stride[2]};
  o2.padding = {o.padding[1], o.padding[2]};
  o2.dilation = {o.dilation[1], o.dilation[2]};
  o2.groups = o.groups;
  const Tensor planar =
      conv2d(folded, reshape(weight, {ws[0], ws[1] * taps, ws[3], ws[4]}), Tensor(), o2);
  const Shape& ps = planar.shape();  // [N * oD, O, oH, oW]
  Tensor out = permute(reshape(planar, {xs[0], out_depth, ps[1], ps[2], ps[3]}), {0, 2, 1, 3, 4});
  if (bias.defined()) {
    if (bias.shape() != Shape{ws[0]})
      detail::fail(ErrorCode::incompatible_shapes, op,
                   "bias " + shape_to_string(bias.shape()) + " for " + std::to_string(ws[0]) +
                       " output channels");
    out = out + reshape(bias, {ws[0], 1, 1, 1});
  }
  return input.rank() == 4 ? squeeze(out, 0) : out;
}

}  // namespace kiln
