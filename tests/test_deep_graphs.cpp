// Gradients of very deep graphs finish in bounded time, inside or outside a gradient context,
// through the C++ and the C API; and a gradient context is a property of its thread.
#include <gtest/gtest.h>

#include <chrono>
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
// 4096 built outside a context evaluated the forward graph below it again (8000 deep: minutes).
double time_limit() { return kiln_test::slow_build() ? 120.0 : 30.0; }

// y = x + x + ... (kDepth additions, inside a context): dy/dx = kDepth + 1.
Tensor deep_sum(const Tensor& x) {
  kiln::GradientContext ctx;
  Tensor y = x;
  for (int i = 0; i < kDepth; ++i) y = y + x;
  return y;
}

TEST(DeepGraphs, GradientOutsideAContext) {
  const Tensor x = kiln::full({2}, 0.5, kiln::DType::f64);
  x.watch();
  const Tensor y = deep_sum(x);
  const auto start = Clock::now();
  const Tensor g = kiln::gradient(y, x);  // of sum(y)
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{kDepth + 1.0, kDepth + 1.0}));
  EXPECT_LT(seconds_since(start), time_limit());
}

TEST(DeepGraphs, GradientInsideAContext) {
  const Tensor x = kiln::full({2}, 0.5, kiln::DType::f64);
  x.watch();
  const Tensor y = deep_sum(x);
  const auto start = Clock::now();
  kiln::GradientContext ctx;
  const Tensor g = kiln::gradient(kiln::sum(y), x);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{kDepth + 1.0, kDepth + 1.0}));
  EXPECT_LT(seconds_since(start), time_limit());
}

TEST(DeepGraphs, BackwardOutsideAContext) {
  const Tensor x = kiln::full({}, 2.0, kiln::DType::f64);
  x.watch();
  const Tensor y = deep_sum(x);
  const auto start = Clock::now();
  y.backward();
  EXPECT_EQ(x.grad().item<double>(), kDepth + 1.0);
  EXPECT_LT(seconds_since(start), time_limit());
}

TEST(DeepGraphs, GradientThroughTheCApi) {
  const double one = 1.0;
  const size_t shape = 1;
  FGraphNode* x = fCreateGraph(&one, 1, F_FLOAT64, &shape, 1);
  ASSERT_NE(x, nullptr);
  fMarkGradientVariable(x);
  fStartGradientContext();
  FGraphNode* y = x;
  for (int i = 0; i < kDepth; ++i) {
    y = fmul_cd(y, 1.0);
    ASSERT_NE(y, nullptr) << fErrorMessage();
  }
  fStopGradientContext();
  const auto start = Clock::now();
  FGraphNode* g = fCalculateGradient(y, x);
  ASSERT_NE(g, nullptr) << fErrorMessage();
  g = fCalculateResult(g);
  ASSERT_NE(g, nullptr) << fErrorMessage();
  ASSERT_NE(g->result_data, nullptr);
  EXPECT_EQ(static_cast<const double*>(g->result_data->data)[0], 1.0);
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
