// The OpenCL backend beyond what the whole suite checks when it runs on it: values stay on the
// device until a host reads them, host data is uploaded once, reductions give the same bits on
// every run, random values equal the CPU's, device memory errors leave tensors intact, and the
// on-disk kernel cache survives damage. Every test needs an OpenCL device and says so when there
// is none (it is then reported as skipped).
#include <gtest/gtest.h>

#include <cmath>
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

TEST(OpenCl, DevicesAreListedAndChosenByName) {
  REQUIRE_OPENCL(gpu);
  const std::vector<std::string> devices = kiln::opencl_devices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices.front().rfind("0:0 ", 0), 0u) << devices.front();
  EXPECT_NE(devices.front().find("OpenCL"), std::string::npos) << devices.front();
  EXPECT_EQ(kiln::find_executor("opencl"), gpu);
  EXPECT_EQ(gpu->name(), "opencl");
}

TEST(OpenCl, ResultsStayOnTheDeviceUntilTheHostReadsThem) {
  REQUIRE_OPENCL(gpu);
  const Tensor x = kiln::linspace(0, 1, 1000);
  const Tensor y = kiln::exp(x) * 2.f + 1.f;
  y.eval(*gpu);
  EXPECT_FALSE(buffer_of(y).on_host()) << "computed on the device, read by nobody yet";
  EXPECT_EQ(buffer_of(y).device_copies(), 1u);
  // The input was uploaded once and keeps its device copy for the next kernel that reads it.
  const Tensor z = x * 3.f;
  z.eval(*gpu);
  const std::vector<float> v = y.to_vector<float>();
  EXPECT_TRUE(buffer_of(y).on_host());
  const std::vector<float> cpu = (kiln::exp(kiln::linspace(0, 1, 1000)) * 2.f + 1.f)
                                     .eval(*kiln::reference_executor())
                                     .to_vector<float>();
  ASSERT_EQ(v.size(), cpu.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], cpu[i], 4e-7f * cpu[i]) << i;
}

TEST(OpenCl, HostValuesAreUploadedOnceAndKeptBeside) {
  REQUIRE_OPENCL(gpu);
  const Tensor w = kiln::ones({256}) * 0.5f;
  w.eval(*kiln::cpu_executor());
  ASSERT_TRUE(buffer_of(w).on_host());
  EXPECT_EQ(buffer_of(w).device_copies(), 0u);
  const Tensor a = w + 1.f;
  a.eval(*gpu);
  EXPECT_TRUE(buffer_of(w).on_host()) << "uploading keeps the host copy";
  EXPECT_EQ(buffer_of(w).device_copies(), 1u);
  const Tensor b = w * 4.f;
  b.eval(*gpu);
  EXPECT_EQ(buffer_of(w).device_copies(), 1u) << "the second kernel reads the same copy";
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(256, 1.5f));
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(256, 2.f));
  // Values computed on the device feed the CPU executor through the host copy.
  const Tensor c = (a * b).eval(*kiln::cpu_executor());
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(256, 3.f));
}

TEST(OpenCl, ReductionsGiveTheSameBitsOnEveryRun) {
  REQUIRE_OPENCL(gpu);
  const Tensor x = kiln::uniform({3, 100003}, 7) - 0.5f;
  x.eval();
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    const Tensor s = kiln::sum(x * x, {1});
    const std::vector<float> v = s.eval(*gpu).to_vector<float>();
    if (run == 0) first = v;
    else EXPECT_EQ(v, first) << "run " << run;
  }
  const std::vector<double> want =
      kiln::sum(x.to(DType::f64) * x.to(DType::f64), {1}).to_vector<double>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(first[i], want[i], 1e-5 * want[i]);
}

TEST(OpenCl, RandomValuesAreTheCpusForTheSameSeed) {
  REQUIRE_OPENCL(gpu);
  for (DType t : {DType::f32, DType::f64}) {
    const Tensor a = kiln::uniform({1000}, 1234, t);
    const Tensor b = kiln::uniform({1000}, 1234, t);
    a.eval(*gpu);
    b.eval(*kiln::cpu_executor());
    if (t == DType::f32) EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
    else EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  }
}

void expect_close(const Tensor& got, const Tensor& want, double tolerance) {
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  ASSERT_EQ(g.size(), w.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tolerance * (1 + std::abs(w[i]))) << "element " << i;
}

TEST(OpenCl, FloatProductsGoToClblastThroughTheirViews) {
  REQUIRE_OPENCL(gpu);
  const auto reference = kiln::reference_executor();
  const Tensor a = kiln::uniform({3, 17, 33}, 1) - 0.5f;
  const Tensor at = kiln::transpose(kiln::uniform({3, 33, 17}, 3) - 0.5f, 1, 2);
  const Tensor b = kiln::transpose(kiln::uniform({3, 29, 33}, 2), 1, 2);
  const Tensor shared = kiln::uniform({33, 29}, 4);  // one matrix broadcast over the batch
  // Batch dimensions that do not nest: [2, 1] against [1, 3] broadcasts both ways.
  const Tensor left = kiln::uniform({2, 1, 5, 7}, 5), right = kiln::uniform({1, 3, 7, 4}, 6);
  const Tensor a64 = kiln::convert(a, DType::f64), b64 = kiln::convert(b, DType::f64);
  const std::vector<std::pair<Tensor, Tensor>> products = {
      {a, b}, {at, b}, {a, shared}, {at, kiln::uniform({3, 33, 29}, 11)},
      {left, right}, {a64, b64}};
  for (const auto& [x, y] : products) {
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

TEST(OpenCl, DeviceOutOfMemoryLeavesTensorsIntact) {
  REQUIRE_OPENCL(gpu);
  const Tensor kept = (kiln::linspace(0, 1, 16) * 2.f).eval(*gpu);
  const std::int64_t huge = std::int64_t{1} << 40;
  const Tensor big = kiln::full({huge}, 1.f) + kept.sum();
  try {
    big.eval(*gpu);
    ADD_FAILURE() << "a 4 TiB result was computed";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), kiln::ErrorCode::out_of_memory) << e.what();
  }
  const std::vector<float> v = kept.to_vector<float>();
  EXPECT_FLOAT_EQ(v.back(), 2.f);
}

// gather, scatter_add, unwindow, the scans and argsort run on the device (their results stay
// there) with the reference's bits: sums in the reference's order, a stable sort with NaN last.
TEST(OpenCl, DataDependentOpsRunOnTheDeviceWithTheReferencesBits) {
  REQUIRE_OPENCL(gpu);
  const float nan = std::nanf("");
  const Tensor x = Tensor::from(
      std::vector<float>{0.5f, -1.f, 0.5f, nan, 3.f, -0.f, 0.f, 2.f, 0.5f, 7.f, -2.f, 0.25f}, {3, 4});
  const Tensor rows = Tensor::from(std::vector<std::int64_t>{2, 0, 2, 1, 2, 2}, {2, 3});
  const Tensor big = kiln::uniform({5, 300}, 3) * 1000.f;
  const std::vector<std::function<Tensor()>> cases = {
      [&] { return kiln::gather(x, 0, rows); },
      [&] { return kiln::scatter_add(kiln::zeros({3, 4}), 0, rows, x * 3.f); },
      [&] {
        const Tensor to = Tensor::from(std::vector<std::int32_t>{1, -1, 1, 0, 3, 3, -1, 2, 0, 0, 0, 0},
                                       {3, 4});
        return kiln::index_set(kiln::ones({3, 4}), x, to);
      },
      [&] { return kiln::unslide_window(kiln::sliding_window(big, {2, 5}, {1, 3}) * 2.f,
                                        {5, 300}, {1, 3}); },
      [&] { return kiln::cumsum(big, 1); },
      [&] { return kiln::cumprod(x + 1.f, 0); },
      [&] { return kiln::cumsum(rows * (std::int64_t{1} << 61), 1); },
      [&] { return kiln::argsort(x, 1); },
      [&] { return kiln::argsort(x, 0, true); },
      [&] { return kiln::argsort(kiln::convert(big / 100.f, DType::i32), 1, true); },
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Tensor on_device = cases[c]().eval(*gpu);
    EXPECT_FALSE(buffer_of(on_device).on_host()) << "case " << c << " ran on the host";
    const Tensor reference = cases[c]().eval(*kiln::reference_executor());
    ASSERT_EQ(on_device.dtype(), reference.dtype());
    if (reference.dtype() == DType::f32) {
      const auto a = on_device.to_vector<float>(), b = reference.to_vector<float>();
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_TRUE(std::memcmp(&a[i], &b[i], sizeof(float)) == 0)
            << "case " << c << " element " << i << ": " << a[i] << " vs " << b[i];
    } else {
      EXPECT_EQ(on_device.to_vector<std::int64_t>(), reference.to_vector<std::int64_t>())
          << "case " << c;
    }
  }
}

TEST(OpenCl, AnIndexOutOfRangeIsTheReferencesError) {
  REQUIRE_OPENCL(gpu);
  // Indices known only when they are computed: the device finds them, the message is the
  // reference's (the first bad index in order).
  const Tensor computed = kiln::convert(kiln::arange(4), DType::i64) * std::int64_t{3};  // 0 3 6 9
  const auto message = [&](const std::function<Tensor()>& build, kiln::Executor& executor) {
    const kiln::Error e = kiln_test::error_of([&] { build().eval(executor); });
    EXPECT_EQ(e.code(), kiln::ErrorCode::invalid_select) << e.what();
    return std::string(e.what());
  };
  const std::vector<std::function<Tensor()>> cases = {
      [&] { return kiln::gather(kiln::arange(5), 0, computed); },
      [&] { return kiln::scatter_add(kiln::zeros({5}), 0, computed, kiln::ones({4})); },
      [&] { return kiln::index_select(kiln::ones({5, 2}), 0, computed - std::int64_t{4}); },
  };
  for (const auto& build : cases) {
    const std::string want = message(build, *kiln::reference_executor());
    EXPECT_EQ(message(build, *gpu), want);
  }
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
  // The C API's GPU execution reports OCL_ERROR.
  const float data[3] = {1, 2, 3};
  const size_t shape = 3;
  FGraphNode* node = fadd_cf(fCreateGraph(data, 3, F_FLOAT32, &shape, 1), 1.f);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(fExecuteGraph_gpu(node), nullptr);
  EXPECT_EQ(fErrorType(), OCL_ERROR);
  fFreeGraph(node);

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

// Module::place_on: every weight uploaded once, before the first forward pass.
TEST(OpenCl, APlacedModelsWeightsAreOnTheDeviceBeforeItRuns) {
  REQUIRE_OPENCL(gpu);
  kiln::nn::Sequential model(kiln::nn::Linear(4, 3), kiln::nn::ReLU(), kiln::nn::BatchNorm1d(3));
  model.eval();
  if (kiln::current_executor() != gpu) {  // initialised on the host
    for (const auto& [name, p] : model.named_parameters()) {
      EXPECT_FALSE(p.value().is_on(*gpu)) << name;
    }
  }
  model.place_on(*gpu);
  for (const auto& [name, p] : model.named_parameters()) {
    EXPECT_TRUE(p.value().is_on(*gpu)) << name;
    EXPECT_EQ(buffer_of(p.value()).device_copies(), 1u) << name;
  }
  for (const auto& [name, b] : model.named_buffers()) EXPECT_TRUE(b.value().is_on(*gpu)) << name;
  const Tensor x = kiln::linspace(-1, 1, 8).reshape({2, 4});
  const std::vector<float> got = model(x).eval(*gpu).to_vector<float>();
  for (const auto& [name, p] : model.named_parameters())
    EXPECT_EQ(buffer_of(p.value()).device_copies(), 1u) << name << ": read from where it was placed";
  const std::vector<float> want = model(x).eval(*kiln::reference_executor()).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
}

TEST(OpenCl, HostCallablesAndKernelsWithoutADeviceFormRunOnTheHost) {
  REQUIRE_OPENCL(gpu);
  const Tensor x = kiln::linspace(-1, 1, 12).reshape({1, 1, 3, 4});
  const Tensor w = kiln::ones({2, 1, 2, 2});
  const auto build = [&] {
    return kiln::exp(kiln::conv2d(kiln::map_elements(x, [](double v) { return v * v; }), w)) +
           1.f;
  };
  const std::vector<float> on_device = build().eval(*gpu).to_vector<float>();
  const std::vector<float> reference = build().eval(*kiln::reference_executor()).to_vector<float>();
  ASSERT_EQ(on_device.size(), reference.size());
  for (std::size_t i = 0; i < reference.size(); ++i)
    EXPECT_NEAR(on_device[i], reference[i], 1e-6f * reference[i]);
}

// A small network trained on the device: parameters, Adam's state and every step's values stay
// there (only the loss is read back per step).
TEST(OpenCl, SmallNetworkTrainsOnTheDevice) {
  REQUIRE_OPENCL(gpu);
  namespace nn = kiln::nn;
  namespace data = kiln::data;
  const std::string dir = data::fashion_mnist_default_dir;
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(dir + "/train-images-idx3-ubyte"))
    FAIL() << "Fashion-MNIST is missing from " << dir
           << ": install the dataset-fashion-mnist package (scripts/setup.sh does)";
  const std::shared_ptr<kiln::Executor> before = kiln::current_executor();
  kiln::set_executor(gpu);
  nn::manual_seed(1);
  const data::Dataset train = data::take(data::load_mnist_split(dir, "train"), 640);
  const data::Dataset test = data::take(data::load_mnist_split(dir, "test"), 200);
  nn::Sequential model(nn::Flatten(), nn::Linear(784, 64), nn::ReLU(), nn::Linear(64, 10));
  nn::Adam opt(model.parameters(), {.lr = 3e-3});
  std::vector<double> losses;
  data::Batch b;
  for (int epoch = 0; epoch < 3; ++epoch) {
    data::BatchIterator batches(train, 64, true, static_cast<std::uint64_t>(epoch + 1));
    while (batches.next(b)) {
      Tensor loss;
      {
        kiln::GradientContext ctx;
        loss = nn::cross_entropy(model(b.images), b.labels);
      }
      opt.step(loss);
      losses.push_back(loss.item<double>());
    }
  }
  EXPECT_FALSE(buffer_of(model.parameters().front().value()).on_host())
      << "the trained weights stay on the device";
  const double first = (losses[0] + losses[1] + losses[2]) / 3;
  const double last = (losses[losses.size() - 1] + losses[losses.size() - 2] +
                       losses[losses.size() - 3]) / 3;
  EXPECT_LT(last, first * 0.7) << "first batches " << first << ", last batches " << last;
  model.eval();
  data::BatchIterator test_batches(test, 200, false);
  ASSERT_TRUE(test_batches.next(b));
  const double accuracy =
      static_cast<double>(nn::correct_count(model(b.images), b.labels).item<std::int64_t>()) /
      200.0;
  EXPECT_GT(accuracy, 0.5);  // chance is 0.1
  std::printf("[ training on OpenCL: loss %.3f -> %.3f, test accuracy %.3f ]\n", first, last,
              accuracy);
  kiln::set_executor(before);
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
