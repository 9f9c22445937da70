/// @file
/// Normalisation layers in functional form (libtorch's layer_norm and group_norm): the mean and
/// the biased variance of each group of values, then an optional per-element affine map. Built
/// from kiln's ops, so their gradients of any order are those of the ops.
#pragma once

#include "kiln/tensor.hpp"

namespace kiln {

/// Normalises over the last dimensions of `x`, which must equal `normalized_shape`; `weight` and
/// `bias` (optional) have that shape.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
/// x [N, C, ...]: the channels in `groups` equal blocks, each block of each sample normalised over
/// its channels and the remaining dimensions; `weight` and `bias` (optional) are [C].
Tensor group_norm(const Tensor& x, std::int64_t groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

}  // namespace kiln
