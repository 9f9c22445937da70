/// @file
/// Scaled dot-product attention, as PyTorch's torch.nn.functional.scaled_dot_product_attention:
/// softmax(q k^T * scale + mask) v, differentiable in q, k, v and a float mask.
#pragma once

#include <cstdint>
#include <optional>

#include "kiln/tensor.hpp"

namespace kiln {

struct AttentionOptions {
  /// Broadcast to [..., L, S]. Bool (as comparisons give) or integer: true (non-zero) positions take part,
  /// the others are left out (PyTorch's boolean mask). Float: added to the scores (-inf leaves a
  /// position out).
  Tensor mask;
  /// Query i sees keys j <= i (the lower triangle of an [L, S] matrix from its top-left corner, as
  /// PyTorch); not together with a mask.
  bool is_causal = false;
  /// Probability of zeroing an attention weight (the others scaled by 1 / (1 - p)); applied
  /// whenever it is above 0, as in PyTorch's functional form. The seed makes it reproducible;
  /// 0 draws one from next_seed().
  double dropout_p = 0.0;
  std::uint64_t seed = 0;
  /// Default 1 / sqrt(E).
  std::optional<double> scale;
};

/// q [..., L, E], k [..., S, E], v [..., S, Ev] (the leading dimensions broadcast) -> [..., L, Ev].
/// A query whose every key is left out gives NaN, as in PyTorch. Errors name the shapes:
/// incompatible_shapes for sizes that do not fit, illegal_dimensionality for fewer than 2
/// dimensions, invalid_select for a mask with is_causal or a dropout_p outside [0, 1).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {});

}  // namespace kiln
