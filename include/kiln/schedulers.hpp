/// @file
/// Learning-rate schedules (torch.optim.lr_scheduler's): each sets an optimiser's learning rate
/// when step() is called, once per epoch or per batch as the schedule is meant. Include
/// kiln/nn.hpp, which includes this header.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::nn {

class Optimizer;

/// A schedule given in closed form: after the n-th step() the rate is lr_at(n). Making a
/// schedule sets the optimiser's rate to lr_at(0), the rate of the first training step (as
/// PyTorch's schedulers do): the base rate (the optimiser's rate when the schedule was made),
/// except where a schedule says otherwise (a warm-up starts at 0). The optimiser must outlive the
/// schedule.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  void step();
  std::int64_t last_epoch() const { return epoch_; }
  double last_lr() const;
  double base_lr() const { return base_lr_; }
  /// The schedule's position ("last_epoch", i64; "base_lr", f64), for checkpoints (see
  /// nn::save_checkpoint's `extra`); loading checks names and types first (incompatible_shapes,
  /// wrong_type) and changes nothing on error.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state);

 protected:
  virtual double lr_at(std::int64_t epoch) const = 0;
  Optimizer& optimizer() const { return optimizer_; }
  /// Sets the optimiser's rate to lr_at(0); every schedule's constructor calls it last (lr_at
  /// is not yet the schedule's own in the base's constructor).
  void start();

 private:
  Optimizer& optimizer_;
  double base_lr_;
  std::int64_t epoch_ = 0;
};

/// base * gamma^floor(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(std::int64_t epoch) const override;

 private:
  std::int64_t step_size_;
  double gamma_;
};

/// base * gamma^(number of milestones <= epoch); milestones increasing.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<std::int64_t> milestones, double gamma = 0.1);

 protected:
  double lr_at(std::int64_t epoch) const override;

 private:
  std::vector<std::int64_t> milestones_;
  double gamma_;
};

/// base * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  double lr_at(std::int64_t epoch) const override;

 private:
  double gamma_;
};

/// A linear warm-up from 0 to the base rate over `warmup` steps (epoch / warmup), then cosine
/// annealing to eta_min at t_max: eta_min + (base - eta_min) (1 + cos(pi (epoch - warmup) /
/// (t_max - warmup))) / 2, and eta_min after t_max. Without warm-up this is PyTorch's
/// CosineAnnealingLR in closed form.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min = 0.0,
                    std::int64_t warmup = 0);

 protected:
  double lr_at(std::int64_t epoch) const override;

 private:
  std::int64_t t_max_, warmup_;
  double eta_min_;
};

/// PyTorch's OneCycleLR (cosine annealing, two phases): from max_lr / div_factor up to max_lr over
/// the first pct_start of total_steps, then down to max_lr / div_factor / final_div_factor at the
/// last step.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, std::int64_t total_steps,
             double pct_start = 0.3, double div_factor = 25.0, double final_div_factor = 1e4);

 protected:
  double lr_at(std::int64_t epoch) const override;

 private:
  double max_lr_, initial_lr_, min_lr_;
  std::int64_t total_steps_;
  double warm_end_;  ///< the step where the rate peaks
};

/// PyTorch's ReduceLROnPlateau (mode "min", relative threshold): step(metric) multiplies the rate
/// by `factor` (not below min_lr) when the metric has not improved on the best by more than
/// threshold * best for more than `patience` steps, then waits `cooldown` steps.
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, double factor = 0.1,
                             std::int64_t patience = 10, double threshold = 1e-4,
                             std::int64_t cooldown = 0, double min_lr = 0.0);
  void step(double metric);
  double best() const { return best_; }
  /// "best" (f64), "bad_steps" and "cooldown_left" (i64), as LRScheduler's.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state);

 private:
  Optimizer& optimizer_;
  double factor_, threshold_, min_lr_;
  std::int64_t patience_, cooldown_;
  double best_;
  std::int64_t bad_steps_ = 0, cooldown_left_ = 0;
};

}  // namespace kiln::nn
