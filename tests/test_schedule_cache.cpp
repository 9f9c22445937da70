// The CPU executor's schedule cache: a graph of the same structure as an earlier one (ops,
// dtypes, shapes, views, which values exist and which are wanted) reuses its schedule and
// compiled kernels; anything else gets a schedule of its own. Results are compared with the
// reference executor, so a plan reused where it must not be shows up as a wrong value.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "exec/schedule_cache.hpp"
#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln::detail::schedule_cache_counts;

class CpuExecutorScope {
 public:
  CpuExecutorScope() : previous_(kiln::current_executor()) {
    kiln::set_executor(kiln::cpu_executor());
  }
  ~CpuExecutorScope() { kiln::set_executor(previous_); }
  CpuExecutorScope(const CpuExecutorScope&) = delete;
  CpuExecutorScope& operator=(const CpuExecutorScope&) = delete;

 private:
  std::shared_ptr<kiln::Executor> previous_;
};

// The values `build` gives with the reference executor.
std::vector<double> reference_values(const std::function<Tensor()>& build) {
  const auto previous = kiln::current_executor();
  kiln::set_executor(kiln::reference_executor());
  std::vector<double> v = build().to_vector<double>();
  kiln::set_executor(previous);
  return v;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << "element " << i;
}

// Evaluates `build` with the CPU executor and returns (new hits, new misses).
std::pair<std::uint64_t, std::uint64_t> evaluate_counting(const std::function<Tensor()>& build,
                                                          std::vector<double>* values = nullptr) {
  const Tensor t = build();
  const auto before = schedule_cache_counts();
  t.eval();
  const auto after = schedule_cache_counts();
  if (values) *values = t.to_vector<double>();
  return {after.hits - before.hits, after.misses - before.misses};
}

TEST(ScheduleCache, SameStructureWithOtherValuesReusesThePlan) {
  CpuExecutorScope cpu;
  auto expression = [](std::uint64_t seed, float constant) {
    return [=] {
      const Tensor a = kiln::uniform({37, 29}, seed, DType::f32).eval();
      const Tensor b = kiln::uniform({29}, seed + 1, DType::f32).eval();
      return kiln::sum(kiln::exp(a * constant) + b, {1}) * kiln::max(a);
    };
  };
  std::vector<double> first, second;
  evaluate_counting(expression(1, 0.5f), &first);
  const auto [hits2, misses2] = evaluate_counting(expression(7, -2.0f), &second);
  EXPECT_EQ(misses2, 0u) << "the second graph has the first one's structure";
  EXPECT_GE(hits2, 1u);
  expect_near_all(first, reference_values(expression(1, 0.5f)));
  expect_near_all(second, reference_values(expression(7, -2.0f)));
}

TEST(ScheduleCache, ScalarConstantsAreReadFromEachGraph) {
  CpuExecutorScope cpu;
  const Tensor x = kiln::Tensor::from(std::vector<float>{1, 2, 3, 4}, {4});
  std::vector<float> previous;
  for (float c : {1.0f, 2.0f, -3.5f}) {
    const std::vector<float> got = (x * c + c).to_vector<float>();
    ASSERT_EQ(got.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(got[i], static_cast<float>(i + 1) * c + c);
    EXPECT_NE(got, previous);
    previous = got;
  }
}

TEST(ScheduleCache, OtherShapesViewsAndTargetsGetTheirOwnPlan) {
  CpuExecutorScope cpu;
  const Tensor a = kiln::uniform({16, 16}, 3, DType::f64).eval();
  const Tensor b = kiln::uniform({16, 16}, 4, DType::f64).eval();
  const Tensor c = kiln::uniform({16, 8}, 5, DType::f64).eval();
  auto plain = [&] { return kiln::sin(a) + b; };
  auto transposed = [&] { return kiln::sin(a) + kiln::transpose(b, 0, 1); };
  auto narrower = [&] { return kiln::sin(c) + c; };
  auto left = [&] { return kiln::sin(c) + kiln::slice(b, {0, 0}, {16, 8}); };
  auto right = [&] { return kiln::sin(c) + kiln::slice(b, {0, 8}, {16, 16}); };
  evaluate_counting(plain);  // cached from here on
  std::vector<double> got;
  EXPECT_EQ(evaluate_counting(plain).second, 0u);
  EXPECT_EQ(evaluate_counting(transposed, &got).second, 1u) << "a view that reorders elements";
  expect_near_all(got, reference_values(transposed));
  EXPECT_EQ(evaluate_counting(narrower, &got).second, 1u) << "other shapes";
  expect_near_all(got, reference_values(narrower));
  // The same view op, reading other elements.
  EXPECT_EQ(evaluate_counting(left, &got).second, 1u);
  expect_near_all(got, reference_values(left));
  EXPECT_EQ(evaluate_counting(right, &got).second, 1u);
  expect_near_all(got, reference_values(right));

  // An intermediate that is also requested is stored, so the plan differs.
  const auto before = schedule_cache_counts();
  const Tensor s = kiln::sin(a);
  const Tensor y = s + b;
  kiln::eval_all({y, s});
  EXPECT_EQ(schedule_cache_counts().misses - before.misses, 1u);
  expect_near_all(s.to_vector<double>(), reference_values([&] { return kiln::sin(a); }));
  expect_near_all(y.to_vector<double>(), reference_values(plain));
}

TEST(ScheduleCache, RandomSeedsAndCustomFunctionsAreHonoured) {
  CpuExecutorScope cpu;
  // The seed is read when the kernel runs: equal structure, different values.
  const std::vector<double> r1 = (kiln::uniform({64}, 11, DType::f64) * 2.0).to_vector<double>();
  const std::vector<double> r2 = (kiln::uniform({64}, 12, DType::f64) * 2.0).to_vector<double>();
  EXPECT_NE(r1, r2);
  expect_near_all(r2, reference_values([] { return kiln::uniform({64}, 12, DType::f64) * 2.0; }));
  // Two different callables never share a compiled kernel.
  const Tensor x = kiln::uniform({32}, 13, DType::f64).eval();
  const std::vector<double> twice =
      (kiln::map_elements(x, [](double v) { return 2 * v; }) + 1.0).to_vector<double>();
  const std::vector<double> cubed =
      (kiln::map_elements(x, [](double v) { return v * v * v; }) + 1.0).to_vector<double>();
  const std::vector<double> xs = x.to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_DOUBLE_EQ(twice[i], 2 * xs[i] + 1);
    EXPECT_DOUBLE_EQ(cubed[i], xs[i] * xs[i] * xs[i] + 1);
  }
}

TEST(ScheduleCache, TrainingStepsStopSchedulingAfterTheFirst) {
  CpuExecutorScope cpu;
  const Tensor input = kiln::uniform({8, 5}, 21, DType::f32).eval();
  Tensor w = kiln::uniform({5, 3}, 22, DType::f32).eval();
  Tensor bias = kiln::uniform({3}, 23, DType::f32).eval();
  std::vector<std::uint64_t> misses;
  std::vector<double> losses;
  for (int step = 0; step < 4; ++step) {
    Tensor loss;
    {
      kiln::GradientContext context;
      w.watch();
      bias.watch();
      loss = kiln::mean(kiln::square(kiln::tanh(kiln::matmul(input, w) + bias)));
    }
    const std::vector<Tensor> g = kiln::gradients(loss, {w, bias});
    Tensor new_w = w - g[0] * 0.5f, new_bias = bias - g[1] * 0.5f;
    const auto before = schedule_cache_counts();
    kiln::eval_all({loss, new_w, new_bias});
    misses.push_back(schedule_cache_counts().misses - before.misses);
    losses.push_back(loss.item<double>());
    w = new_w;
    bias = new_bias;
  }
  EXPECT_EQ(misses[2], 0u);
  EXPECT_EQ(misses[3], 0u);
  EXPECT_LT(losses[3], losses[0]) << "the steps train";
}

}  // namespace
