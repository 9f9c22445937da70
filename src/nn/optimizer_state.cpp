// Optimizer::state_dict / load_state_dict: an optimiser's state as named tensors, for checkpoints.
#include <cmath>
#include <map>
#include <optional>

#include "kiln/nn.hpp"

namespace kiln::nn {

namespace {

Tensor counter(std::int64_t v) { return Tensor::from(std::vector<std::int64_t>{v}, {}); }

[[noreturn]] void refuse(ErrorCode code, const std::string& what) {
  throw Error(code, "nn::Optimizer::load_state_dict: " + what);
}

// The integer value of a counter entry (an i64 scalar).
std::int64_t counter_value(const std::string& name, const Tensor& t) {
  if (t.dtype() != DType::i64 || t.numel() != 1)
    refuse(ErrorCode::wrong_type, "'" + name + "' must be one i64, got " +
                                      std::string(dtype_name(t.dtype())) + " " +
                                      shape_to_string(t.shape()));
  return t.to_vector<std::int64_t>()[0];
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> Optimizer::state_dict() const {
  // state_slots() hands out pointers for load_state_dict as well; here they are only read.
  const StateSlots slots = const_cast<Optimizer*>(this)->state_slots();
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("steps", counter(steps_));
  for (const auto& [name, value] : slots.counters) out.emplace_back(name, counter(*value));
  out.emplace_back("lr", Tensor::from(std::vector<double>{lr()}, {}));
  if (scale_ > 0) {  // loss scaling: where the scale stands, so a resumed run goes on from there
    out.emplace_back("loss_scale", Tensor::from(std::vector<double>{scale_}, {}));
    out.emplace_back("loss_scale_good_steps", counter(good_steps_));
    out.emplace_back("skipped_steps", counter(skipped_));
  }
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    for (const auto& [name, tensors] : slots.tensors)
      if ((*tensors)[i].defined()) out.emplace_back(std::to_string(i) + "." + name, (*tensors)[i]);
  return out;
}

void Optimizer::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state) {
  const StateSlots slots = state_slots();
  std::map<std::string, Tensor> given;
  for (const auto& [name, t] : state)
    if (!given.emplace(name, t).second)
      refuse(ErrorCode::incompatible_shapes, "'" + name + "' twice");
  auto take = [&](const std::string& name) -> std::optional<Tensor> {
    const auto it = given.find(name);
    if (it == given.end()) return std::nullopt;
    Tensor t = it->second;
    given.erase(it);
    return t;
  };
  // Check everything first.
  const auto steps = take("steps");
  const auto rate = take("lr");
  if (!steps || !rate)
    refuse(ErrorCode::incompatible_shapes, std::string("'") + (!steps ? "steps" : "lr") +
                                               "' is missing (not an optimiser's state?)");
  const std::int64_t new_steps = counter_value("steps", *steps);
  if (rate->dtype() != DType::f64 || rate->numel() != 1)
    refuse(ErrorCode::wrong_type, "'lr' must be one f64");
  const double new_lr = rate->to_vector<double>()[0];
  // Loss scaling's state, where the optimiser wrote it: all three entries or none.
  const auto scale = take("loss_scale");
  const auto good_steps = take("loss_scale_good_steps");
  const auto skipped = take("skipped_steps");
  if (scale || good_steps || skipped) {
    if (!scale || !good_steps || !skipped)
      refuse(ErrorCode::incompatible_shapes,
             std::string("'") +
                 (!scale        ? "loss_scale"
                  : !good_steps ? "loss_scale_good_steps"
                                : "skipped_steps") +
                 "' is missing (the loss scaling state is incomplete)");
    if (scale_ <= 0)
      refuse(ErrorCode::incompatible_shapes,
             "the state holds a loss scale, but this optimiser's loss scaling is off (call "
             "set_loss_scaling first)");
    if (scale->dtype() != DType::f64 || scale->numel() != 1)
      refuse(ErrorCode::wrong_type, "'loss_scale' must be one f64");
    const double value = scale->to_vector<double>()[0];
    if (!(value > 0) || !std::isfinite(value))
      refuse(ErrorCode::invalid_select,
             "'loss_scale' is " + std::to_string(value) + ", not a positive finite scale");
  }
  const double new_scale = scale ? scale->to_vector<double>()[0] : scale_;
  const std::int64_t new_good_steps =
      good_steps ? counter_value("loss_scale_good_steps", *good_steps) : good_steps_;
  const std::int64_t new_skipped = skipped ? counter_value("skipped_steps", *skipped) : skipped_;
  std::vector<std::int64_t> counters;
  for (const auto& [name, value] : slots.counters) {
    const auto t = take(name);
    if (!t) refuse(ErrorCode::incompatible_shapes, "'" + name + "' is missing");
    counters.push_back(counter_value(name, *t));
  }
  std::vector<std::vector<Tensor>> tensors(slots.tensors.size(),
                                           std::vector<Tensor>(parameters_.size()));
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i].value();
    for (std::size_t k = 0; k < slots.tensors.size(); ++k) {
      const std::string name = std::to_string(i) + "." + slots.tensors[k].first;
      auto t = take(name);
      if (!t) continue;  // that parameter has not taken a step (or has no such state)
      if (t->shape() != p.shape())
        refuse(ErrorCode::incompatible_shapes, "'" + name + "' is " + shape_to_string(t->shape()) +
                                                   ", parameter " + std::to_string(i) + " is " +
                                                   shape_to_string(p.shape()));
      if (t->dtype() != p.dtype())
        refuse(ErrorCode::wrong_type, "'" + name + "' is " + dtype_name(t->dtype()) +
                                          ", parameter " + std::to_string(i) + " is " +
                                          dtype_name(p.dtype()));
      tensors[k][i] = std::move(*t);
    }
  }
  if (!given.empty())
    refuse(ErrorCode::incompatible_shapes, "'" + given.begin()->first +
                                               "' is not part of this optimiser's state (another "
                                               "optimiser, or a model with more parameters?)");
  set_lr(new_lr);  // checks the rate before anything else changes
  steps_ = new_steps;
  scale_ = new_scale;
  good_steps_ = new_good_steps;
  skipped_ = new_skipped;
  for (std::size_t k = 0; k < counters.size(); ++k) *slots.counters[k].second = counters[k];
  for (std::size_t k = 0; k < tensors.size(); ++k) *slots.tensors[k].second = std::move(tensors[k]);
}

}  // namespace kiln::nn
