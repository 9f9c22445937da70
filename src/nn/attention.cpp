// MultiheadAttention, with PyTorch's parameter names and layouts.
#include <cmath>
#include <limits>
#include <sstream>

#include "kiln/activations.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/nn.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"
#include "nn/checks.hpp"

namespace kiln::nn {

using checks::require;
using checks::require_positive;

namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

std::string shape_of(const Tensor& t) {
  return t.defined() ? shape_to_string(t.shape()) : "<empty>";
}

// Leaves out (scores to -inf) where an integer mask is non-zero; adds a float mask.
Tensor apply_mask(const Tensor& scores, const Tensor& mask) {
  if (!mask.defined()) return scores;
  if (is_float(mask.dtype())) return scores + mask.convert(scores.dtype());
  return masked_fill(scores, mask, kMinusInf);
}

}  // namespace

// ---- MultiheadAttention
// ------------------------------------------------------------------------------

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads,
                                       double dropout, bool bias, bool batch_first)
    : embed_(embed_dim), heads_(num_heads), dropout_(dropout), batch_first_(batch_first) {
  require_positive("MultiheadAttention", "embed_dim", embed_dim);
  require_positive("MultiheadAttention", "num_heads", num_heads);
  require(embed_dim % num_heads == 0, ErrorCode::illegal_dimension,
          "nn::MultiheadAttention: embed_dim " + std::to_string(embed_dim) +
              " is not a multiple of num_heads " + std::to_string(num_heads));
  require(dropout >= 0.0 && dropout < 1.0, ErrorCode::invalid_select,
          "nn::MultiheadAttention: dropout must be in [0, 1)");
  in_proj_weight_ = register_parameter("in_proj_weight", zeros({3 * embed_, embed_}));
  if (bias) in_proj_bias_ = register_parameter("in_proj_bias", zeros({3 * embed_}));
  out_proj_ = std::make_shared<Linear>(embed_, embed_, bias);
  register_module("out_proj", out_proj_);
  reset_parameters();
}

// PyTorch's _reset_parameters: Xavier uniform for the input projection, zero biases; the output
// projection keeps Linear's initialisation for its weight.
void MultiheadAttention::reset_parameters() {
  in_proj_weight_.copy_(xavier_uniform({3 * embed_, embed_}, embed_, 3 * embed_));
  if (in_proj_bias_.defined()) in_proj_bias_.copy_(zeros({3 * embed_}));
  if (out_proj_->bias().defined()) out_proj_->bias().copy_(zeros({embed_}));
}

Tensor MultiheadAttention::forward(const Tensor& x) { return forward(x, x, x).output; }

AttentionOutput MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                            const Tensor& value, const AttentionMasks& masks) {
  const std::string name = "nn::MultiheadAttention(" + std::to_string(embed_) + ", " +
                           std::to_string(heads_) + " heads)";
  const bool shapes_ok = query.defined() && key.defined() && value.defined() &&
                         (query.rank() == 2 || query.rank() == 3) && key.rank() == query.rank() &&
                         value.rank() == query.rank() && query.size(-1) == embed_ &&
                         key.size(-1) == embed_ && value.size(-1) == embed_;
  require(shapes_ok, ErrorCode::incompatible_shapes,
          name +
              ": query, key and value must be [L, N, E], [N, L, E] (batch_first) or [L, E] "
              "with E = " +
              std::to_string(embed_) + ", got query " + shape_of(query) + ", key " + shape_of(key) +
              ", value " + shape_of(value));
  const bool unbatched = query.rank() == 2;
  auto batch_major = [&](const Tensor& t) {
    return unbatched ? t.unsqueeze(0) : batch_first_ ? t : t.transpose(0, 1);
  };
  const Tensor q = batch_major(query), k = batch_major(key), v = batch_major(value);
  const std::int64_t N = q.size(0), L = q.size(1), S = k.size(1), hd = embed_ / heads_;
  require(k.size(0) == N && v.size(0) == N && v.size(1) == S, ErrorCode::incompatible_shapes,
          name + ": key and value must have the query's batch size and one length, got query " +
              shape_of(query) + ", key " + shape_of(key) + ", value " + shape_of(value));

  const std::vector<Tensor> w = chunk(in_proj_weight_.value(), 3, 0);
  const std::vector<Tensor> b =
      in_proj_bias_.defined() ? chunk(in_proj_bias_.value(), 3, 0) : std::vector<Tensor>(3);
  // [N, T, E] -> [N, heads, T, hd]
  auto project = [&](const Tensor& t, int i, std::int64_t T) {
    Tensor p = matmul(t, w[static_cast<std::size_t>(i)].transpose(0, 1));
    if (b[static_cast<std::size_t>(i)].defined()) p = p + b[static_cast<std::size_t>(i)];
    return p.reshape({N, T, heads_, hd}).permute({0, 2, 1, 3});
  };
  const Tensor qh = project(q, 0, L), kh = project(k, 1, S), vh = project(v, 2, S);
  // As PyTorch: the query divided by sqrt(head_dim) before the product.
  Tensor scores = matmul(qh / static_cast<float>(std::sqrt(static_cast<double>(hd))),
                         kh.transpose(-2, -1));  // [N, heads, L, S]

  if (masks.is_causal) {
    require(!masks.attn_mask.defined(), ErrorCode::invalid_select,
            name + ": takes attn_mask or is_causal, not both");
    scores = masked_fill(scores, triu(ones({L, S}, DType::i32), 1), kMinusInf);
  }
  if (masks.attn_mask.defined()) {
    const Tensor& m = masks.attn_mask;
    const bool two_d = m.rank() == 2 && m.size(0) == L && m.size(1) == S;
    const bool three_d =
        m.rank() == 3 && m.size(0) == N * heads_ && m.size(1) == L && m.size(2) == S;
    require(two_d || three_d, ErrorCode::incompatible_shapes,
            name + ": attn_mask must be [L, S] or [N * heads, L, S] = [" + std::to_string(L) +
                ", " + std::to_string(S) + "] or [" + std::to_string(N * heads_) + ", " +
                std::to_string(L) + ", " + std::to_string(S) + "], got " + shape_of(m));
    scores = apply_mask(scores, two_d ? m : m.reshape({N, heads_, L, S}));
  }
  if (masks.key_padding_mask.defined()) {
    const Tensor& m = masks.key_padding_mask;
    const bool fits = unbatched ? (m.rank() == 1 && m.size(0) == S)
                                : (m.rank() == 2 && m.size(0) == N && m.size(1) == S);
    require(fits, ErrorCode::incompatible_shapes,
            name + ": key_padding_mask must be [N, S] = [" + std::to_string(N) + ", " +
                std::to_string(S) + "] ([S] unbatched), got " + shape_of(m));
    scores = apply_mask(scores, m.reshape({N, 1, 1, S}));
  }
  Tensor weights = softmax(scores, -1);
  if (is_training() && dropout_ > 0.0)
    weights = dropout(weights, dropout_, next_seed());  // scaled by 1 / (1 - p)
  const Tensor heads = matmul(weights, vh);  // [N, heads, L, hd]
  Tensor out = (*out_proj_)(heads.permute({0, 2, 1, 3}).reshape({N, L, embed_}));
  Tensor averaged = mean(weights, {1});  // [N, L, S]
  if (unbatched) {
    out = out.squeeze(0);
    averaged = averaged.squeeze(0);
  } else if (!batch_first_) {
    out = out.transpose(0, 1);
  }
  return {out, averaged};
}

std::string MultiheadAttention::describe() const {
  std::ostringstream s;
  s << "MultiheadAttention(" << embed_ << ", " << heads_ << " heads"
    << (batch_first_ ? ", batch_first" : "") << ", dropout " << dropout_ << ")";
  return s.str();
}

}  // namespace kiln::nn
