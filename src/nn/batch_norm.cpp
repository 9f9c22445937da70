// BatchNorm1d and BatchNorm2d: batch statistics in training mode, running statistics (module
// buffers, updated with the training step's evaluation) in evaluation mode.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "graph/gradient_mode.hpp"
#include "kiln/nn.hpp"
#include "kiln/ops.hpp"
#include "nn/checks.hpp"

namespace kiln::nn {

using checks::require;
using checks::require_positive;

BatchNorm::BatchNorm(const char* name, std::vector<std::int64_t> ranks,
                     std::int64_t num_features, BatchNormOptions options)
    : name_(name), ranks_(std::move(ranks)), features_(num_features), options_(options) {
  require_positive(name, "num_features", num_features);
  require(options.eps > 0 && std::isfinite(options.eps), ErrorCode::invalid_select,
          std::string("nn::") + name + ": eps must be positive");
  require(options.momentum >= 0 && options.momentum <= 1, ErrorCode::invalid_select,
          std::string("nn::") + name + ": momentum must be in [0, 1]");
  if (options.affine) {
    weight_ = register_parameter("weight", ones({num_features}));
    bias_ = register_parameter("bias", zeros({num_features}));
  }
  if (options.track_running_stats) {
    running_mean_ = register_buffer("running_mean", zeros({num_features}));
    running_var_ = register_buffer("running_var", ones({num_features}));
  }
}

BatchNorm1d::BatchNorm1d(std::int64_t num_features, BatchNormOptions options)
    : BatchNorm("BatchNorm1d", {2, 3}, num_features, options) {}

BatchNorm2d::BatchNorm2d(std::int64_t num_features, BatchNormOptions options)
    : BatchNorm("BatchNorm2d", {4}, num_features, options) {}

void BatchNorm::reset_parameters() {
  if (weight_.defined()) weight_.copy_(ones({features_}));
  if (bias_.defined()) bias_.copy_(zeros({features_}));
}

void BatchNorm::reset_running_stats() {
  if (running_mean_.defined()) running_mean_.copy_(zeros({features_}));
  if (running_var_.defined()) running_var_.copy_(ones({features_}));
}

Tensor BatchNorm::forward(const Tensor& x) {
  const std::string who = std::string("nn::") + name_;
  require(x.defined(), ErrorCode::invalid_select, who + ": empty tensor handle");
  bool rank_ok = false;
  for (std::int64_t r : ranks_) rank_ok = rank_ok || x.rank() == r;
  require(rank_ok, ErrorCode::illegal_dimensionality,
          who + (ranks_.size() == 1 ? ": needs an input [N, C, H, W]"
                                    : ": needs an input [N, C] or [N, C, L]") +
              ", got " + shape_to_string(x.shape()));
  require(x.size(1) == features_, ErrorCode::incompatible_shapes,
          who + ": input " + shape_to_string(x.shape()) + " has " + std::to_string(x.size(1)) +
              " channels, the module " + std::to_string(features_));
  require(is_float(x.dtype()), ErrorCode::wrong_type,
          who + ": needs a float input, got " + dtype_name(x.dtype()));

  std::vector<int> axes{0};
  Shape per_channel{1, features_};
  for (int d = 2; d < x.rank(); ++d) {
    axes.push_back(d);
    per_channel.push_back(1);
  }
  const bool tracked = running_mean_.defined();
  Tensor mean, var;
  if (is_training() || !tracked) {
    const std::int64_t count = x.numel() / features_;
    require(!is_training() || count > 1, ErrorCode::invalid_select,
            who + ": training needs more than one value per channel, got input " +
                shape_to_string(x.shape()));
    mean = x.mean(axes, true);
    var = square(x - mean).mean(axes, true);
    if (is_training() && tracked) {
      // The running statistics are state: built outside any gradient context, so that once
      // computed they keep nothing of this step's graph.
      detail::GradientContextPause state;
      const float m = static_cast<float>(options_.momentum);
      const double unbiased = static_cast<double>(count) / static_cast<double>(count - 1);
      const Tensor batch_mean = convert(reshape(mean, {features_}), running_mean_.dtype());
      const Tensor batch_var = convert(reshape(var, {features_}) * unbiased, running_var_.dtype());
      update_buffer(running_mean_, running_mean_.value() * (1 - m) + batch_mean * m);
      update_buffer(running_var_, running_var_.value() * (1 - m) + batch_var * m);
    }
  } else {
    mean = convert(reshape(running_mean_.value(), per_channel), x.dtype());
    var = convert(reshape(running_var_.value(), per_channel), x.dtype());
  }
  Tensor y = (x - mean) / sqrt(var + options_.eps);
  if (weight_.defined())
    y = y * convert(reshape(weight_.value(), per_channel), x.dtype()) +
        convert(reshape(bias_.value(), per_channel), x.dtype());
  return y;
}

std::string BatchNorm::describe() const {
  char eps[32];
  std::snprintf(eps, sizeof eps, "%g", options_.eps);
  char momentum[32];
  std::snprintf(momentum, sizeof momentum, "%g", options_.momentum);
  return std::string(name_) + "(" + std::to_string(features_) + ", eps " + eps + ", momentum " +
         momentum + (options_.affine ? ", affine" : "") +
         (options_.track_running_stats ? ", running stats" : "") + ")";
}

}  // namespace kiln::nn
