// The CUDA backend. Without NVIDIA's driver or a device (CI, this project's build machines) the
// executor is a clear device_error saying what is missing, kiln's other executors work, and the
// device tests report themselves skipped; on a GPU they run the device suite's checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/executor.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::Tensor;

std::shared_ptr<kiln::Executor> cuda_or_skip(std::string& why) {
  try {
    return kiln::cuda_executor();
  } catch (const kiln::Error& e) {
    why = e.what();
    return nullptr;
  }
}

TEST(Cuda, WithoutADeviceTheErrorSaysWhatIsMissing) {
  std::string why;
  if (cuda_or_skip(why)) GTEST_SKIP() << "a CUDA device is present (this test is for machines without one)";
  const kiln::Error e = kiln_test::error_of([] { kiln::cuda_executor(); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::device_error);
  const std::string message = e.what();
  EXPECT_TRUE(message.find("libcuda.so.1") != std::string::npos ||
              message.find("no CUDA device") != std::string::npos ||
              message.find("built without CUDA") != std::string::npos ||
              message.find("NVRTC") != std::string::npos)
      << message;
  // The registry knows it; executors() leaves it out; the others still work.
  const auto names = kiln::executor_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());
  for (const auto& executor : kiln::executors()) EXPECT_NE(executor->name(), "cuda");
  EXPECT_EQ(kiln_test::code_of([] { kiln::find_executor("cuda"); }),
            kiln::ErrorCode::device_error);
  EXPECT_EQ((kiln::ones({2}) + 1.f).to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(Cuda, ElementwiseReductionAndProductGiveTheReferencesValues) {
  std::string why;
  const auto cuda = cuda_or_skip(why);
  if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
  const Tensor x = kiln::uniform({64, 33}, 5);
  const auto check = [&](const Tensor& t) {
    const auto got = t.eval(*cuda).to_vector<float>();
    const auto want = t.eval(*kiln::reference_executor()).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
  };
  check(kiln::exp(x) * 2.f + 1.f);
  check(kiln::sum(x * x, {1}));
  check(kiln::matmul(x, kiln::transpose(x, 0, 1)));
}

}  // namespace
