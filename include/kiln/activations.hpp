/// @file
/// Activations and losses, computed stably: no overflow for large inputs.
#pragma once

#include "kiln/tensor.hpp"

namespace kiln {

Tensor softmax(const Tensor& a, int axis = -1);
Tensor log_softmax(const Tensor& a, int axis = -1);
/// log(sum(exp(a))) over `axis`.
Tensor logsumexp(const Tensor& a, int axis = -1, bool keepdims = false);
/// Mean over the batch of -log(softmax(logits)[label]): logits [N, C], integer labels [N].
Tensor cross_entropy(const Tensor& logits, const Tensor& labels);
/// x * Φ(x) with Φ the standard normal distribution function (the exact form, through erf).
Tensor gelu(const Tensor& a);
/// x * sigmoid(x) (SiLU, also called swish).
Tensor silu(const Tensor& a);
/// x where x >= 0, negative_slope * x elsewhere.
Tensor leaky_relu(const Tensor& a, double negative_slope = 0.01);

}  // namespace kiln
