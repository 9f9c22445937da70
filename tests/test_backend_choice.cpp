// Choosing the executor per call: Tensor::eval(executor) and find_executor, beside the current
// executor that eval() uses.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "flint.h"
#include "kiln/executor.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::Tensor;

// An executor that counts its evaluations and lets `inner` compute them.
class Counting final : public kiln::Executor {
 public:
  explicit Counting(std::shared_ptr<kiln::Executor> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return "counting"; }
  void execute(std::span<kiln::detail::Node* const> targets) override {
    ++calls;
    inner_->execute(targets);
  }
  int calls = 0;

 private:
  std::shared_ptr<kiln::Executor> inner_;
};

TEST(BackendChoice, EvalOnAGivenExecutorLeavesTheCurrentOneAlone) {
  const std::shared_ptr<kiln::Executor> before = kiln::current_executor();
  auto current = std::make_shared<Counting>(kiln::reference_executor());
  kiln::set_executor(current);
  Counting chosen(kiln::cpu_executor());
  const Tensor x = kiln::exp(kiln::linspace(0, 1, 5)) * 2.f;
  x.eval(chosen);
  EXPECT_EQ(chosen.calls, 1);
  EXPECT_EQ(current->calls, 0);
  EXPECT_TRUE(x.is_evaluated());
  const Tensor y = kiln::exp(kiln::linspace(0, 1, 5)) * 2.f;
  y.eval();  // on the current executor
  EXPECT_EQ(current->calls, 1);
  EXPECT_EQ(chosen.calls, 1);
  // The CPU executor's values (SLEEF's exp) and the reference's agree to f32 rounding.
  const std::vector<float> a = x.to_vector<float>(), b = y.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6f * b[i]);
  kiln::set_executor(before);
}

TEST(BackendChoice, FlintsCpuExecutionRunsOnTheCpuExecutor) {
  // fExecuteGraph_cpu names the CPU backend; fExecuteGraph takes the current executor.
  const std::shared_ptr<kiln::Executor> before = kiln::current_executor();
  auto current = std::make_shared<Counting>(kiln::reference_executor());
  kiln::set_executor(current);
  float data[] = {1, 2, 3};
  size_t shape[] = {3};
  FGraphNode* a = fCreateGraph(data, 3, F_FLOAT32, shape, 1);
  FGraphNode* b = fmul(a, a);
  ASSERT_NE(fExecuteGraph_cpu(b), nullptr);
  EXPECT_EQ(current->calls, 0);
  ASSERT_NE(b->result_data, nullptr);
  const float* values = static_cast<const float*>(b->result_data->data);
  EXPECT_EQ(std::vector<float>(values, values + 3), (std::vector<float>{1, 4, 9}));
  FGraphNode* c = fadd(b, a);
  ASSERT_NE(fExecuteGraph(c), nullptr);
  EXPECT_EQ(current->calls, 1);
  fFreeGraph(c);
  kiln::set_executor(before);
}

TEST(BackendChoice, FindExecutorByName) {
  for (const auto& e : kiln::executors()) EXPECT_EQ(kiln::find_executor(e->name()), e);
  EXPECT_EQ(kiln::find_executor("cpu"), kiln::cpu_executor());
  EXPECT_EQ(kiln::find_executor("reference"), kiln::reference_executor());
  try {
    (void)kiln::find_executor("quantum");
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), kiln::ErrorCode::invalid_select);
    EXPECT_NE(std::string(e.what()).find("quantum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reference, cpu"), std::string::npos) << e.what();
  }
}

TEST(BackendChoice, PlacingOnAHostExecutorEvaluatesThere) {
  const auto cpu = kiln::cpu_executor();
  const auto counting = std::make_shared<Counting>(cpu);
  const Tensor x = kiln::arange(6).to(kiln::DType::f32) * 2.f;
  EXPECT_FALSE(x.is_on(*cpu)) << "not evaluated yet";
  EXPECT_EQ(&x.place_on(*counting), &x);
  EXPECT_EQ(counting->calls, 1);
  EXPECT_TRUE(x.is_evaluated());
  EXPECT_TRUE(x.is_on(*cpu));
  EXPECT_TRUE(x.is_on(*kiln::reference_executor())) << "both compute in host memory";
  x.place_on(*counting);
  EXPECT_EQ(counting->calls, 1) << "placed already: nothing to compute";
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  const kiln::Error e = kiln_test::error_of([] { Tensor().place_on(*kiln::cpu_executor()); });
  EXPECT_NE(std::string(e.what()).find("place_on"), std::string::npos) << e.what();
}

}  // namespace
