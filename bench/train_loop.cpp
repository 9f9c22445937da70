// The loop both sides of kiln_train_bench run: untimed warm-up batches, then the timed ones.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "train_bench.hpp"

namespace bench {

void run_batches(const BatchPlan& plan, const TrainStep& step, SideResult& result) {
  auto checked = [&](const std::vector<std::int64_t>& batch, std::size_t i) {
    const double loss = step(batch);
    // A diverging side would still be timed, but its numbers would mean nothing.
    if (!std::isfinite(loss))
      throw std::runtime_error("the training loss is not finite at batch " + std::to_string(i));
    return loss;
  };
  bool first = true;
  std::size_t index = 0;
  for (const auto& batch : plan.warmup) {
    const double loss = checked(batch, index++);
    if (first) result.first_loss = loss;
    first = false;
  }

  // The mean of the last (up to) 10 losses: one batch's loss is too noisy to compare sides.
  const std::size_t tail = std::min<std::size_t>(10, plan.timed.size());
  double tail_sum = 0;
  std::int64_t images = 0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (std::size_t i = 0; i < plan.timed.size(); ++i) {
    const double loss = checked(plan.timed[i], index++);
    if (first) result.first_loss = loss;
    first = false;
    if (i + tail >= plan.timed.size()) tail_sum += loss;
    images += static_cast<std::int64_t>(plan.timed[i].size());
  }
  result.timed_seconds = std::chrono::duration<double>(clock::now() - start).count();
  result.timed_batches = static_cast<std::int64_t>(plan.timed.size());
  result.timed_images = images;
  result.epoch_batches = plan.epoch_batches;
  result.last_loss = tail > 0 ? tail_sum / static_cast<double>(tail) : result.first_loss;
}

}  // namespace bench
