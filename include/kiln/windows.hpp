// Sliding windows and what is built on them: convolution and pooling, in Flint's n-dimensional
// form (no padding, the last dimension reduced completely) and in the NCHW form PyTorch users
// know. A dimension of size n with window k and step s has floor((n - k) / s) + 1 windows.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

// Every window of `size` (one entry per dimension of `a`) at every `steps` position, as a new
// leading dimension: shape [windows, size...]. Windows are ordered with the innermost dimension
// moving fastest. A view: nothing is copied. A window larger than `a` is an invalid_select error.
Tensor sliding_window(const Tensor& a, std::vector<std::int64_t> size,
                      std::vector<std::int64_t> steps);
// The inverse placement: windows [count, size...] written back into a tensor of `shape`, with
// overlapping elements summed and gaps left 0.
Tensor unslide_window(const Tensor& windows, Shape shape, std::vector<std::int64_t> steps);

// Flint's convolve: `a` has n dimensions and its last one is reduced completely. A kernel of n
// dimensions is one filter, with result shape [windows per dimension...] (n - 1 dimensions); a
// kernel of n + 1 dimensions holds several filters (its first dimension), and the result gets
// their index as last dimension. `steps` has n - 1 entries. No padding.
Tensor convolve(const Tensor& a, const Tensor& kernel, std::vector<std::int64_t> steps);

// Flint's pooling: windows of `window` (n - 1 entries) moved by `steps` over the first n - 1
// dimensions; each window reduces together with the whole last dimension.
Tensor pooling_sum(const Tensor& a, std::vector<std::int64_t> window,
                   std::vector<std::int64_t> steps);
Tensor pooling_max(const Tensor& a, std::vector<std::int64_t> window,
                   std::vector<std::int64_t> steps);

// PyTorch-style 2-D convolution: input [N, C, H, W], weight [O, C, kH, kW], optional bias [O];
// result [N, O, oH, oW]. Padding adds zeros on both sides.
struct Conv2dOptions {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
};
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv2dOptions options = {});
// PyTorch's conv1d over [N, C, W] (or [C, W]) with weight [O, C, K]: conv2d over a height of 1.
struct Conv1dOptions {
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t dilation = 1;
};
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv1dOptions options = {});

// PyTorch-style 2-D pooling over [N, C, H, W] (or [C, H, W]). The stride defaults to the kernel
// size. max_pool2d pads with -infinity; avg_pool2d pads with zeros that count in the average.
struct Pool2dOptions {
  std::array<std::int64_t, 2> stride{0, 0};  // {0, 0}: the kernel size
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
};
Tensor max_pool2d(const Tensor& input, std::array<std::int64_t, 2> kernel,
                  Pool2dOptions options = {});
Tensor avg_pool2d(const Tensor& input, std::array<std::int64_t, 2> kernel,
                  Pool2dOptions options = {});

}  // namespace kiln
