// The OpenCL backend beyond what the whole suite checks when it runs on it: the device tests every
// generated-kernel backend passes (device_backend_tests.inc), devices listed and chosen by name,
// products through CLBlast, a lost device, and the on-disk kernel cache surviving damage. Every
// test needs an OpenCL device and says so when there is none (it is then reported as skipped).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "exec/opencl/clblast_matmul.hpp"
#include "exec/device/generated_backend.hpp"
#include "exec/device/kernel_cache.hpp"
#include "exec/opencl/opencl_device.hpp"
#include "flint.h"
#include "graph/node.hpp"
#include "kiln/executor.hpp"
#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;

std::shared_ptr<kiln::Executor> device_or_skip() {
  try {
    return kiln::opencl_executor();
  } catch (const kiln::Error& e) {
    return nullptr;
  }
}

#define REQUIRE_OPENCL(executor)                                              \
  const std::shared_ptr<kiln::Executor> executor = device_or_skip();          \
  if (!executor) GTEST_SKIP() << "no OpenCL device here (" #executor " test)"

const kiln::detail::Buffer& buffer_of(const Tensor& t) { return *t.node()->result; }

#define DEVICE_SUITE OpenCl
#define DEVICE_NAME "OpenCL"
#define REQUIRE_DEVICE(executor) REQUIRE_OPENCL(executor)
#define DEVICE_RECORDS kiln_test::environment_is("KILN_OPENCL_GRAPHS", "1")
#define DEVICE_RECORDING_SWITCH "KILN_OPENCL_GRAPHS=1 records them"
#include "device_backend_tests.inc"

// conv2d in OpenCL's generated kernel, a work-item per tile of output channels and columns, gives
// the reference's bits (CUDA's convolutions are cuDNN's): channel and column counts that leave
// the last tiles short, stride, padding and dilation, an input read through a transposing view,
// f64, and infinities and NaN in the weights, which a padding position must not meet (0 * inf is
// NaN).
TEST(OpenCl, Conv2dGivesTheReferencesBits) {
  REQUIRE_OPENCL(gpu);
  const Tensor x = kiln::uniform({2, 3, 11, 13}, 21) - 0.5f;
  const Tensor w = kiln::uniform({6, 3, 3, 3}, 22) - 0.5f;
  std::vector<float> special(5 * 3 * 2 * 2, 0.25f);
  special[0] = INFINITY;
  special[7] = NAN;
  special[13] = -INFINITY;
  const Tensor ws = Tensor::from(special, {5, 3, 2, 2});
  const auto options = [](std::int64_t stride, std::int64_t padding, std::int64_t dilation) {
    kiln::Conv2dOptions o;
    o.stride = {stride, stride};
    o.padding = {padding, padding};
    o.dilation = {dilation, dilation};
    return o;
  };
  const std::vector<std::function<Tensor()>> cases = {
      [&] { return kiln::conv2d(x, w); },
      [&] { return kiln::conv2d(x, w, Tensor(), options(1, 1, 1)); },
      [&] { return kiln::conv2d(x, w, Tensor(), options(2, 2, 1)); },
      [&] { return kiln::conv2d(x, w, Tensor(), options(1, 3, 2)); },
      [&] { return kiln::conv2d(kiln::transpose(x, 2, 3), w, Tensor(), options(1, 1, 1)); },
      [&] { return kiln::conv2d(kiln::convert(x, DType::f64), kiln::convert(w, DType::f64)); },
      [&] { return kiln::conv2d(x, ws, Tensor(), options(1, 1, 1)); },
      [&] { return kiln::conv2d(kiln::uniform({1, 7, 5, 4}, 23), kiln::uniform({9, 7, 1, 1}, 24)); },
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Tensor got = cases[c]().eval(*gpu);
    EXPECT_FALSE(buffer_of(got).on_host()) << "case " << c;
    const Tensor want = cases[c]().eval(*kiln::reference_executor());
    ASSERT_EQ(got.shape(), want.shape()) << "case " << c;
    const auto g = got.to_vector<double>(), r = want.to_vector<double>();
    for (std::size_t i = 0; i < r.size(); ++i)
      EXPECT_TRUE(std::memcmp(&g[i], &r[i], sizeof(double)) == 0 || (std::isnan(g[i]) && std::isnan(r[i])))
          << "case " << c << " element " << i << ": " << g[i] << ", reference " << r[i];
  }
  // The gradient with respect to the input (tiled as conv2d, its terms gathered per position in
  // another order than the reference's scatter): within rounding.
  const std::vector<kiln::Conv2dOptions> settings = {options(1, 0, 1), options(1, 1, 1),
                                                     options(2, 1, 1), options(3, 2, 2)};
  for (std::size_t c = 0; c < settings.size(); ++c) {
    const auto gradient = [&](kiln::Executor& e) {
      Tensor input = x.detach().watch(), out;
      {
        kiln::GradientContext ctx;
        out = kiln::sum(kiln::conv2d(input, w, Tensor(), settings[c]) *
                        kiln::uniform({1, 6, 1, 1}, 25));
      }
      const Tensor grad = kiln::gradients(out, {input})[0];
      return grad.eval(e).to_vector<double>();
    };
    const auto g = gradient(*gpu), r = gradient(*kiln::reference_executor());
    ASSERT_EQ(g.size(), r.size());
    for (std::size_t i = 0; i < r.size(); ++i)
      EXPECT_NEAR(g[i], r[i], 1e-6 * (1 + std::abs(r[i]))) << "setting " << c << " element " << i;
  }
}

// The gradient with respect to the weights: one work-item per weight where the weights are many
// (the reference's bits), and, for a first layer's few weights over a large batch, several per
// weight over runs of the batch, merged in order (within rounding, the same bits every run).
TEST(OpenCl, Conv2dWeightGradientSplitsTheBatchWhereWeightsAreFew) {
  REQUIRE_OPENCL(gpu);
  struct Case {
    kiln::Shape input, weight;
    std::int64_t padding;
    bool exact;
  };
  const std::vector<Case> cases = {
      {{64, 1, 28, 28}, {32, 1, 5, 5}, 2, false},   // 800 weights: the batch in runs
      {{3, 5, 9, 10}, {7, 5, 3, 3}, 1, true},       // 315 weights of few terms: one each
      {{2, 32, 6, 6}, {64, 32, 3, 3}, 1, true},     // 18,432 weights: one work-item each
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Tensor x = kiln::uniform(cases[c].input, 41) - 0.5f;
    const Tensor w = kiln::uniform(cases[c].weight, 42) - 0.5f;
    kiln::Conv2dOptions options;
    options.padding = {cases[c].padding, cases[c].padding};
    const auto gradient = [&](kiln::Executor& e, DType type) {
      Tensor weight = kiln::convert(w, type).detach().watch(), out;
      {
        kiln::GradientContext ctx;
        out = kiln::sum(kiln::square(kiln::conv2d(kiln::convert(x, type), weight, Tensor(), options)));
      }
      return kiln::gradients(out, {weight})[0].eval(e).to_vector<double>();
    };
    const auto reference = kiln::reference_executor();
    const auto g = gradient(*gpu, DType::f32), again = gradient(*gpu, DType::f32),
               r = gradient(*reference, DType::f32), exact = gradient(*reference, DType::f64);
    ASSERT_EQ(g.size(), r.size());
    EXPECT_EQ(g, again) << "case " << c << ": the same bits on every run";
    // Split, the sums round otherwise than the reference's one long f32 sum (50,000 terms in
    // the first case, which is off the f64 value by up to 1e-4): both are held to the f64 value
    // within rounding of the largest gradient.
    double largest = 0;
    for (const double v : exact) largest = std::max(largest, std::abs(v));
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (cases[c].exact) {
        EXPECT_EQ(g[i], r[i]) << "case " << c << " element " << i;
      } else {
        EXPECT_NEAR(g[i], exact[i], 1e-5 * (1 + largest)) << "case " << c << " element " << i;
        EXPECT_NEAR(r[i], exact[i], 1e-5 * (1 + largest)) << "case " << c << " element " << i;
      }
    }
  }
}

TEST(OpenCl, DevicesAreListedAndChosenByName) {
  REQUIRE_OPENCL(gpu);
  const std::vector<std::string> devices = kiln::opencl_devices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices.front().rfind("0:0 ", 0), 0u) << devices.front();
  EXPECT_NE(devices.front().find("OpenCL"), std::string::npos) << devices.front();
  EXPECT_EQ(kiln::find_executor("opencl"), gpu);
  EXPECT_EQ(gpu->name(), "opencl");
}

TEST(OpenCl, FloatProductsGoToClblastThroughTheirViews) {
  REQUIRE_OPENCL(gpu);
  const auto reference = kiln::reference_executor();
  for (const auto& [x, y] : products_through_views()) {
    const std::uint64_t before = kiln::detail::opencl::clblast_products();
    const Tensor on_device = kiln::matmul(x, y).eval(*gpu);
    EXPECT_EQ(kiln::detail::opencl::clblast_products(), before + 1)
        << kiln::shape_to_string(x.shape()) << " @ " << kiln::shape_to_string(y.shape());
    expect_close(on_device, kiln::matmul(x, y).eval(*reference), 1e-5);
  }
}

TEST(OpenCl, OtherProductsAreTheGeneratedKernelsWithTheReferencesBits) {
  REQUIRE_OPENCL(gpu);
  const auto reference = kiln::reference_executor();
  // Integers, and a view that steps over columns (no leading dimension describes it): the
  // generated kernel sums in the reference's type and order.
  const Tensor i = kiln::convert(kiln::uniform({4, 9}, 7) * 100.f, DType::i32);
  const Tensor j = kiln::convert(kiln::uniform({9, 5}, 8) * 100.f, DType::i32);
  const Tensor strided = kiln::slice(kiln::uniform({6, 18}, 9), {0, 0}, {6, 18}, {1, 2});
  const Tensor b = kiln::uniform({9, 4}, 10);
  const std::uint64_t before = kiln::detail::opencl::clblast_products();
  EXPECT_EQ(kiln::matmul(i, j).eval(*gpu).to_vector<std::int32_t>(),
            kiln::matmul(i, j).eval(*reference).to_vector<std::int32_t>());
  EXPECT_EQ(kiln::matmul(strided, b).eval(*gpu).to_vector<float>(),
            kiln::matmul(strided, b).eval(*reference).to_vector<float>());
  EXPECT_EQ(kiln::detail::opencl::clblast_products(), before);
}

// A lost device (simulated: the driver's CL_DEVICE_NOT_AVAILABLE cannot be caused on purpose) is
// a device_error for every later use, in C++ and in C, never a crash; host copies stay readable and
// the CPU executor keeps working.
TEST(OpenCl, ALostDeviceIsAnErrorNeverACrash) {
  REQUIRE_OPENCL(gpu);
  const Tensor read = (kiln::arange(8).to(DType::f32) * 2.f).eval(*gpu);
  const std::vector<float> values = read.to_vector<float>();
  const Tensor unread = (kiln::arange(8).to(DType::f32) + 1.f).eval(*gpu);
  ASSERT_FALSE(buffer_of(unread).on_host());
  struct EndLoss {
    ~EndLoss() { kiln::detail::opencl::simulate_device_loss(false); }
  } end_loss;
  kiln::detail::opencl::simulate_device_loss(true);

  const kiln::Error e = kiln_test::error_of([&] { (read * 3.f).eval(*gpu); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::device_error) << e.what();
  EXPECT_NE(std::string(e.what()).find("is lost"), std::string::npos) << e.what();
  EXPECT_EQ(read.to_vector<float>(), values) << "the host copy stays";
  EXPECT_EQ(kiln_test::code_of([&] { unread.to_vector<float>(); }), kiln::ErrorCode::device_error);
  EXPECT_EQ((read * 3.f).eval(*kiln::cpu_executor()).to_vector<float>()[1], 6.f);
  // The C API's GPU execution, where it is OpenCL's (not KILN_GPU=cuda), reports OCL_ERROR.
  if (kiln::device_executor() == gpu) {
    const float data[3] = {1, 2, 3};
    const size_t shape = 3;
    FGraphNode* node = fadd_cf(fCreateGraph(data, 3, F_FLOAT32, &shape, 1), 1.f);
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(fExecuteGraph_gpu(node), nullptr);
    EXPECT_EQ(fErrorType(), OCL_ERROR);
    fFreeGraph(node);
  }

  kiln::detail::opencl::simulate_device_loss(false);
  EXPECT_EQ((read * 3.f).eval(*gpu).to_vector<float>()[1], 6.f);
  EXPECT_EQ(unread.to_vector<float>()[0], 1.f);
}

// Tensor::place_on: host values uploaded now and once, device values read back on request.
TEST(OpenCl, APlacedTensorIsUploadedOnceAndReadBackOnRequest) {
  REQUIRE_OPENCL(gpu);
  const auto cpu = kiln::cpu_executor();
  const Tensor x = Tensor::from(std::vector<float>{0.5f, 1.f, 2.f, 4.f});
  EXPECT_TRUE(x.is_on(*cpu));
  EXPECT_FALSE(x.is_on(*gpu));
  x.place_on(*gpu);
  EXPECT_TRUE(x.is_on(*gpu));
  EXPECT_TRUE(x.is_on(*cpu)) << "the host copy stays";
  EXPECT_EQ(buffer_of(x).device_copies(), 1u);
  x.place_on(*gpu);
  const Tensor y = kiln::exp(x).eval(*gpu);
  EXPECT_EQ(buffer_of(x).device_copies(), 1u) << "placed once, read from there";
  EXPECT_TRUE(y.is_on(*gpu));
  EXPECT_FALSE(y.is_on(*cpu)) << "computed on the device, not read back yet";
  y.place_on(*cpu);
  EXPECT_TRUE(buffer_of(y).on_host());
  EXPECT_TRUE(y.is_on(*gpu)) << "reading back keeps the device copy";
  const std::vector<float> want =
      kiln::exp(x).eval(*kiln::reference_executor()).to_vector<float>();
  const std::vector<float> got = y.to_vector<float>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 4e-7f * want[i]);
  // A lazy tensor placed on the device is computed there.
  const Tensor z = x * 3.f;
  z.place_on(*gpu);
  EXPECT_TRUE(z.is_on(*gpu));
  EXPECT_FALSE(z.is_on(*cpu));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{1.5f, 3.f, 6.f, 12.f}));
  // Memory given to from_blob is read where it is at each use: never placed.
  alignas(64) float blob[16] = {1.f, 2.f};
  const Tensor b = Tensor::from_blob(blob, {2}, DType::f32);
  b.place_on(*gpu);
  EXPECT_FALSE(b.is_on(*gpu));
  // A lost device: placing is its error, and nothing is on it any more.
  struct EndLoss {
    ~EndLoss() { kiln::detail::opencl::simulate_device_loss(false); }
  } end_loss;
  kiln::detail::opencl::simulate_device_loss(true);
  EXPECT_FALSE(x.is_on(*gpu));
  const Tensor fresh = Tensor::from(std::vector<float>{1.f});
  EXPECT_EQ(kiln_test::code_of([&] { fresh.place_on(*gpu); }), kiln::ErrorCode::device_error);
  EXPECT_EQ(kiln_test::code_of([&] { x.place_on(*gpu); }), kiln::ErrorCode::device_error);
}

// The disk cache does not need a device: it stores bytes.
TEST(OpenClKernelCache, RoundTripsAndRebuildsWhatIsDamaged) {
  // Per process: the suite runs in several processes at once.
  const std::string dir =
      ::testing::TempDir() + "kiln_kernel_cache_test_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(setenv("KILN_CACHE_DIR", dir.c_str(), 1), 0);
  const kiln::detail::device::KernelCache cache("opencl");
  unsetenv("KILN_CACHE_DIR");
  ASSERT_TRUE(cache.enabled());
  const std::string key = cache.key({"__kernel void k() {}", "-cl-std=CL1.2", "device", "1.0"});
  EXPECT_NE(key, cache.key({"__kernel void k() {}", "-cl-std=CL1.2", "device", "1.1"}));
  EXPECT_NE(cache.key({"ab", "c"}), cache.key({"a", "bc"})) << "parts cannot run together";
  EXPECT_FALSE(cache.load(key).has_value());
  const std::vector<unsigned char> binary{1, 2, 3, 4, 5, 250};
  cache.store(key, binary);
  ASSERT_TRUE(cache.load(key).has_value());
  EXPECT_EQ(*cache.load(key), binary);
  // One byte changed: the checksum fails, the entry is dropped.
  const std::string path = cache.directory() + "/" + key + ".bin";
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x07');
  }
  EXPECT_FALSE(cache.load(key).has_value());
  EXPECT_FALSE(std::filesystem::exists(path));
  // A truncated file and a foreign file are rejected too.
  cache.store(key, binary);
  std::filesystem::resize_file(path, 20);
  EXPECT_FALSE(cache.load(key).has_value());
  {
    std::ofstream f(path, std::ios::binary);
    f << "not a kiln kernel cache entry at all";
  }
  EXPECT_FALSE(cache.load(key).has_value());
  std::filesystem::remove_all(dir);
}

}  // namespace
