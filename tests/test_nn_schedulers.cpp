// Learning-rate schedules: the rate after each step() against the schedules' formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::ErrorCode;
using kiln_test::code_of;

kiln::nn::Parameter weight() { return kiln::nn::Parameter("w", kiln::zeros({2})); }

// The rates after each of `steps` calls of step().
std::vector<double> rates(kiln::nn::LRScheduler& s, int steps) {
  std::vector<double> r;
  for (int i = 0; i < steps; ++i) {
    s.step();
    r.push_back(s.last_lr());
  }
  return r;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "at " << i;
}

// The rate of each training step, from the first (before any step()) as PyTorch's schedulers
// give it: 0, 0.0001, 0.0002, ... for a 10-step warm-up of 0.001 (the example of a user who found
// the first step at the full rate).
TEST(NnSchedulers, TheFirstStepRunsAtTheScheduledRate) {
  kiln::nn::SGD sgd({weight()}, {.lr = 0.001});
  kiln::nn::CosineAnnealingLR s(sgd, 100, 0.0, 10);
  std::vector<double> used{sgd.lr()};
  for (int i = 0; i < 3; ++i) {
    s.step();
    used.push_back(sgd.lr());
  }
  expect_near(used, {0.0, 0.0001, 0.0002, 0.0003});
  // Schedules without a warm-up start at the base rate.
  kiln::nn::SGD plain({weight()}, {.lr = 0.5});
  kiln::nn::ExponentialLR e(plain, 0.9);
  EXPECT_EQ(plain.lr(), 0.5);
}

TEST(NnSchedulers, StepMultiStepExponential) {
  kiln::nn::SGD sgd({weight()}, {.lr = 1.0});
  kiln::nn::StepLR step(sgd, 2, 0.5);
  expect_near(rates(step, 5), {1, 0.5, 0.5, 0.25, 0.25});
  kiln::nn::SGD sgd2({weight()}, {.lr = 2.0});
  kiln::nn::MultiStepLR multi(sgd2, {1, 3}, 0.1);
  expect_near(rates(multi, 4), {0.2, 0.2, 0.02, 0.02});
  kiln::nn::SGD sgd3({weight()}, {.lr = 1.0});
  kiln::nn::ExponentialLR expo(sgd3, 0.9);
  expect_near(rates(expo, 3), {0.9, 0.81, 0.729});
  EXPECT_EQ(expo.last_epoch(), 3);
  EXPECT_EQ(code_of([&] { kiln::nn::StepLR(sgd, 0); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::nn::MultiStepLR(sgd, {3, 1}); }), ErrorCode::invalid_select);
}

TEST(NnSchedulers, CosineWithWarmup) {
  kiln::nn::Adam adam({weight()}, {.lr = 0.1});
  kiln::nn::CosineAnnealingLR cos(adam, 6, 0.01, 2);
  // The first training step runs at the warm-up's start, 0, as PyTorch's warm-up does.
  EXPECT_EQ(adam.lr(), 0.0);
  std::vector<double> want;
  for (int e = 1; e <= 8; ++e) {
    if (e < 2) want.push_back(0.1 * e / 2);
    else if (e >= 6) want.push_back(0.01);
    else want.push_back(0.01 + 0.09 * (1 + std::cos(std::numbers::pi * (e - 2) / 4.0)) / 2);
  }
  expect_near(rates(cos, 8), want);
  // Without warm-up: PyTorch's closed form, starting from the base rate.
  kiln::nn::Adam plain({weight()}, {.lr = 0.1});
  kiln::nn::CosineAnnealingLR c(plain, 4);
  expect_near(rates(c, 4), {0.05 * (1 + std::cos(std::numbers::pi / 4)), 0.05,
                            0.05 * (1 + std::cos(3 * std::numbers::pi / 4)), 0});
}

TEST(NnSchedulers, OneCycle) {
  kiln::nn::SGD sgd({weight()}, {.lr = 123.0});
  kiln::nn::OneCycleLR one(sgd, 1.0, 10, 0.3, 25, 1e4);
  // Set when made to the schedule at step 0 (cosine annealing at its start, as PyTorch computes it).
  EXPECT_NEAR(sgd.lr(), 1.0 / 25, 1e-15);
  const double warm_end = 0.3 * 10 - 1, initial = 0.04, min = 0.04 / 1e4;
  std::vector<double> want;
  for (int e = 1; e <= 9; ++e) {
    if (e <= warm_end)
      want.push_back(1.0 + (initial - 1.0) * (1 + std::cos(std::numbers::pi * e / warm_end)) / 2);
    else
      want.push_back(min + (1.0 - min) *
                               (1 + std::cos(std::numbers::pi * (e - warm_end) / (9 - warm_end))) /
                               2);
  }
  expect_near(rates(one, 9), want);
  EXPECT_NEAR(sgd.lr(), min, 1e-15);  // the last step ends at the minimum
}

TEST(NnSchedulers, ReduceOnPlateau) {
  kiln::nn::SGD sgd({weight()}, {.lr = 1.0});
  kiln::nn::ReduceLROnPlateau plateau(sgd, 0.5, 1, 0.0, 1, 0.2);
  // Improves, then two bad steps (more than patience 1): halved; one cooldown step; then two
  // bad steps again: halved; later reductions stop at min_lr.
  const double metrics[] = {5, 4, 4, 4, 4, 4, 4, 4, 4, 4};
  const double want[] = {1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2};
  for (int i = 0; i < 10; ++i) {
    plateau.step(metrics[i]);
    EXPECT_DOUBLE_EQ(sgd.lr(), want[i]) << "after step " << i;
  }
  EXPECT_EQ(plateau.best(), 4);
}

}  // namespace
