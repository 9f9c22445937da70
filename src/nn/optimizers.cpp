// The update rules of AdamW, RMSprop and Adagrad (torch.optim's definitions). Each builds the
// new value and state lazily; Optimizer::apply evaluates all of them in one pass.
#include <cmath>
#include <string>

#include "kiln/nn.hpp"
#include "kiln/ops.hpp"

namespace kiln::nn {

namespace {

void require_options(bool ok, const char* optimiser, const char* what) {
  if (!ok)
    throw Error(ErrorCode::invalid_select, std::string("nn::") + optimiser + ": needs " + what);
}

void require_lr(double lr, const char* optimiser) {
  if (!(lr >= 0))
    throw Error(ErrorCode::invalid_select, std::string("nn::") + optimiser +
                                               "::set_lr: lr must be >= 0");
}

float f(double v) { return static_cast<float>(v); }

}  // namespace

// ---- AdamW ----------------------------------------------------------------------------------------

AdamW::AdamW(std::vector<Parameter> parameters, AdamWOptions options)
    : Optimizer(std::move(parameters)), options_(options), m_(this->parameters().size()),
      v_(this->parameters().size()) {
  const auto& o = options_;
  require_options(o.lr >= 0 && o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 &&
                      o.eps >= 0 && o.weight_decay >= 0,
                  "AdamW", "lr >= 0, 0 <= beta1, beta2 < 1, eps >= 0, weight_decay >= 0");
}

Tensor AdamW::update(std::size_t i, const Tensor& value, const Tensor& grad,
                     std::vector<Tensor>& state_out) {
  const auto& o = options_;
  const double t = static_cast<double>(t_);
  const double bc1 = 1.0 - std::pow(o.beta1, t), bc2 = 1.0 - std::pow(o.beta2, t);
  const Tensor gm = grad * f(1.0 - o.beta1);
  const Tensor gv = square(grad) * f(1.0 - o.beta2);
  const Tensor m = m_[i].defined() ? assign(m_[i], m_[i] * f(o.beta1) + gm) : gm;
  const Tensor v = v_[i].defined() ? assign(v_[i], v_[i] * f(o.beta2) + gv) : gv;
  state_out.push_back(m);
  state_out.push_back(v);
  const double lr = lr_of(i), weight_decay = weight_decay_of(i, o.weight_decay);
  const Tensor decayed = weight_decay != 0 ? value * f(1.0 - lr * weight_decay) : value;
  const Tensor denom = sqrt(v) * f(1.0 / std::sqrt(bc2)) + f(o.eps);
  return decayed - m * f(lr / bc1) / denom;
}

void AdamW::set_lr(double lr) {
  require_lr(lr, "AdamW");
  options_.lr = lr;
}

void AdamW::commit_state(std::size_t i, std::vector<Tensor> state) {
  m_[i] = std::move(state[0]);
  v_[i] = std::move(state[1]);
}

// ---- RMSprop --------------------------------------------------------------------------------------

RMSprop::RMSprop(std::vector<Parameter> parameters, RMSpropOptions options)
    : Optimizer(std::move(parameters)), options_(options),
      square_avg_(this->parameters().size()), grad_avg_(this->parameters().size()),
      momentum_(this->parameters().size()) {
  const auto& o = options_;
  require_options(o.lr >= 0 && o.alpha >= 0 && o.alpha <= 1 && o.eps >= 0 &&
                      o.weight_decay >= 0 && o.momentum >= 0,
                  "RMSprop", "lr, eps, weight_decay, momentum >= 0 and alpha in [0, 1]");
}

Tensor RMSprop::update(std::size_t i, const Tensor& value, const Tensor& grad,
                       std::vector<Tensor>& state_out) {
  const auto& o = options_;
  const double lr = lr_of(i), weight_decay = weight_decay_of(i, o.weight_decay);
  Tensor g = grad;
  if (weight_decay != 0) g = g + value * f(weight_decay);
  const Tensor gv = square(g) * f(1.0 - o.alpha);
  const Tensor v =
      square_avg_[i].defined() ? assign(square_avg_[i], square_avg_[i] * f(o.alpha) + gv) : gv;
  state_out.push_back(v);
  Tensor avg;
  if (o.centered) {
    const Tensor gg = g * f(1.0 - o.alpha);
    const Tensor mean_g =
        grad_avg_[i].defined() ? assign(grad_avg_[i], grad_avg_[i] * f(o.alpha) + gg) : gg;
    state_out.push_back(mean_g);
    avg = sqrt(v - square(mean_g)) + f(o.eps);
  } else {
    avg = sqrt(v) + f(o.eps);
  }
  if (o.momentum > 0) {
    const Tensor step = g / avg;
    const Tensor buf =
        momentum_[i].defined() ? assign(momentum_[i], momentum_[i] * f(o.momentum) + step) : step;
    state_out.push_back(buf);
    return value - buf * f(lr);
  }
  return value - g / avg * f(lr);
}

void RMSprop::set_lr(double lr) {
  require_lr(lr, "RMSprop");
  options_.lr = lr;
}

// The state in the order update() adds it: square_avg, then grad_avg (centered), then the
// momentum buffer (momentum > 0).
void RMSprop::commit_state(std::size_t i, std::vector<Tensor> state) {
  std::size_t k = 0;
  square_avg_[i] = std::move(state[k++]);
  if (options_.centered) grad_avg_[i] = std::move(state[k++]);
  if (options_.momentum > 0) momentum_[i] = std::move(state[k++]);
}

// ---- Adagrad --------------------------------------------------------------------------------------

Adagrad::Adagrad(std::vector<Parameter> parameters, AdagradOptions options)
    : Optimizer(std::move(parameters)), options_(options), sum_(this->parameters().size()) {
  const auto& o = options_;
  require_options(o.lr >= 0 && o.lr_decay >= 0 && o.weight_decay >= 0 &&
                      o.initial_accumulator_value >= 0 && o.eps >= 0,
                  "Adagrad", "lr, lr_decay, weight_decay, initial_accumulator_value, eps >= 0");
}

Tensor Adagrad::update(std::size_t i, const Tensor& value, const Tensor& grad,
                       std::vector<Tensor>& state_out) {
  const auto& o = options_;
  const double weight_decay = weight_decay_of(i, o.weight_decay);
  Tensor g = grad;
  if (weight_decay != 0) g = g + value * f(weight_decay);
  const double clr = lr_of(i) / (1.0 + static_cast<double>(t_ - 1) * o.lr_decay);
  const Tensor before = sum_[i].defined()
                            ? sum_[i]
                            : full_like(value, o.initial_accumulator_value);
  const Tensor total = assign(before, before + square(g));
  state_out.push_back(total);
  return value - g * f(clr) / (sqrt(total) + f(o.eps));
}

void Adagrad::set_lr(double lr) {
  require_lr(lr, "Adagrad");
  options_.lr = lr;
}

void Adagrad::commit_state(std::size_t i, std::vector<Tensor> state) {
  sum_[i] = std::move(state[0]);
}

}  // namespace kiln::nn
