// Threads: the gradient mode is per thread, and independent graphs built, evaluated and
// differentiated on several threads at once give the values of a single-threaded run.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "graph/node.hpp"
#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;

// x + 1 applied `steps` times outside any gradient context: graphs this deep are evaluated as
// they grow (the node's depth stays bounded) unless the building thread is in a context.
Tensor long_chain(std::int64_t steps) {
  Tensor x = kiln::zeros({4}, DType::f64);
  for (std::int64_t i = 0; i < steps; ++i) x = x + 1.0;
  return x;
}

TEST(Threads, AGradientContextOnOneThreadLeavesOtherThreadsAlone) {
  std::atomic<bool> inside{false}, others_done{false};
  std::atomic<int> failures{0};
  std::thread differentiating([&] {
    kiln::GradientContext context;
    inside = true;
    const Tensor w = kiln::tensor({1.0, 2.0, 3.0}).watch();
    const Tensor y = kiln::sum(w * w);
    if (!y.node()->in_gradient_context) ++failures;
    while (!others_done) std::this_thread::yield();
    // Still inside the context after the others built their graphs: the gradient is there.
    if (kiln::gradient(y, w).to_vector<double>() != std::vector<double>{2, 4, 6}) ++failures;
    w.unwatch();
  });
  while (!inside) std::this_thread::yield();
  std::vector<std::thread> plain;
  for (int t = 0; t < 3; ++t)
    plain.emplace_back([&] {
      if (kiln::in_gradient_context()) ++failures;
      const Tensor x = long_chain(10000);
      // Evaluated along the way (a thread in a context would have kept all 10000 nodes).
      if (x.node()->in_gradient_context || x.node()->depth > 5000) ++failures;
      if (x.to_vector<double>() != std::vector<double>(4, 10000.0)) ++failures;
      const Tensor m = kiln::matmul(kiln::ones({8, 8}), kiln::ones({8, 8}));
      if (kiln::sum(m).item<float>() != 512.f) ++failures;
    });
  for (std::thread& t : plain) t.join();
  others_done = true;
  differentiating.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_FALSE(kiln::in_gradient_context());
}

// A small two-layer network's loss and its gradients, from seeded parameters.
std::vector<std::vector<float>> train_step(std::uint64_t seed) {
  const Tensor x = kiln::uniform({16, 8}, seed, DType::f32);
  const Tensor w1 = kiln::uniform({8, 12}, seed + 1, DType::f32).watch();
  const Tensor w2 = kiln::uniform({12, 3}, seed + 2, DType::f32).watch();
  std::vector<Tensor> g;
  Tensor loss;
  {
    kiln::GradientContext context;
    const Tensor h = kiln::tanh(kiln::matmul(x, w1));
    loss = kiln::mean(kiln::square(kiln::matmul(h, w2) - 0.5f));
    g = kiln::gradients(loss, {w1, w2});
  }
  w1.unwatch();
  w2.unwatch();
  return {loss.to_vector<float>(), g[0].to_vector<float>(), g[1].to_vector<float>()};
}

TEST(Threads, FourThreadsDifferentiateIndependentGraphsAsOneThreadDoes) {
  std::vector<std::vector<std::vector<float>>> want;
  for (std::uint64_t s = 0; s < 4; ++s) want.push_back(train_step(100 + 10 * s));
  std::vector<std::vector<std::vector<std::vector<float>>>> got(4);
  std::vector<std::thread> threads;
  for (std::uint64_t s = 0; s < 4; ++s)
    threads.emplace_back([&, s] {
      for (int round = 0; round < 10; ++round) got[s].push_back(train_step(100 + 10 * s));
    });
  for (std::thread& t : threads) t.join();
  for (std::size_t s = 0; s < 4; ++s)
    for (std::size_t round = 0; round < got[s].size(); ++round)
      EXPECT_EQ(got[s][round], want[s]) << "thread " << s << ", round " << round;
}

}  // namespace
