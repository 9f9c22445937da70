// Soak: thousands of training steps of a small model, in which resident memory must stop growing
// once the caches (schedules, kernels, buffers) are warm. A leak of a few hundred bytes a step
// shows as megabytes here.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::Tensor;
namespace nn = kiln::nn;

// Resident set size in bytes, from /proc/self/statm.
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * 4096.0;
}

TEST(NnTraining, ResidentMemoryStopsGrowingOverThousandsOfSteps) {
  if (kiln_test::slow_build())
    GTEST_SKIP() << "resident memory is not meaningful under sanitizers (freed memory is held in "
                    "quarantine) or in unoptimised builds; the Release run checks it";
  nn::manual_seed(3);
  nn::Sequential model(nn::Linear(64, 48), nn::ReLU(), nn::Dropout(0.1), nn::Linear(48, 10));
  nn::Adam opt(model.parameters(), {.lr = 1e-3});
  const Tensor images = kiln::uniform({32, 64}, 11, kiln::DType::f32);
  std::vector<std::int64_t> label_values(32);
  for (int i = 0; i < 32; ++i) label_values[i] = i % 10;
  const Tensor labels = Tensor::from(label_values, {32});
  constexpr int kWarmup = 1000, kSteps = 4000;
  double after_warmup = 0, first_loss = 0, last_loss = 0;
  for (int step = 0; step < kSteps; ++step) {
    Tensor loss;
    {
      kiln::GradientContext ctx;
      loss = nn::cross_entropy(model(images), labels);
    }
    opt.step(loss);
    const double value = loss.item<double>();
    if (step == 0) first_loss = value;
    last_loss = value;
    if (step + 1 == kWarmup) after_warmup = resident_bytes();
  }
  const double growth = resident_bytes() - after_warmup;
  std::printf("[ soak: %d steps, loss %.3f -> %.3f, resident %.1f MiB after warm-up, %+.2f MiB "
              "over the last %d steps ]\n",
              kSteps, first_loss, last_loss, after_warmup / (1 << 20), growth / (1 << 20),
              kSteps - kWarmup);
  EXPECT_LT(last_loss, first_loss);
  EXPECT_LT(growth, 2.0 * (1 << 20));
}

}  // namespace
