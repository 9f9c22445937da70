// Four threads build on, evaluate and differentiate shared and independent graphs at the same
// time, through the C++ and the C API, and check every result. flint.h promises that building
// from several threads is safe; this test is run under ThreadSanitizer by scripts/test.sh, where
// a data race fails it, and in the ordinary and ASan+UBSan builds, where wrong values do.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "flint.h"
#include "kiln/kiln.hpp"

namespace {

using kiln::Tensor;

constexpr int kThreads = 4;
constexpr int kRounds = 60;
constexpr std::int64_t kSize = 64;

// Runs body(thread index) on kThreads threads at once.
template <class Body> void on_threads(Body body) {
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();  // start together
      body(t);
    });
  for (auto& t : threads) t.join();
}

std::vector<double> values_of(std::int64_t n, double scale) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = scale * double(i % 7 - 3);
  return v;
}

TEST(ThreadStress, BuildEvaluateAndDifferentiateSharedGraphs) {
  const std::vector<double> av = values_of(kSize, 0.5), bv = values_of(kSize, 0.25);
  const Tensor a = Tensor::from(av, {kSize});
  const Tensor b = Tensor::from(bv, {kSize});
  a.watch();
  // Fresh shared nodes for every round, so that each round races anew. Built outside a context
  // (a view): the first thread to evaluate one turns it into a leaf while the others build views
  // on it and walk through it. Built inside one: kept whole, differentiated through by every
  // thread while another evaluates it.
  std::vector<Tensor> shared, differentiable;
  for (int round = 0; round < kRounds; ++round) {
    shared.push_back(kiln::slice(a * b + double(round), {0}, {kSize}, {1}));
    kiln::GradientContext ctx;
    differentiable.push_back(kiln::exp(a * 0.1) * b + double(round));
  }
  std::atomic<int> wrong{0};
  on_threads([&](int t) {
    for (int round = 0; round < kRounds; ++round) {
      const double k = t + 1 + round % 3;
      if (round % kThreads == t) {
        shared[round].eval();
        differentiable[round].eval();
      }
      // Build on the shared node and evaluate, while other threads do the same.
      const Tensor u = kiln::relu(kiln::reshape(shared[round], {kSize / 2, 2})) * k;
      if (kiln::topological_order(u).empty()) ++wrong;
      const std::vector<double> uv = u.to_vector<double>();
      for (std::int64_t i = 0; i < kSize; ++i) {
        const double want = std::max(0.0, av[i] * bv[i] + round) * k;
        if (uv[static_cast<std::size_t>(i)] != want) ++wrong;
      }
      // Differentiate through the shared differentiable node, in this thread's own context.
      Tensor y;
      {
        kiln::GradientContext ctx;
        y = kiln::sum(differentiable[round] * k);
      }
      const std::vector<double> g = kiln::gradient(y, a).to_vector<double>();
      for (std::int64_t i = 0; i < kSize; ++i) {
        const double want = k * 0.1 * std::exp(av[i] * 0.1) * bv[i];
        if (std::abs(g[static_cast<std::size_t>(i)] - want) > 1e-12 * (1 + std::abs(want))) ++wrong;
      }
      // An independent graph of this thread's own, grown past the auto-evaluation depth.
      if (round % 10 == 0) {
        Tensor x = kiln::zeros({8}, kiln::DType::f64);
        for (int i = 0; i < 5000; ++i) x = x + 1.0;
        if (x.to_vector<double>()[7] != 5000.0) ++wrong;
      }
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ThreadStress, TheCApiBuildsAndEvaluatesSharedNodes) {
  std::vector<double> data = values_of(kSize, 1.0);
  const size_t shape = kSize;
  FGraphNode* a = fCreateGraph(data.data(), kSize, F_FLOAT64, &shape, 1);
  ASSERT_NE(a, nullptr);
  FGraphNode* shared = fmul_cd(a, 2.0);  // evaluated by every thread at once
  ASSERT_NE(shared, nullptr);
  // Freeing a node frees the predecessors nothing else uses: this user keeps `shared` (and `a`)
  // alive while the threads free their own sums.
  FGraphNode* keep = fadd_g(shared, a);
  ASSERT_NE(keep, nullptr);
  std::atomic<int> wrong{0};
  on_threads([&](int t) {
    for (int round = 0; round < kRounds; ++round) {
      FGraphNode* sum = fadd_g(shared, a);  // built while other threads evaluate `shared`
      if (sum == nullptr || fCalculateResult(sum) == nullptr) {
        ++wrong;
        continue;
      }
      const double* s = static_cast<const double*>(sum->result_data->data);
      for (std::int64_t i = 0; i < kSize; ++i)
        if (s[i] != 3.0 * data[static_cast<std::size_t>(i)]) ++wrong;
      if (fCalculateResult(shared) == nullptr || fSyncMemory(shared) == nullptr) ++wrong;
      FGraphNode* own = fadd_cd(fconstant_d(double(t), &shape, 1), 1.0);
      if (own == nullptr || fCalculateResult(own) == nullptr ||
          static_cast<const double*>(own->result_data->data)[0] != t + 1.0)
        ++wrong;
      fFreeGraph(own);
      fFreeGraph(sum);
    }
  });
  EXPECT_EQ(wrong.load(), 0);
  fFreeGraph(keep);
}

}  // namespace
