// The batches both sides of kiln_train_bench train on, taken from kiln::data::BatchIterator's
// shuffled order so that they are the batches the training example would see.
#include <kiln/error.hpp>

#include <algorithm>

#include "train_bench.hpp"

namespace bench {

namespace {

// Cuts epochs of the iterator's order into batches, one after the other.
class BatchCutter {
 public:
  explicit BatchCutter(kiln::data::BatchIterator& it) : it_(it) {}

  std::vector<std::int64_t> next() {
    const auto& order = it_.order();
    const auto n = static_cast<std::int64_t>(order.size());
    if (position_ >= n) start_epoch(epoch_ + 1);
    const std::int64_t count = std::min(it_.batch_size(), n - position_);
    std::vector<std::int64_t> batch(order.begin() + position_, order.begin() + position_ + count);
    position_ += count;
    return batch;
  }

  void start_epoch(std::int64_t epoch) {
    it_.start_epoch(epoch);
    epoch_ = epoch;
    position_ = 0;
  }

 private:
  kiln::data::BatchIterator& it_;
  std::int64_t epoch_ = 0, position_ = 0;
};

}  // namespace

BatchPlan plan_batches(const kiln::Tensor& labels, const TrainSpec& spec) {
  if (labels.numel() == 0)
    throw kiln::Error(kiln::ErrorCode::io_error, "kiln_train_bench: the training set is empty");
  // The order depends only on the number of examples and the seed, and the plan reads no images:
  // the labels stand in for them, so a side need not hold the images as kiln tensors.
  kiln::data::BatchIterator it({labels, labels}, spec.batch_size, /*shuffle=*/true, spec.seed);
  BatchPlan plan;
  plan.epoch_batches = it.num_batches();
  BatchCutter cutter(it);
  for (int i = 0; i < spec.warmup; ++i) plan.warmup.push_back(cutter.next());
  if (spec.full_epoch) {
    cutter.start_epoch(1);
    for (std::int64_t i = 0; i < plan.epoch_batches; ++i) plan.timed.push_back(cutter.next());
  } else {
    for (int i = 0; i < spec.batches; ++i) plan.timed.push_back(cutter.next());
  }
  return plan;
}

}  // namespace bench
