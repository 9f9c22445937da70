// Losses and optimisers.
#include <cmath>

#include "graph/node.hpp"
#include "kiln/activations.hpp"
#include "kiln/autodiff.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/nn.hpp"
#include "kiln/ops.hpp"
#include "nn/autocast.hpp"

namespace kiln::nn {

// ---- losses ---------------------------------------------------------------------------------------

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  return kiln::cross_entropy(loss_input(logits), labels);
}

Tensor mse(const Tensor& prediction, const Tensor& target) {
  if (!prediction.defined() || !target.defined())
    throw Error(ErrorCode::illegal_dimension, "nn::mse: empty tensor handle");
  if (prediction.shape() != target.shape())
    throw Error(ErrorCode::incompatible_shapes,
                "nn::mse: prediction " + shape_to_string(prediction.shape()) + " and target " +
                    shape_to_string(target.shape()) + " differ");
  return mean(square(prediction - target));
}

Tensor correct_count(const Tensor& logits, const Tensor& labels) {
  if (!logits.defined() || !labels.defined() || logits.rank() != 2 || labels.rank() != 1 ||
      labels.size(0) != logits.size(0))
    throw Error(ErrorCode::incompatible_shapes,
                "nn::correct_count: needs logits [N, C] and labels [N], got " +
                    (logits.defined() ? shape_to_string(logits.shape()) : "<empty>") + " and " +
                    (labels.defined() ? shape_to_string(labels.shape()) : "<empty>"));
  return sum(convert(equal(argmax(logits, 1), convert(labels, DType::i64)), DType::i64));
}

Tensor accuracy(const Tensor& logits, const Tensor& labels) {
  return convert(correct_count(logits, labels), DType::f64) /
         static_cast<double>(std::max<std::int64_t>(1, logits.size(0)));
}

// ---- Optimizer ------------------------------------------------------------------------------------

Optimizer::Optimizer(std::vector<Parameter> parameters) : parameters_(std::move(parameters)) {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].defined())
      throw Error(ErrorCode::illegal_dimension,
                  "nn::Optimizer: parameter " + std::to_string(i) + " is an empty handle");
    for (std::size_t j = 0; j < i; ++j)
      if (parameters_[i].same_slot(parameters_[j]))
        throw Error(ErrorCode::invalid_select, "nn::Optimizer: parameter '" +
                                                   parameters_[i].name() + "' is listed twice");
  }
}

void Optimizer::add_param_group(ParamGroup group) {
  for (std::size_t i = 0; i < group.parameters.size(); ++i) {
    const Parameter& p = group.parameters[i];
    if (!p.defined())
      throw Error(ErrorCode::illegal_dimension, "nn::Optimizer::add_param_group: parameter " +
                                                    std::to_string(i) + " is an empty handle");
    for (std::size_t j = 0; j < i; ++j)
      if (p.same_slot(group.parameters[j]))
        throw Error(ErrorCode::invalid_select, "nn::Optimizer::add_param_group: parameter '" +
                                                   p.name() + "' is listed twice");
    for (const Parameter& q : parameters_)
      if (p.same_slot(q))
        throw Error(ErrorCode::invalid_select, "nn::Optimizer::add_param_group: parameter '" +
                                                   p.name() + "' is in another group already");
  }
  double factor = 1.0;
  if (group.lr) {
    if (!(*group.lr >= 0) || !(lr() > 0))
      throw Error(ErrorCode::invalid_select,
                  "nn::Optimizer::add_param_group: a group's lr must be >= 0 and the optimiser's "
                  "positive (its schedule scales the group's), got " +
                      std::to_string(*group.lr) + " and " + std::to_string(lr()));
    factor = *group.lr / lr();
  }
  if (group.weight_decay && !(*group.weight_decay >= 0))
    throw Error(ErrorCode::invalid_select,
                "nn::Optimizer::add_param_group: weight_decay must be >= 0");
  groups_.push_back({parameters_.size(), factor, group.weight_decay});
  for (Parameter& p : group.parameters) parameters_.push_back(std::move(p));
  for (const auto& [name, tensors] : state_slots().tensors) tensors->resize(parameters_.size());
}

const Optimizer::GroupSettings* Optimizer::group_of(std::size_t i) const {
  const GroupSettings* found = nullptr;
  for (const GroupSettings& g : groups_)
    if (g.first <= i) found = &g;
  return found;
}

double Optimizer::lr_of(std::size_t i) const {
  const GroupSettings* g = group_of(i);
  return g ? lr() * g->lr_factor : lr();
}

double Optimizer::weight_decay_of(std::size_t i, double otherwise) const {
  const GroupSettings* g = group_of(i);
  return g && g->weight_decay ? *g->weight_decay : otherwise;
}

void Optimizer::zero_grad() const {
  for (const auto& p : parameters_) p.zero_grad();
}

void Optimizer::step() {
  std::vector<Tensor> grads;
  for (const auto& p : parameters_) grads.push_back(p.requires_grad() ? p.grad() : Tensor());
  apply(grads, Tensor());
}

void Optimizer::step(const Tensor& loss) {
  if (!loss.defined()) throw Error(ErrorCode::illegal_derive, "nn::Optimizer::step: empty loss");
  if (loss.numel() != 1)
    throw Error(ErrorCode::illegal_derive, "nn::Optimizer::step: the loss must have one element, "
                                           "got shape " + shape_to_string(loss.shape()));
  // Gradients of the parameters that are not frozen; frozen ones get none and stay as they are.
  std::vector<Tensor> values;
  std::vector<std::size_t> trained;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].requires_grad()) continue;
    values.push_back(parameters_[i].value());
    trained.push_back(i);
  }
  const bool scaled = scale_ > 0 && !values.empty();
  // The scale is a tensor (not a literal), so the graph of every step has the same structure.
  const Tensor scale = scaled ? full({}, scale_, loss.dtype()) : Tensor();
  Tensor objective = loss;
  if (scaled) {
    GradientContext context;  // the product is part of what is differentiated
    objective = loss * scale;
  }
  std::vector<Tensor> computed =
      values.empty() ? std::vector<Tensor>{} : gradients(objective, values);
  values.clear();  // only the parameters hold their values now, so updates can be in place
  std::vector<Tensor> grads(parameters_.size());
  for (std::size_t k = 0; k < trained.size(); ++k) {
    const std::size_t i = trained[k];
    if (scaled) computed[k] = computed[k] / full({}, scale_, computed[k].dtype());
    const Tensor old = parameters_[i].grad();
    grads[i] = old.defined() ? computed[k] + old : std::move(computed[k]);
  }
  if (scaled && !gradients_finite(grads, loss)) {
    // Skipped: nothing changes but the scale; the gradients are given up as after a step.
    zero_grad();
    ++skipped_;
    good_steps_ = 0;
    scale_ *= scaling_.backoff;
    return;
  }
  apply(grads, loss);
  if (scaled && ++good_steps_ >= scaling_.interval) {
    good_steps_ = 0;
    scale_ *= scaling_.growth;
  }
}

// Evaluates the gradients (and the loss) and whether every one of their values is finite: a
// product with 0 is 0 for finite values and NaN for infinities and NaN.
bool Optimizer::gradients_finite(const std::vector<Tensor>& grads, const Tensor& loss) const {
  std::vector<Tensor> targets{loss};
  Tensor check;
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    targets.push_back(g);
    const Tensor zero = sum(convert(g, DType::f32) * 0.0f);
    check = check.defined() ? check + zero : zero;
  }
  if (!check.defined()) return true;
  targets.push_back(check);
  eval_all(targets);
  return check.item<double>() == 0.0;
}

void Optimizer::set_loss_scaling(LossScaling scaling) {
  const auto positive = [](double v) { return v > 0 && std::isfinite(v); };
  if (scaling.initial_scale != 0 &&
      (!positive(scaling.initial_scale) || !positive(scaling.growth) ||
       !positive(scaling.backoff) || scaling.backoff >= 1 || scaling.interval < 1))
    throw Error(ErrorCode::invalid_select,
                "nn::Optimizer::set_loss_scaling: the scale, growth and backoff must be positive "
                "and finite, backoff below 1 and the interval at least 1");
  scaling_ = scaling;
  scale_ = scaling.initial_scale;
  good_steps_ = 0;
}

ClippedGradients clip_grad_norm(const std::vector<Tensor>& gradients, double max_norm) {
  if (!(max_norm > 0))
    throw Error(ErrorCode::invalid_select, "nn::clip_grad_norm: max_norm must be positive");
  Tensor squares;
  for (const Tensor& g : gradients) {
    if (!g.defined()) continue;
    const Tensor s = sum(square(convert(g, DType::f32)));
    squares = squares.defined() ? squares + s : s;
  }
  if (!squares.defined()) return {gradients, zeros({})};
  const Tensor norm = sqrt(squares);
  const Tensor scale = minimum(full({}, 1.0f), static_cast<float>(max_norm) / (norm + 1e-6f));
  ClippedGradients out{{}, norm};
  for (const Tensor& g : gradients)
    out.gradients.push_back(g.defined() ? g * convert(scale, g.dtype()) : g);
  return out;
}

std::vector<Tensor> clip_grad_value(const std::vector<Tensor>& gradients, double clip_value) {
  if (!(clip_value > 0))
    throw Error(ErrorCode::invalid_select, "nn::clip_grad_value: clip_value must be positive");
  std::vector<Tensor> out;
  for (const Tensor& g : gradients)
    out.push_back(g.defined() ? clamp(g, Scalar(-clip_value), Scalar(clip_value)) : g);
  return out;
}

void Optimizer::set_gradient_clipping(GradientClipping clipping) {
  if (!(clipping.max_norm >= 0) || !(clipping.max_value >= 0))
    throw Error(ErrorCode::invalid_select,
                "nn::Optimizer: clipping bounds must be 0 (off) or positive");
  clipping_ = clipping;
}

void Optimizer::apply(const std::vector<Tensor>& raw_grads, const Tensor& loss) {
  std::vector<Tensor> grads = raw_grads;
  if (clipping_.max_value > 0) grads = clip_grad_value(grads, clipping_.max_value);
  if (clipping_.max_norm > 0) grads = clip_grad_norm(grads, clipping_.max_norm).gradients;
  begin_step();
  ++steps_;
  std::vector<Tensor> targets;
  if (loss.defined()) targets.push_back(loss);
  struct Pending {
    std::size_t index;
    std::size_t first;  // position of the new value in targets; its state follows
    std::size_t states;
  };
  std::vector<Pending> pending;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!grads[i].defined()) continue;
    const Tensor& value = parameters_[i].value();
    const Tensor g = grads[i].dtype() == value.dtype() ? grads[i] : convert(grads[i], value.dtype());
    std::vector<Tensor> state;
    // The new value is assigned to the old one (update() assigns the state likewise), and the
    // handles to the old ones are given up before the evaluation: where nothing else reads an
    // old value, it is updated in place.
    const Tensor updated = assign(value, update(i, value, g, state));
    pending.push_back({i, targets.size(), state.size()});
    targets.push_back(updated);
    for (const auto& s : state) targets.push_back(s);
    parameters_[i].hold(updated);
    commit_state(i, std::move(state));
  }
  // The forward and backward pass (for step(loss)) and all updates at once. Should it fail, the
  // parameters and state hold their updates unevaluated.
  eval_all(targets);
  for (const Pending& p : pending) {
    parameters_[p.index].set(detach(targets[p.first]));
    std::vector<Tensor> state;
    for (std::size_t k = 0; k < p.states; ++k) state.push_back(detach(targets[p.first + 1 + k]));
    commit_state(p.index, std::move(state));
  }
}

// ---- SGD ------------------------------------------------------------------------------------------

SGD::SGD(std::vector<Parameter> parameters, SGDOptions options)
    : Optimizer(std::move(parameters)), options_(options),
      momentum_(this->parameters().size()) {
  if (!(options_.lr >= 0) || !(options_.momentum >= 0) || !(options_.weight_decay >= 0) ||
      !(options_.dampening >= 0 && options_.dampening <= 1))
    throw Error(ErrorCode::invalid_select,
                "nn::SGD: lr, momentum and weight_decay must be >= 0 and dampening in [0, 1]");
  if (options_.nesterov && (options_.momentum == 0 || options_.dampening != 0))
    throw Error(ErrorCode::invalid_select,
                "nn::SGD: nesterov needs a momentum and no dampening");
}

Tensor SGD::update(std::size_t i, const Tensor& value, const Tensor& grad,
                   std::vector<Tensor>& state_out) {
  const float lr = static_cast<float>(lr_of(i));
  const float mu = static_cast<float>(options_.momentum);
  const double weight_decay = weight_decay_of(i, options_.weight_decay);
  Tensor g = grad;
  if (weight_decay != 0) g = g + value * static_cast<float>(weight_decay);
  if (options_.momentum != 0) {
    const Tensor fresh =
        options_.dampening != 0 ? g * static_cast<float>(1.0 - options_.dampening) : g;
    const Tensor buf = momentum_[i].defined() ? assign(momentum_[i], momentum_[i] * mu + fresh) : g;
    state_out.push_back(buf);
    g = options_.nesterov ? g + buf * mu : buf;
  }
  return value - g * lr;
}

void SGD::set_lr(double lr) {
  if (!(lr >= 0)) throw Error(ErrorCode::invalid_select, "nn::SGD::set_lr: lr must be >= 0");
  options_.lr = lr;
}

void SGD::commit_state(std::size_t i, std::vector<Tensor> state) {
  if (!state.empty()) momentum_[i] = std::move(state[0]);
}

// ---- Adam -----------------------------------------------------------------------------------------

Adam::Adam(std::vector<Parameter> parameters, AdamOptions options)
    : Optimizer(std::move(parameters)), options_(options), m_(this->parameters().size()),
      v_(this->parameters().size()) {
  const auto& o = options_;
  if (!(o.lr >= 0) || !(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1) ||
      !(o.eps >= 0) || !(o.weight_decay >= 0))
    throw Error(ErrorCode::invalid_select,
                "nn::Adam: needs lr >= 0, 0 <= beta1, beta2 < 1, eps >= 0, weight_decay >= 0");
}

Tensor Adam::update(std::size_t i, const Tensor& value, const Tensor& grad,
                    std::vector<Tensor>& state_out) {
  const auto& o = options_;
  const double t = static_cast<double>(t_);
  const double bc1 = 1.0 - std::pow(o.beta1, t);
  const double bc2 = 1.0 - std::pow(o.beta2, t);
  const double weight_decay = weight_decay_of(i, o.weight_decay);
  Tensor g = grad;
  if (weight_decay != 0) g = g + value * static_cast<float>(weight_decay);
  const float b1 = static_cast<float>(o.beta1), b2 = static_cast<float>(o.beta2);
  const Tensor gm = g * (1.0f - b1);
  const Tensor gv = square(g) * (1.0f - b2);
  const Tensor m = m_[i].defined() ? assign(m_[i], m_[i] * b1 + gm) : gm;
  const Tensor v = v_[i].defined() ? assign(v_[i], v_[i] * b2 + gv) : gv;
  state_out.push_back(m);
  state_out.push_back(v);
  const Tensor denom = sqrt(v) * static_cast<float>(1.0 / std::sqrt(bc2)) +
                       static_cast<float>(o.eps);
  return value - m * static_cast<float>(lr_of(i) / bc1) / denom;
}

void Adam::set_lr(double lr) {
  if (!(lr >= 0)) throw Error(ErrorCode::invalid_select, "nn::Adam::set_lr: lr must be >= 0");
  options_.lr = lr;
}

void Adam::commit_state(std::size_t i, std::vector<Tensor> state) {
  m_[i] = std::move(state[0]);
  v_[i] = std::move(state[1]);
}

}  // namespace kiln::nn
