// kiln::Profile: kernels recorded per kind with their fused ops, calls, time, bytes and flops;
// recording starts and stops with the profile; overlapping profiles each see their own time; the
// table names every kernel.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;

// The runtime's executors record kernels; the reference executor is outside it.
kiln::Executor& cpu() { return *kiln::cpu_executor(); }

const kiln::KernelStats* find(const std::vector<kiln::KernelStats>& ks, const std::string& op) {
  for (const auto& k : ks)
    if (k.op == op) return &k;
  return nullptr;
}

TEST(Profile, RecordsAFusedKernelWithItsFigures) {
  const std::int64_t n = 1 << 16;
  const Tensor a = kiln::uniform({n}, 1, DType::f32).eval(cpu());
  const Tensor b = kiln::uniform({n}, 2, DType::f32).eval(cpu());
  kiln::Profile profile;
  for (int i = 0; i < 3; ++i) (void)(kiln::exp(kiln::sin(a) * b) + 1.0f).eval(cpu());
  profile.stop();
  const auto kernels = profile.kernels();
  ASSERT_EQ(kernels.size(), 1u) << profile;
  const kiln::KernelStats& k = kernels[0];
  EXPECT_EQ(k.kind, "elementwise");
  EXPECT_EQ(k.op, "add");
  EXPECT_EQ(k.fused, (std::vector<std::string>{"sin", "mul", "exp", "add"}));
  EXPECT_EQ(k.dtype, DType::f32);
  EXPECT_EQ(k.shape, kiln::Shape{n});
  EXPECT_EQ(k.backend, "cpu");
  EXPECT_FALSE(k.reference);
  EXPECT_EQ(k.calls, 3);
  EXPECT_GT(k.seconds, 0);
  EXPECT_DOUBLE_EQ(k.mean_seconds(), k.seconds / 3);
  // a and b read, the result written, and the 1.0f constant (one element) read.
  EXPECT_DOUBLE_EQ(k.bytes, 3.0 * n * 4 + 4);
  EXPECT_DOUBLE_EQ(k.flops, 4.0 * n);
  EXPECT_DOUBLE_EQ(k.share, 1.0);
  EXPECT_NE(k.boundary.find("computed already"), std::string::npos) << k.boundary;
  EXPECT_GT(profile.scheduling_seconds(), 0);
  EXPECT_NEAR(profile.kernel_seconds(), k.seconds, 1e-12);
}

TEST(Profile, MatmulAndReductionFlops) {
  const Tensor a = kiln::uniform({32, 48}, 1, DType::f32).eval(cpu());
  const Tensor b = kiln::uniform({48, 16}, 2, DType::f32).eval(cpu());
  kiln::Profile profile;
  (void)kiln::matmul(a, b).eval(cpu());
  (void)kiln::exp(a).sum({1}).eval(cpu());
  const auto kernels = profile.kernels();
  const kiln::KernelStats* mm = find(kernels, "matmul");
  ASSERT_NE(mm, nullptr) << profile;
  EXPECT_DOUBLE_EQ(mm->flops, 2.0 * 32 * 16 * 48);
  const kiln::KernelStats* sum = find(kernels, "sum");
  ASSERT_NE(sum, nullptr) << profile;
  EXPECT_EQ(sum->kind, "reduce");
  EXPECT_EQ(sum->fused, (std::vector<std::string>{"exp", "sum"}));
  EXPECT_DOUBLE_EQ(sum->flops, 2.0 * 32 * 48);
  double shares = 0;
  for (const auto& k : kernels) shares += k.share;
  EXPECT_NEAR(shares, 1.0, 1e-12);
}

TEST(Profile, RecordsOnlyWhileItRecords) {
  const Tensor a = kiln::uniform({64}, 3, DType::f32).eval(cpu());
  (void)kiln::exp(a).eval(cpu());  // before: not recorded
  kiln::Profile outer;
  (void)kiln::sin(a).eval(cpu());
  {
    kiln::Profile inner;
    (void)kiln::cos(a).eval(cpu());
    EXPECT_TRUE(inner.recording());
    const auto seen = inner.kernels();
    ASSERT_EQ(seen.size(), 1u) << inner;
    EXPECT_EQ(seen[0].op, "cos");
  }
  outer.stop();
  EXPECT_FALSE(outer.recording());
  (void)kiln::tan(a).eval(cpu());  // after: not recorded
  const auto kernels = outer.kernels();
  EXPECT_EQ(kernels.size(), 2u) << outer;
  EXPECT_NE(find(kernels, "sin"), nullptr);
  EXPECT_NE(find(kernels, "cos"), nullptr);
  EXPECT_EQ(find(kernels, "exp"), nullptr);
  EXPECT_EQ(find(kernels, "tan"), nullptr);
}

TEST(Profile, TableNamesEveryKernel) {
  const Tensor a = kiln::uniform({8, 8}, 4, DType::f32).eval(cpu());
  kiln::Profile profile;
  (void)kiln::softmax(a, 1).eval(cpu());
  (void)kiln::matmul(a, a).eval(cpu());
  const std::string table = profile.table();
  EXPECT_NE(table.find("[kiln] profile:"), std::string::npos) << table;
  EXPECT_NE(table.find("GFLOP/s"), std::string::npos) << table;
  EXPECT_NE(table.find("softmax f32[8,8]"), std::string::npos) << table;
  EXPECT_NE(table.find("matmul f32[8,8]"), std::string::npos) << table;
  EXPECT_NE(table.find("cpu"), std::string::npos) << table;
}

}  // namespace
