// The learning-rate schedules of kiln/schedulers.hpp.
#include "kiln/schedulers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "kiln/nn.hpp"

namespace kiln::nn {

namespace {
void require(bool ok, const char* schedule, const char* what) {
  if (!ok) throw Error(ErrorCode::invalid_select, std::string("nn::") + schedule + ": " + what);
}

// The one value of `name` in `state`, of dtype `dtype` (checked before anything changes).
template <class T>
T state_value(const std::vector<std::pair<std::string, Tensor>>& state, const char* name,
              DType dtype, const char* schedule) {
  const Tensor* found = nullptr;
  for (const auto& [n, t] : state)
    if (n == name) found = &t;
  if (found == nullptr)
    throw Error(ErrorCode::incompatible_shapes, std::string("nn::") + schedule +
                                                    "::load_state_dict: '" + name +
                                                    "' is missing");
  if (found->dtype() != dtype || found->numel() != 1)
    throw Error(ErrorCode::wrong_type, std::string("nn::") + schedule + "::load_state_dict: '" +
                                           name + "' must be one " + dtype_name(dtype));
  return found->to_vector<T>()[0];
}

void expect_names(const std::vector<std::pair<std::string, Tensor>>& state,
                  std::initializer_list<const char*> names, const char* schedule) {
  for (const auto& entry : state)
    if (std::none_of(names.begin(), names.end(), [&](const char* k) { return entry.first == k; }))
      throw Error(ErrorCode::incompatible_shapes, std::string("nn::") + schedule +
                                                      "::load_state_dict: '" + entry.first +
                                                      "' is not part of its state");
}

Tensor scalar(double v) { return Tensor::from(std::vector<double>{v}, {}); }
Tensor scalar(std::int64_t v) { return Tensor::from(std::vector<std::int64_t>{v}, {}); }

// From `from` to `to` along half a cosine as pct goes from 0 to 1.
double cosine_between(double from, double to, double pct) {
  return to + (from - to) * (1 + std::cos(std::numbers::pi * pct)) / 2;
}
}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer)
    : optimizer_(optimizer), base_lr_(optimizer.lr()) {}

void LRScheduler::start() { optimizer_.set_lr(lr_at(epoch_)); }

void LRScheduler::step() {
  ++epoch_;
  optimizer_.set_lr(lr_at(epoch_));
}

double LRScheduler::last_lr() const { return optimizer_.lr(); }

std::vector<std::pair<std::string, Tensor>> LRScheduler::state_dict() const {
  return {{"last_epoch", scalar(epoch_)}, {"base_lr", scalar(base_lr_)}};
}

void LRScheduler::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state) {
  expect_names(state, {"last_epoch", "base_lr"}, "LRScheduler");
  const auto epoch = state_value<std::int64_t>(state, "last_epoch", DType::i64, "LRScheduler");
  const auto base = state_value<double>(state, "base_lr", DType::f64, "LRScheduler");
  require(epoch >= 0 && base >= 0, "LRScheduler", "a state with last_epoch and base_lr >= 0");
  epoch_ = epoch;
  base_lr_ = base;
}

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  require(step_size > 0 && gamma >= 0, "StepLR", "needs step_size > 0 and gamma >= 0");
  start();
}

double StepLR::lr_at(std::int64_t epoch) const {
  return base_lr() * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<std::int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  require(std::is_sorted(milestones_.begin(), milestones_.end()) && gamma >= 0, "MultiStepLR",
          "needs increasing milestones and gamma >= 0");
  start();
}

double MultiStepLR::lr_at(std::int64_t epoch) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) -
                      milestones_.begin();
  return base_lr() * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  require(gamma >= 0, "ExponentialLR", "needs gamma >= 0");
  start();
}

double ExponentialLR::lr_at(std::int64_t epoch) const {
  return base_lr() * std::pow(gamma_, static_cast<double>(epoch));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min,
                                     std::int64_t warmup)
    : LRScheduler(optimizer), t_max_(t_max), warmup_(warmup), eta_min_(eta_min) {
  require(warmup >= 0 && t_max > warmup && eta_min >= 0, "CosineAnnealingLR",
          "needs t_max > warmup >= 0 and eta_min >= 0");
  start();
}

double CosineAnnealingLR::lr_at(std::int64_t epoch) const {
  if (epoch < warmup_) return base_lr() * static_cast<double>(epoch) / static_cast<double>(warmup_);
  if (epoch >= t_max_) return eta_min_;
  const double pct =
      static_cast<double>(epoch - warmup_) / static_cast<double>(t_max_ - warmup_);
  return cosine_between(base_lr(), eta_min_, pct);
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, std::int64_t total_steps,
                       double pct_start, double div_factor, double final_div_factor)
    : LRScheduler(optimizer), max_lr_(max_lr), initial_lr_(max_lr / div_factor),
      min_lr_(max_lr / div_factor / final_div_factor), total_steps_(total_steps),
      warm_end_(pct_start * static_cast<double>(total_steps) - 1) {
  require(max_lr > 0 && total_steps > 1 && pct_start > 0 && pct_start < 1 && div_factor > 0 &&
              final_div_factor > 0 && warm_end_ > 0,
          "OneCycleLR",
          "needs max_lr > 0, total_steps > 1, pct_start in (0, 1) leaving a warm-up of at "
          "least one step, and positive div factors");
  start();
}

double OneCycleLR::lr_at(std::int64_t epoch) const {
  const double e = static_cast<double>(std::min(epoch, total_steps_ - 1));
  if (e <= warm_end_) return cosine_between(initial_lr_, max_lr_, e / warm_end_);
  const double last = static_cast<double>(total_steps_ - 1);
  return cosine_between(max_lr_, min_lr_, (e - warm_end_) / (last - warm_end_));
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, double factor, std::int64_t patience,
                                     double threshold, std::int64_t cooldown, double min_lr)
    : optimizer_(optimizer), factor_(factor), threshold_(threshold), min_lr_(min_lr),
      patience_(patience), cooldown_(cooldown), best_(std::numeric_limits<double>::infinity()) {
  require(factor > 0 && factor < 1 && patience >= 0 && threshold >= 0 && cooldown >= 0 &&
              min_lr >= 0,
          "ReduceLROnPlateau",
          "needs factor in (0, 1) and patience, threshold, cooldown, min_lr >= 0");
}

void ReduceLROnPlateau::step(double metric) {
  if (metric < best_ * (1 - threshold_)) {
    best_ = metric;
    bad_steps_ = 0;
  } else {
    ++bad_steps_;
  }
  if (cooldown_left_ > 0) {
    --cooldown_left_;
    bad_steps_ = 0;  // steps in cooldown do not count
  }
  if (bad_steps_ > patience_) {
    optimizer_.set_lr(std::max(optimizer_.lr() * factor_, min_lr_));
    cooldown_left_ = cooldown_;
    bad_steps_ = 0;
  }
}

std::vector<std::pair<std::string, Tensor>> ReduceLROnPlateau::state_dict() const {
  return {{"best", scalar(best_)},
          {"bad_steps", scalar(bad_steps_)},
          {"cooldown_left", scalar(cooldown_left_)}};
}

void ReduceLROnPlateau::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state) {
  const char* name = "ReduceLROnPlateau";
  expect_names(state, {"best", "bad_steps", "cooldown_left"}, name);
  const auto best = state_value<double>(state, "best", DType::f64, name);
  const auto bad = state_value<std::int64_t>(state, "bad_steps", DType::i64, name);
  const auto cooldown = state_value<std::int64_t>(state, "cooldown_left", DType::i64, name);
  require(bad >= 0 && cooldown >= 0, name, "a state with bad_steps and cooldown_left >= 0");
  best_ = best;
  bad_steps_ = bad;
  cooldown_left_ = cooldown;
}

}  // namespace kiln::nn
