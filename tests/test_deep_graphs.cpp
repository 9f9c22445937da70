// Gradients of very deep graphs finish in bounded time, inside or outside a gradient context,
// through the C++ and the C API; and a gradient context is a property of its thread.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>
#include <thread>

#include "flint.h"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::Tensor;
using Clock = std::chrono::steady_clock;

constexpr int kDepth = 100000;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Linear in the depth, these take well under a second; before, every backward node beyond depth
// 4096 built outside a context evaluated the forward graph below it again (8000 deep: minutes, so
// hours at this depth). Under ASan the linear walk itself takes up to two minutes when two
// whole-suite processes share two cores, hence the sanitizer builds' five.
double time_limit() { return kiln_test::slow_build() ? 300.0 : 30.0; }

// y = sin(sin(...sin(x))) (kDepth times, inside a context). Each backward node reads the forward
// node at its depth (cos of it), which is what made the old auto-evaluation quadratic.
Tensor deep_sines(const Tensor& x) {
  kiln::GradientContext ctx;
  Tensor y = x;
  for (int i = 0; i < kDepth; ++i) y = kiln::sin(y);
  return y;
}

// dy/dx of deep_sines at x: the product of cos over the chain.
double deep_sines_slope(double x) {
  double slope = 1;
  for (int i = 0; i < kDepth; ++i) {
    slope *= std::cos(x);
    x = std::sin(x);
  }
  return slope;
}

void expect_slopes(const std::vector<double>& got, double x) {
  const double want = deep_sines_slope(x);
  for (double g : got) EXPECT_NEAR(g, want, 1e-9 * std::abs(want)) << "at x = " << x;
}

TEST(DeepGraphs, GradientOutsideAContext) {
  const Tensor x = kiln::full({2}, 0.5, kiln::DType::f64);
  x.watch();
  const Tensor y = deep_sines(x);
  const auto start = Clock::now();
  const Tensor g = kiln::gradient(y, x);  // of sum(y)
  expect_slopes(g.to_vector<double>(), 0.5);
  EXPECT_LT(seconds_since(start), time_limit());
}

TEST(DeepGraphs, GradientInsideAContext) {
  const Tensor x = kiln::full({2}, 0.5, kiln::DType::f64);
  x.watch();
  const Tensor y = deep_sines(x);
  const auto start = Clock::now();
  kiln::GradientContext ctx;
  const Tensor g = kiln::gradient(kiln::sum(y), x);
  expect_slopes(g.to_vector<double>(), 0.5);
  EXPECT_LT(seconds_since(start), time_limit());
}

TEST(DeepGraphs, BackwardOutsideAContext) {
  const Tensor x = kiln::full({}, 2.0, kiln::DType::f64);
  x.watch();
  const Tensor y = deep_sines(x);
  const auto start = Clock::now();
  y.backward();
  expect_slopes({x.grad().item<double>()}, 2.0);
  EXPECT_LT(seconds_since(start), time_limit());
}

TEST(DeepGraphs, GradientThroughTheCApi) {
  const double half = 0.5;
  const size_t shape = 1;
  FGraphNode* x = fCreateGraph(&half, 1, F_FLOAT64, &shape, 1);
  ASSERT_NE(x, nullptr);
  fMarkGradientVariable(x);
  fStartGradientContext();
  FGraphNode* y = x;
  for (int i = 0; i < kDepth; ++i) {
    y = fsin(y);
    ASSERT_NE(y, nullptr) << fErrorMessage();
  }
  fStopGradientContext();
  const auto start = Clock::now();
  FGraphNode* g = fCalculateGradient(y, x);
  ASSERT_NE(g, nullptr) << fErrorMessage();
  g = fCalculateResult(g);
  ASSERT_NE(g, nullptr) << fErrorMessage();
  ASSERT_NE(g->result_data, nullptr);
  expect_slopes({static_cast<const double*>(g->result_data->data)[0]}, 0.5);
  EXPECT_LT(seconds_since(start), time_limit());
  fFreeGraph(g);
  fFreeGraph(y);
}

TEST(GradientContextThreads, AContextOnOneThreadLeavesOtherThreadsAlone) {
  kiln::GradientContext ctx;  // on this thread only
  bool other_in_context = true;
  std::size_t nodes_kept = 0;
  std::thread other([&] {
    other_in_context = kiln::in_gradient_context();
    // Outside a context a loop's graph is evaluated as it grows; it must not be kept whole.
    Tensor x = kiln::zeros({1000}, kiln::DType::f32);
    const Tensor y = kiln::ones({1000}, kiln::DType::f32);
    for (int i = 0; i < 10000; ++i) x = x + y;
    nodes_kept = kiln::topological_order(x).size();
    EXPECT_EQ(x.to_vector<float>()[999], 10000.0f);
  });
  other.join();
  EXPECT_FALSE(other_in_context);
  EXPECT_LT(nodes_kept, 5000u);
  EXPECT_TRUE(kiln::in_gradient_context());
}

TEST(GradientContextThreads, StoppingOnAnotherThreadDoesNotEndThisOne) {
  kiln::start_gradient_context();
  std::thread other([] { kiln::stop_gradient_context(); });
  other.join();
  EXPECT_TRUE(kiln::in_gradient_context());
  kiln::stop_gradient_context();
  EXPECT_FALSE(kiln::in_gradient_context());
}

}  // namespace
