/// @file
/// Random tensors and random transformations. Every random op fixes its seed when it is built,
/// so evaluating the same node twice gives the same values. Without a seed argument a seed is
/// drawn from the global generator (see manual_seed in ops.hpp).
#pragma once

#include <cstdint>

#include "kiln/tensor.hpp"

namespace kiln {

/// Standard normal values (Box-Muller over two uniform streams); default_dtype() unless named.
Tensor random_normal(Shape shape, std::uint64_t seed, DType dtype);
Tensor random_normal(Shape shape, std::uint64_t seed);
Tensor random_normal(Shape shape, DType dtype);
Tensor random_normal(Shape shape);
/// `a` with the slices along `axis` in a random order.
Tensor permutate(const Tensor& a, int axis, std::uint64_t seed);
Tensor permutate(const Tensor& a, int axis);
/// libtorch's dropout: each element set to 0 with probability p, the others scaled by 1 / (1 - p)
/// so that the expected value is unchanged (p = 1 gives zeros). The C API's fdropout keeps
/// Flint's, which does not rescale.
Tensor dropout(const Tensor& a, double p, std::uint64_t seed);
Tensor dropout(const Tensor& a, double p);
/// torch.multinomial: `num_samples` i64 category indices drawn from each row of the weights
/// `probs` ([K] -> [num_samples], [N, K] -> [N, num_samples]; weights need not sum to 1).
/// Without replacement each row's samples are distinct (num_samples <= K), and categories of
/// weight 0 come only after every other. The weights must be finite and >= 0 with a positive sum
/// per row (invalid_select otherwise): they are evaluated when the sampler is built to check
/// that, as PyTorch checks them then.
Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement,
                   std::uint64_t seed);
Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement = false);

}  // namespace kiln
