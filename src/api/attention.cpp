// Scaled dot-product attention from matmul, softmax and where: the backward pass comes from
// their gradients, and the elementwise parts fuse with the softmax's reductions.
#include "kiln/attention.hpp"

#include <cmath>
#include <limits>

#include "api/builder.hpp"
#include "kiln/activations.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"

namespace kiln {

namespace {

constexpr std::string_view kOp = "scaled_dot_product_attention";

std::string shapes(const Tensor& q, const Tensor& k, const Tensor& v) {
  return "q " + shape_to_string(q.shape()) + ", k " + shape_to_string(k.shape()) + ", v " +
         shape_to_string(v.shape());
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options) {
  detail::node_of(q, kOp);
  detail::node_of(k, kOp);
  detail::node_of(v, kOp);
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2)
    detail::fail(ErrorCode::illegal_dimensionality, kOp,
                 "needs at least 2 dimensions in each operand, got " + shapes(q, k, v));
  if (q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2))
    detail::fail(ErrorCode::incompatible_shapes, kOp,
                 "q and k need the same last size and k and v the same number of keys, got " +
                     shapes(q, k, v));
  if (options.mask.defined() && options.is_causal)
    detail::fail(ErrorCode::invalid_select, kOp, "takes a mask or is_causal, not both");
  if (!(options.dropout_p >= 0.0 && options.dropout_p < 1.0))
    detail::fail(ErrorCode::invalid_select, kOp,
                 "dropout_p must be in [0, 1), got " + std::to_string(options.dropout_p));
  const Tensor qf = detail::float_operand(q);
  const std::int64_t L = q.size(-2), S = k.size(-2);
  const double scale =
      options.scale ? *options.scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const Scalar s = qf.dtype() == DType::f32 ? Scalar(static_cast<float>(scale)) : Scalar(scale);
  Tensor scores = matmul(qf * s, transpose(detail::float_operand(k), -2, -1));
  constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
  if (options.is_causal) {
    // Key j is in the future of query i where j - i > 0.
    const Tensor future = triu(ones({L, S}, DType::i32), 1);
    scores = masked_fill(scores, future, kMinusInf);
  } else if (options.mask.defined()) {
    const Tensor& m = options.mask;
    if (is_float(m.dtype()))
      scores = scores + m.convert(scores.dtype());
    else
      scores = where(m, scores, Scalar(kMinusInf).cast(scores.dtype()));
  }
  Tensor weights = softmax(scores, -1);
  if (options.dropout_p > 0.0) {
    const std::uint64_t seed = options.seed != 0 ? options.seed : next_seed();
    weights = dropout(weights, options.dropout_p, seed);  // scaled by 1 / (1 - p)
  }
  return matmul(weights, detail::float_operand(v));
}

}  // namespace kiln
