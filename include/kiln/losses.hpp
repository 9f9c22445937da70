/// @file
/// Loss functions with PyTorch's definitions and reductions (torch::nn::functional's *_loss).
/// Each is built from kiln's ops, so its gradient (of any order) is theirs. Shapes that do not fit
/// are an incompatible_shapes error naming the loss and both shapes; a reduction a loss does not
/// have is invalid_select.
#pragma once

#include <cstdint>

#include "kiln/tensor.hpp"

namespace kiln::nn {

enum class Reduction {
  mean,       ///< the mean over all elements (over the weights, for the class-weighted losses)
  sum,        ///< the sum
  none,       ///< the elementwise losses, of the input's shape ([N] for the class losses)
  batchmean,  ///< kl_div only: the sum divided by the batch size (the first dimension)
};

/// (input - target)^2.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
/// |input - target|.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
/// 0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta (beta 0: l1_loss).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::mean, double beta = 1.0);
/// 0.5 d^2 where d < delta, else delta (d - 0.5 delta).
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean,
                  double delta = 1.0);
/// -(t log(p) + (1 - t) log(1 - p)) of probabilities p, each log clamped at -100 (as PyTorch);
/// `weight`, if given, scales each element (broadcast to the input's shape).
Tensor binary_cross_entropy(const Tensor& probabilities, const Tensor& target,
                            Reduction reduction = Reduction::mean, const Tensor& weight = Tensor());
/// The same of sigmoid(logits), computed stably from the logits; `pos_weight` (broadcast over the
/// last dimension) weighs the positive term.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction = Reduction::mean,
                                        const Tensor& pos_weight = Tensor());

/// Options of the class losses: per-class weights [C], a label to ignore, label smoothing.
struct ClassLossOptions {
  Tensor weight;                     ///< [C], or undefined: every class weighs 1
  std::int64_t ignore_index = -100;  ///< samples with this label count nowhere
  double label_smoothing = 0.0;      ///< cross_entropy only: in [0, 1]
  Reduction reduction = Reduction::mean;
};
/// -w[y] log_probabilities[n, y] for log-probabilities [N, C] and integer labels [N]; the mean is
/// over the weights of the samples that count.
Tensor nll_loss(const Tensor& log_probabilities, const Tensor& labels,
                const ClassLossOptions& options = {});
/// nll_loss of log_softmax(logits, 1), with label smoothing as PyTorch defines it.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, const ClassLossOptions& options);
/// target (log(target) - input) for log-probabilities `input` (0 where target is 0); with
/// log_target, `target` holds log-probabilities too. PyTorch's default reduction is mean;
/// batchmean gives the mathematical KL divergence per sample.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean,
              bool log_target = false);

}  // namespace kiln::nn
