// The loss functions of kiln/losses.hpp, each written with kiln's ops from PyTorch's definition.
#include "kiln/losses.hpp"

#include <cmath>
#include <string>

#include "api/builder.hpp"
#include "kiln/activations.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/error.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"
#include "nn/autocast.hpp"

namespace kiln::nn {

namespace {

[[noreturn]] void fail(ErrorCode code, const char* loss, const std::string& what) {
  throw Error(code, std::string(loss) + ": " + what);
}

void check_defined(const char* loss, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) fail(ErrorCode::illegal_dimension, loss, "empty tensor handle");
}

// Elementwise losses need input and target of one shape (PyTorch warns and broadcasts; a
// broadcast target is almost always a bug, so kiln refuses it).
void check_same_shape(const char* loss, const Tensor& input, const Tensor& target) {
  check_defined(loss, input, target);
  if (input.shape() != target.shape())
    fail(ErrorCode::incompatible_shapes, loss,
         "input " + shape_to_string(input.shape()) + " and target " +
             shape_to_string(target.shape()) + " differ");
  if (!is_float(input.dtype()))
    fail(ErrorCode::wrong_type, loss,
         std::string("needs a float input, got ") + dtype_name(input.dtype()));
}

// The target in the input's type (an integer or f64 target of an f32 input is converted).
Tensor like_input(const Tensor& input, const Tensor& target) {
  return target.dtype() == input.dtype() ? target : convert(target, input.dtype());
}

Tensor reduce(const char* loss, const Tensor& elements, Reduction r) {
  switch (r) {
    case Reduction::mean: return mean(elements);
    case Reduction::sum: return sum(elements);
    case Reduction::none: return elements;
    case Reduction::batchmean: break;
  }
  fail(ErrorCode::invalid_select, loss, "batchmean is a reduction of kl_div only");
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_shape("mse_loss", input, target);
  return reduce("mse_loss", square(input - like_input(input, target)), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_shape("l1_loss", input, target);
  return reduce("l1_loss", abs(input - like_input(input, target)), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction,
                      double beta) {
  check_same_shape("smooth_l1_loss", input, target);
  if (!(beta >= 0)) fail(ErrorCode::invalid_select, "smooth_l1_loss", "beta must not be negative");
  const Tensor d = abs(input - like_input(input, target));
  if (beta == 0) return reduce("smooth_l1_loss", d, reduction);
  return reduce("smooth_l1_loss", where(less(d, beta), 0.5 / beta * square(d), d - 0.5 * beta),
                reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  check_same_shape("huber_loss", input, target);
  if (!(delta > 0)) fail(ErrorCode::invalid_select, "huber_loss", "delta must be positive");
  const Tensor d = abs(input - like_input(input, target));
  return reduce("huber_loss", where(less(d, delta), 0.5 * square(d), delta * (d - 0.5 * delta)),
                reduction);
}

Tensor binary_cross_entropy(const Tensor& probabilities, const Tensor& target, Reduction reduction,
                            const Tensor& weight) {
  check_same_shape("binary_cross_entropy", probabilities, target);
  const Tensor& p = probabilities;
  const Tensor t = like_input(p, target);
  // log(0) is -inf; PyTorch clamps each log at -100 so that a confident wrong answer costs 100.
  const Tensor log_p = maximum(log(p), full_like(p, -100.0));
  const Tensor log_q = maximum(log(1.0 - p), full_like(p, -100.0));
  Tensor loss = neg(t * log_p + (1.0 - t) * log_q);
  if (weight.defined()) loss = loss * like_input(p, weight);
  return reduce("binary_cross_entropy", loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction, const Tensor& pos_weight) {
  check_same_shape("binary_cross_entropy_with_logits", logits, target);
  const Tensor& x = logits;
  const Tensor t = like_input(x, target);
  // log(1 + exp(-|x|)) + max(-x, 0) = -log(sigmoid(x)), without overflow for any x.
  const Tensor minus_log_sigmoid = log1p(exp(neg(abs(x)))) + maximum(neg(x), zeros_like(x));
  Tensor loss;
  if (pos_weight.defined()) {
    const Tensor pw = like_input(x, pos_weight);
    loss = (1.0 - t) * x + (1.0 + (pw - 1.0) * t) * minus_log_sigmoid;
  } else {
    loss = (1.0 - t) * x + minus_log_sigmoid;
  }
  return reduce("binary_cross_entropy_with_logits", loss, reduction);
}

namespace {

struct Picked {
  Tensor loss;    // [N]: -w[y] x[n, y], 0 for ignored samples
  Tensor weight;  // [N]: w[y], 0 for ignored samples
  Tensor kept;    // [N]: 1 for samples that count, else 0 (the input's type)
};

void check_classes(const char* loss, const Tensor& x, const Tensor& labels,
                   const ClassLossOptions& o) {
  check_defined(loss, x, labels);
  if (x.rank() != 2 || labels.rank() != 1 || labels.size(0) != x.size(0))
    fail(ErrorCode::incompatible_shapes, loss,
         "needs input [N, C] and labels [N], got " + shape_to_string(x.shape()) + " and " +
             shape_to_string(labels.shape()));
  if (!is_float(x.dtype()) || !is_integer(labels.dtype()))
    fail(ErrorCode::wrong_type, loss,
         std::string("needs a float input and integer labels, got ") + dtype_name(x.dtype()) +
             " and " + dtype_name(labels.dtype()));
  if (o.weight.defined() && o.weight.shape() != Shape{x.size(1)})
    fail(ErrorCode::incompatible_shapes, loss,
         "weight " + shape_to_string(o.weight.shape()) + " for " + std::to_string(x.size(1)) +
             " classes");
}

Picked pick(const Tensor& x, const Tensor& labels, const ClassLossOptions& o) {
  // Compared in i64: u8 labels would wrap the usual -100 to 156, a class.
  const Tensor kept_mask = not_equal(
      is_narrow_integer(labels.dtype()) ? convert(labels, DType::i64) : labels, o.ignore_index);
  // Ignored labels (often -100) read class 0 and are then zeroed: gather checks its indices.
  const Tensor safe = where(kept_mask, labels, zeros_like(labels));
  const Tensor kept = convert(kept_mask, x.dtype());
  const Tensor chosen = squeeze(gather(x, 1, unsqueeze(safe, 1)), 1);
  const Tensor w =
      o.weight.defined() ? index_select(like_input(x, o.weight), 0, safe) * kept : kept;
  return {neg(chosen) * w, w, kept};
}

Tensor reduce_classes(const char* loss, const Picked& p, Reduction r) {
  switch (r) {
    case Reduction::mean: return sum(p.loss) / sum(p.weight);
    case Reduction::sum: return sum(p.loss);
    case Reduction::none: return p.loss;
    case Reduction::batchmean: break;
  }
  fail(ErrorCode::invalid_select, loss, "batchmean is a reduction of kl_div only");
}

}  // namespace

Tensor nll_loss(const Tensor& log_probabilities, const Tensor& labels,
                const ClassLossOptions& options) {
  return detail::as_called("nll_loss", {&log_probabilities, &labels}, [&] {
    check_classes("nll_loss", log_probabilities, labels, options);
    return reduce_classes("nll_loss", pick(log_probabilities, labels, options),
                          options.reduction);
  });
}

namespace {
Tensor cross_entropy_of(const Tensor& given, const Tensor& labels,
                        const ClassLossOptions& options) {
  const Tensor logits = loss_input(given);
  check_classes("cross_entropy", logits, labels, options);
  const double eps = options.label_smoothing;
  if (!(eps >= 0 && eps <= 1))
    fail(ErrorCode::invalid_select, "cross_entropy", "label_smoothing must be in [0, 1]");
  const Tensor logp = log_softmax(logits, 1);
  const Picked p = pick(logp, labels, options);
  const Tensor nll = reduce_classes("cross_entropy", p, options.reduction);
  if (eps == 0) return nll;
  // The smoothing term: -sum_c w_c log p_c per counted sample, normalised as nll's mean is.
  const Tensor per_class = options.weight.defined()
                               ? logp * unsqueeze(like_input(logits, options.weight), 0)
                               : logp;
  const Tensor smooth = neg(sum(per_class, {1})) * p.kept;
  Tensor smooth_reduced;
  switch (options.reduction) {
    case Reduction::mean: smooth_reduced = sum(smooth) / sum(p.weight); break;
    case Reduction::sum: smooth_reduced = sum(smooth); break;
    default: smooth_reduced = smooth; break;
  }
  const double classes = static_cast<double>(logits.size(1));
  return (1.0 - eps) * nll + (eps / classes) * smooth_reduced;
}
}  // namespace

Tensor cross_entropy(const Tensor& given, const Tensor& labels, const ClassLossOptions& options) {
  return detail::as_called("cross_entropy", {&given, &labels},
                           [&] { return cross_entropy_of(given, labels, options); });
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  check_same_shape("kl_div", input, target);
  const Tensor t = like_input(input, target);
  // target log(target) is 0 where target is 0 (its limit), not NaN.
  const Tensor loss =
      log_target ? exp(t) * (t - input)
                 : where(equal(t, 0.0), zeros_like(t), t * (log(t) - input));
  if (reduction == Reduction::batchmean)
    return input.rank() == 0 ? sum(loss) : sum(loss) / static_cast<double>(input.size(0));
  return reduce("kl_div", loss, reduction);
}

}  // namespace kiln::nn
