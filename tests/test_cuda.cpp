// The CUDA backend. Without NVIDIA's driver or a device (CI, this project's build machines) the
// executor is a clear device_error saying what is missing, kiln's other executors work, and the
// device tests report themselves skipped; on a GPU they run the device tests every generated-kernel
// backend passes (device_backend_tests.inc), products through cuBLAS, convolutions through cuDNN,
// Fourier transforms through cuFFT, a real device out-of-memory, and calls from several threads.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "exec/device/generated_backend.hpp"
#include "graph/node.hpp"
#include "kiln/data.hpp"
#include "kiln/executor.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"
#ifdef KILN_TEST_CUDA
#include "exec/cuda/cublas_matmul.hpp"
#include "exec/cuda/cudnn_convolution.hpp"
#include "exec/cuda/cufft_transform.hpp"
#endif

namespace {

using kiln::DType;
using kiln::Tensor;

std::shared_ptr<kiln::Executor> cuda_or_skip(std::string& why) {
  try {
    return kiln::cuda_executor();
  } catch (const kiln::Error& e) {
    why = e.what();
    return nullptr;
  }
}

#define REQUIRE_CUDA(executor)                                         \
  std::string why_##executor;                                          \
  const std::shared_ptr<kiln::Executor> executor = cuda_or_skip(why_##executor); \
  if (!executor) GTEST_SKIP() << "no CUDA device: " << why_##executor

const kiln::detail::Buffer& buffer_of(const Tensor& t) { return *t.node()->result; }

#define DEVICE_SUITE Cuda
#define DEVICE_NAME "CUDA"
#define REQUIRE_DEVICE(executor) REQUIRE_CUDA(executor)
#define DEVICE_RECORDS !kiln_test::environment_is("KILN_CUDA_GRAPHS", "0")
#define DEVICE_RECORDING_SWITCH "KILN_CUDA_GRAPHS=0 turns graphs off"
#include "device_backend_tests.inc"

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
  EXPECT_EQ(kiln_test::code_of([] { kiln::cuda_memory_stats(); }), kiln::ErrorCode::device_error);
  EXPECT_EQ((kiln::ones({2}) + 1.f).to_vector<float>(), (std::vector<float>{2, 2}));
}

#ifdef KILN_TEST_CUDA
TEST(Cuda, FloatProductsGoToCublasThroughTheirViews) {
  REQUIRE_CUDA(gpu);
  const auto reference = kiln::reference_executor();
  auto products = products_through_views();
  products.emplace_back(kiln::uniform({300, 200}, 7), kiln::uniform({200, 100}, 8));
  for (const auto& [x, y] : products) {
    const std::uint64_t before = kiln::detail::cuda::CublasMatmul::products();
    const Tensor on_device = kiln::matmul(x, y).eval(*gpu);
    EXPECT_EQ(kiln::detail::cuda::CublasMatmul::products(), before + 1)
        << kiln::shape_to_string(x.shape()) << " @ " << kiln::shape_to_string(y.shape());
    // Exact f32 products (no TF32, which would miss by about 1e-3).
    expect_close(on_device, kiln::matmul(x, y).eval(*reference), 1e-5);
  }
  // Complex products run on the device too.
  const Tensor z = kiln::complex(kiln::uniform({8, 8}, 12), kiln::uniform({8, 8}, 13));
  const auto got = kiln::matmul(z, z).eval(*gpu).to_vector<std::complex<float>>();
  const auto want = kiln::matmul(z, z).eval(*reference).to_vector<std::complex<float>>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(std::abs(got[i] - want[i]), 0, 1e-5);
}

// Host values go to the device through pinned staging buffers, filled in turn: values larger than
// one buffer (in pieces), small uploads packed after it, and the ring wrapping around (a buffer
// is written again only once its copies are done).
TEST(Cuda, UploadsThroughPinnedStagingKeepTheirValues) {
  REQUIRE_CUDA(gpu);
  std::vector<float> host(5'000'003);  // 20 MB: two buffers of 8 MiB and part of a third
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 1000);
  const auto n = static_cast<std::int64_t>(host.size());
  const Tensor doubled = (Tensor::from(host, {n}) * 2.f).eval(*gpu);
  // 40 MB in all: past the four buffers, the first is written again.
  const Tensor tripled = (Tensor::from(host, {n}) * 3.f).eval(*gpu);
  std::vector<Tensor> results;
  for (int round = 0; round < 10; ++round) {
    std::vector<float> small(64);
    for (std::size_t i = 0; i < small.size(); ++i) small[i] = static_cast<float>(round * 100 + i);
    results.push_back((Tensor::from(small, {64}) + 1.f).eval(*gpu));
  }
  for (const auto& [result, factor] : {std::pair{doubled, 2.f}, std::pair{tripled, 3.f}}) {
    const std::vector<float> d = result.to_vector<float>();
    for (std::size_t i = 0; i < host.size(); i += 997)
      ASSERT_EQ(d[i], factor * static_cast<float>(i % 1000)) << "element " << i;
    ASSERT_EQ(d.back(), factor * static_cast<float>((host.size() - 1) % 1000));
  }
  for (int round = 0; round < 10; ++round) {
    const std::vector<float> r = results[static_cast<std::size_t>(round)].to_vector<float>();
    for (std::size_t i = 0; i < r.size(); ++i)
      ASSERT_EQ(r[i], static_cast<float>(round * 100 + i) + 1.f) << "round " << round;
  }
}

// f16 and bf16 products run in cuBLAS on the tensor cores, summed in f32 and rounded once: within
// one rounding of the type of the reference's (an f32 product rounded), through transposing and
// broadcasting views too.
TEST(Cuda, SixteenBitProductsGoToCublas) {
  REQUIRE_CUDA(gpu);
  const auto reference = kiln::reference_executor();
  for (const DType t : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(kiln::dtype_name(t));
    const Tensor a = kiln::convert(kiln::uniform({4, 96, 130}, 61) - 0.5f, t);
    const Tensor b = kiln::convert(kiln::uniform({130, 72}, 62) - 0.5f, t);
    const Tensor at = kiln::transpose(kiln::convert(kiln::uniform({4, 130, 96}, 63), t), 1, 2);
    for (const auto& [x, y] : {std::pair{a, b}, std::pair{at, b}}) {
      const std::uint64_t before = kiln::detail::cuda::CublasMatmul::products();
      const Tensor on_device = kiln::matmul(x, y).eval(*gpu);
      EXPECT_EQ(kiln::detail::cuda::CublasMatmul::products(), before + 1);
      ASSERT_EQ(on_device.dtype(), t);
      const auto got = on_device.to_vector<double>();
      const auto want = kiln::matmul(x, y).eval(*reference).to_vector<double>();
      // One unit in the last place of the type at most (2^-7 of the value for bf16, 2^-10 for
      // f16): the sums' order may round the other way.
      const double ulp = t == DType::bf16 ? 1.0 / 128 : 1.0 / 1024;
      for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], ulp * (1 + std::abs(want[i]))) << "element " << i;
    }
  }
}

// TF32 is opt-in: f32 products are exact by default, within TF32's rounding (and not exact) at
// "high", and exact again at "highest".
TEST(Cuda, Tf32IsOptIn) {
  REQUIRE_CUDA(gpu);
  const auto reference = kiln::reference_executor();
  const Tensor a = kiln::uniform({512, 512}, 51) - 0.5f, b = kiln::uniform({512, 512}, 52) - 0.5f;
  const std::vector<float> want = kiln::matmul(a, b).eval(*reference).to_vector<float>();
  const auto largest_error = [&] {
    const std::vector<float> got = kiln::matmul(a, b).eval(*gpu).to_vector<float>();
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    return worst;
  };
  EXPECT_LT(largest_error(), 1e-4);
  kiln::set_float32_matmul_precision("high");
  const double tf32 = largest_error();
  kiln::set_float32_matmul_precision("highest");
  EXPECT_GT(tf32, 1e-4) << "TF32 keeps 10 bits: its products miss by about 1e-3";
  EXPECT_LT(tf32, 0.1);
  EXPECT_LT(largest_error(), 1e-4);
}

// A step whose convolution, product and Fourier transform run in cuDNN, cuBLAS and cuFFT is
// captured as one CUDA graph with kiln's own kernels: the replays launch the libraries' kernels
// without calling the libraries, and give each step's values.
TEST(Cuda, LibraryCallsAreCapturedInTheStepsGraph) {
  REQUIRE_CUDA(gpu);
  if (kiln_test::environment_is("KILN_CUDA_GRAPHS", "0"))
    GTEST_SKIP() << "KILN_CUDA_GRAPHS=0 turns graphs off";
  using kiln::detail::device::GeneratedBackend;
  const auto reference = kiln::reference_executor();
  std::vector<float> ws(4 * 3 * 3 * 3), ms(16 * 8);
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (std::size_t i = 0; i < ms.size(); ++i) ms[i] = 0.05f * static_cast<float>(i % 5) - 0.1f;
  const std::uint64_t replayed = GeneratedBackend::replays();
  const std::uint64_t products = kiln::detail::cuda::CublasMatmul::products();
  const std::uint64_t convolutions = kiln::detail::cuda::CudnnConvolution::computed();
  const std::uint64_t transforms = kiln::detail::cuda::CufftTransform::computed();
  for (int s = 0; s < 6; ++s) {
    std::vector<float> xs(2 * 3 * 16 * 16);
    for (std::size_t i = 0; i < xs.size(); ++i)
      xs[i] = std::cos(0.3f * static_cast<float>(s) + 0.02f * static_cast<float>(i));
    const auto step = [&] {
      const Tensor x = Tensor::from(xs, {2, 3, 16, 16});
      const Tensor c = kiln::relu(kiln::conv2d(x, Tensor::from(ws, {4, 3, 3, 3}), Tensor(),
                                               {.padding = {1, 1}}));
      const Tensor m = kiln::matmul(kiln::reshape(c, {128, 16}), Tensor::from(ms, {16, 8}));
      return kiln::abs(kiln::fft(kiln::complex(m, m * 0.5f)));
    };
    expect_close(step().eval(*gpu), step().eval(*reference), 1e-4);
  }
  EXPECT_EQ(GeneratedBackend::replays(), replayed + 3) << "steps 4 to 6 are replays";
  EXPECT_EQ(kiln::detail::cuda::CublasMatmul::products(), products + 3)
      << "cuBLAS is called by the first three steps only";
  EXPECT_EQ(kiln::detail::cuda::CudnnConvolution::computed(), convolutions + 3);
  EXPECT_EQ(kiln::detail::cuda::CufftTransform::computed(), transforms + 3);
}

TEST(Cuda, ConvolutionsAndTheirGradientsGoToCudnn) {
  REQUIRE_CUDA(gpu);
  const auto reference = kiln::reference_executor();
  for (int stride : {1, 2}) {
    const Tensor x = kiln::uniform({4, 3, 11, 9}, 1) - 0.5f;
    const Tensor w = kiln::uniform({5, 3, 3, 3}, 2) - 0.5f;
    const auto outputs = [&] {
      const Tensor xv = kiln::Tensor(x).watch(), wv = kiln::Tensor(w).watch();
      kiln::GradientContext ctx;
      const Tensor y = kiln::conv2d(xv, wv, Tensor(), {.stride = {stride, stride}, .padding = {1, 1}});
      const auto g = kiln::gradients(kiln::sum(y * y), {xv, wv});
      return std::vector<Tensor>{y, g[0], g[1]};
    };
    const std::uint64_t before = kiln::detail::cuda::CudnnConvolution::computed();
    const std::vector<Tensor> got = outputs();
    for (const Tensor& t : got) t.eval(*gpu);
    EXPECT_EQ(kiln::detail::cuda::CudnnConvolution::computed(), before + 3)
        << "the forward pass and both gradients, stride " << stride;
    const std::vector<Tensor> want = outputs();
    for (std::size_t i = 0; i < got.size(); ++i) {
      want[i].eval(*reference);
      expect_close(got[i], want[i], 2e-5);
    }
    // Deterministic algorithms only: the same bits on every run.
    const std::vector<Tensor> again = outputs();
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(again[i].eval(*gpu).to_vector<float>(), got[i].to_vector<float>()) << i;
  }
}
#endif

#ifdef KILN_TEST_CUDA
// Contiguous transforms of complex values go to cuFFT (forward and inverse, c64 and c128, along
// the last axis and along another), within rounding of the reference's KISS FFT; one read through
// a view stays with the generated kernel.
TEST(Cuda, FourierTransformsGoToCufft) {
  REQUIRE_CUDA(gpu);
  const auto reference = kiln::reference_executor();
  const Tensor z = kiln::complex(kiln::uniform({12, 1000}, 31) - 0.5f,
                                 kiln::uniform({12, 1000}, 32) - 0.5f);
  const std::vector<std::pair<bool, std::function<Tensor()>>> cases = {
      {true, [&] { return kiln::fft(z); }},
      {true, [&] { return kiln::ifft(z); }},
      {true, [&] { return kiln::fft(kiln::convert(z, DType::c128), std::nullopt, 0); }},
      {true, [&] { return kiln::ifft(kiln::reshape(z, {3, 4, 1000}), std::nullopt, 1); }},
      {false, [&] { return kiln::fft(kiln::transpose(z, 0, 1)); }},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const std::uint64_t before = kiln::detail::cuda::CufftTransform::computed();
    const Tensor got = cases[c].second().eval(*gpu);
    EXPECT_EQ(kiln::detail::cuda::CufftTransform::computed() > before, cases[c].first)
        << "case " << c;
    const Tensor want = cases[c].second().eval(*reference);
    const auto g = got.to_vector<std::complex<double>>(), r = want.to_vector<std::complex<double>>();
    ASSERT_EQ(g.size(), r.size());
    double largest = 0;
    for (const auto& v : r) largest = std::max(largest, std::abs(v));
    for (std::size_t i = 0; i < r.size(); ++i)
      EXPECT_LE(std::abs(g[i] - r[i]), 2e-6 * (1 + largest)) << "case " << c << " element " << i;
  }
}
#endif

TEST(Cuda, RunningOutOfDeviceMemoryIsACleanError) {
  REQUIRE_CUDA(gpu);
  const Tensor kept = (kiln::linspace(0, 1, 16) * 2.f).eval(*gpu);
  // 100 GB each: the first may fit a large device, the two never fit one (H200: 141 GB).
  const std::int64_t n = 25'000'000'000;
  const Tensor a = kiln::full({n}, 1.f) + kept.sum();
  const kiln::Error e = kiln_test::error_of([&] {
    a.eval(*gpu);
    (a * 2.f).eval(*gpu);
  });
  EXPECT_EQ(e.code(), kiln::ErrorCode::out_of_memory) << e.what();
  EXPECT_NE(std::string(e.what()).find("bytes"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("held"), std::string::npos) << e.what();
  EXPECT_FLOAT_EQ(kept.to_vector<float>().back(), 2.f);
  // The device still works, with its memory back.
  EXPECT_EQ((kept * 2.f).eval(*gpu).to_vector<float>().back(), 4.f);
}

TEST(Cuda, MemoryStatsFollowWhatTensorsHold) {
  REQUIRE_CUDA(gpu);
  const kiln::CudaMemoryStats before = kiln::cuda_memory_stats();
  EXPECT_LE(before.allocated, before.reserved);
  EXPECT_LE(before.allocated, before.peak);
  {
    const Tensor t = (kiln::full({16 << 20}, 1.f) * 2.f).eval(*gpu);  // 64 MiB on the device
    const kiln::CudaMemoryStats holding = kiln::cuda_memory_stats();
    EXPECT_GE(holding.allocated, before.allocated + (std::size_t{64} << 20));
    EXPECT_GE(holding.peak, holding.allocated);
    EXPECT_GE(holding.reserved, holding.allocated);
  }
  const kiln::CudaMemoryStats after = kiln::cuda_memory_stats();
  EXPECT_LT(after.allocated, before.allocated + (std::size_t{1} << 20))
      << "the tensor's memory is given back";
  EXPECT_GE(after.peak, before.allocated + (std::size_t{64} << 20));
}

TEST(Cuda, SeveralThreadsUseTheDeviceAtOnce) {
  REQUIRE_CUDA(gpu);
  std::vector<std::vector<float>> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const Tensor x = kiln::uniform({1000}, static_cast<std::uint64_t>(t + 1));
      results[static_cast<std::size_t>(t)] =
          kiln::exp(x * 2.f).sum().eval(*gpu).to_vector<float>();
    });
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    const Tensor x = kiln::uniform({1000}, static_cast<std::uint64_t>(t + 1));
    const float want = kiln::exp(x * 2.f).sum().eval(*kiln::reference_executor()).item<float>();
    EXPECT_NEAR(results[static_cast<std::size_t>(t)].at(0), want, 1e-6 * want) << t;
  }
}

TEST(Cuda, ElementwiseReductionAndProductGiveTheReferencesValues) {
  REQUIRE_CUDA(cuda);
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
