/// @file
/// Sliding windows and what is built on them: convolution and pooling, in Flint's n-dimensional
/// form (no padding, the last dimension reduced completely) and in the NCHW form PyTorch users
/// know. A dimension of size n with window k and step s has floor((n - k) / s) + 1 windows.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

/// Every window of `size` (one entry per dimension of `a`) at every `steps` position, as a new
/// leading dimension: shape [windows, size...]. Windows are ordered with the innermost dimension
/// moving fastest. A view: nothing is copied. A window larger than `a` is an invalid_select error.
Tensor sliding_window(const Tensor& a, std::vector<std::int64_t> size,
                      std::vector<std::int64_t> steps);
/// The inverse placement: windows [count, size...] written back into a tensor of `shape`, with
/// overlapping elements summed and gaps left 0.
Tensor unslide_window(const Tensor& windows, Shape shape, std::vector<std::int64_t> steps);

/// Flint's convolve: `a` has n dimensions and its last one is reduced completely. A kernel of n
/// dimensions is one filter, with result shape [windows per dimension...] (n - 1 dimensions); a
/// kernel of n + 1 dimensions holds several filters (its first dimension), and the result gets
/// their index as last dimension. `steps` has n - 1 entries. No padding.
Tensor convolve(const Tensor& a, const Tensor& kernel, std::vector<std::int64_t> steps);

/// Flint's pooling: windows of `window` (n - 1 entries) moved by `steps` over the first n - 1
/// dimensions; each window reduces together with the whole last dimension.
Tensor pooling_sum(const Tensor& a, std::vector<std::int64_t> window,
                   std::vector<std::int64_t> steps);
Tensor pooling_max(const Tensor& a, std::vector<std::int64_t> window,
                   std::vector<std::int64_t> steps);

/// PyTorch-style 2-D convolution: input [N, C, H, W], weight [O, C / groups, kH, kW], optional
/// bias [O]; result [N, O, oH, oW]. Padding adds zeros on both sides. With groups g, the input's
/// channels and the filters are cut into g equal blocks and block i of the filters sees block i of
/// the channels only (g = C is a depthwise convolution).
struct Conv2dOptions {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
};
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv2dOptions options = {});
/// PyTorch's conv1d over [N, C, W] (or [C, W]) with weight [O, C / groups, K]: conv2d over a
/// height of 1.
struct Conv1dOptions {
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t dilation = 1;
  std::int64_t groups = 1;
};
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv1dOptions options = {});
/// PyTorch's conv3d over [N, C, D, H, W] (or [C, D, H, W]) with weight [O, C / groups, kD, kH,
/// kW]; result [N, O, oD, oH, oW]. Evaluated as one conv2d whose channels are the kD depth slices
/// of each output plane (the input is read kD times, once per depth tap).
struct Conv3dOptions {
  std::array<std::int64_t, 3> stride{1, 1, 1};
  std::array<std::int64_t, 3> padding{0, 0, 0};
  std::array<std::int64_t, 3> dilation{1, 1, 1};
  std::int64_t groups = 1;
};
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv3dOptions options = {});
/// PyTorch's conv_transpose2d: input [N, Cin, H, W] (or [Cin, H, W]), weight [Cin, Cout / groups,
/// kH, kW], optional bias [Cout]; result [N, Cout, oH, oW] with
/// oH = (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1. It is the
/// gradient of conv2d with respect to its input: conv2d with the same options maps the result's
/// shape back to the input's. output_padding must be smaller than the stride.
struct ConvTranspose2dOptions {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> output_padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
};
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        ConvTranspose2dOptions options = {});

/// PyTorch-style 2-D pooling over [N, C, H, W] (or [C, H, W]). The stride defaults to the kernel
/// size. max_pool2d pads with -infinity; avg_pool2d pads with zeros that count in the average.
struct Pool2dOptions {
  std::array<std::int64_t, 2> stride{0, 0};  ///< {0, 0}: the kernel size
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
};
Tensor max_pool2d(const Tensor& input, std::array<std::int64_t, 2> kernel,
                  Pool2dOptions options = {});
Tensor avg_pool2d(const Tensor& input, std::array<std::int64_t, 2> kernel,
                  Pool2dOptions options = {});
/// PyTorch's adaptive average pooling over [N, C, H, W] (or [C, H, W]) of a float tensor, to
/// output_size {H', W'}: output row i averages input rows floor(i H / H') to ceil((i + 1) H / H')
/// - 1 (windows overlap where H' does not divide H), and likewise for columns. Where H' divides H
/// and W' divides W it is avg_pool2d with kernel and stride H / H', W / W'.
Tensor adaptive_avg_pool2d(const Tensor& input, std::array<std::int64_t, 2> output_size);

}  // namespace kiln
