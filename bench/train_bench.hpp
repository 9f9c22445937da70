// Shared vocabulary of kiln_train_bench: what one side (kiln, or libtorch in one thread
// configuration) is asked to do, what it reports back, and the batches both sides train on.
#pragma once

#include <kiln/data.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bench {

struct TrainSpec {
  std::string data_dir = kiln::data::fashion_mnist_default_dir;
  std::int64_t batch_size = 64;
  int warmup = 3;            // untimed batches first (kernel set-up, first allocations)
  int batches = 150;         // timed batches (ignored with full_epoch)
  bool full_epoch = false;   // time one whole epoch instead
  std::uint64_t seed = 1;    // initialisation, shuffling, dropout
  // The type the layers compute in: f32, or bf16 / f16 for mixed precision (kiln's nn::Autocast,
  // libtorch's CPU autocast; parameters f32 on both sides).
  kiln::DType dtype = kiln::DType::f32;
};

// What a side reports to the parent through a pipe, so it must be trivially copyable. Peak
// memory is not in here: the parent reads it from wait4() when the child has exited.
struct SideResult {
  bool ok = false;
  char error[480] = {};
  std::int64_t timed_batches = 0;
  std::int64_t timed_images = 0;
  std::int64_t epoch_batches = 0;  // batches in one epoch of the training set
  double timed_seconds = 0;        // wall time of the timed batches
  double first_loss = 0;           // loss of the first (warm-up) batch
  double last_loss = 0;            // mean loss of the last (up to) 10 timed batches
  double start_rss_mb = -1;        // resident memory when training started (data loaded)
  bool peak_reset = false;         // the peak was reset then, so it excludes data loading
};

// Example indices of every batch, in training order.
struct BatchPlan {
  std::vector<std::vector<std::int64_t>> warmup, timed;
  std::int64_t epoch_batches = 0;
};

// train_plan.cpp: the batches kiln::data::BatchIterator (shuffling with spec.seed) gives over a
// training set with these labels: the first spec.warmup batches of epoch 0, then either the next
// spec.batches (going on into later epochs when needed) or, with spec.full_epoch, all of epoch 1.
// Both sides use this plan, so they train on the same images in the same order.
BatchPlan plan_batches(const kiln::Tensor& labels, const TrainSpec& spec);

// train_loop.cpp: runs `step` (one training step on the given examples, returning its loss) on
// the warm-up batches, then times it on the timed ones; fills the timing and loss fields.
using TrainStep = std::function<double(const std::vector<std::int64_t>& examples)>;
void run_batches(const BatchPlan& plan, const TrainStep& step, SideResult& result);

// train_kiln.cpp / train_torch.cpp: one side, run inside the child process. They set their
// threads first, load the data with kiln::data and fill everything but `ok` and `error`; errors
// are thrown.
void train_kiln(const TrainSpec& spec, int threads, SideResult& result);
#ifdef KILN_BENCH_HAVE_TORCH
struct TorchConfig;
void train_torch(const TrainSpec& spec, const TorchConfig& config, SideResult& result);
// "libtorch <version> (oneDNN convolutions: yes|no)"
std::string torch_build_info();
#endif

}  // namespace bench
