// What each fast executor computes itself and what it leaves to the host's reference code, pinned:
// a kernel family x type that starts falling back, or one that stops, fails here until the table
// below is changed on purpose (with the change that caused it). kiln::executor_report() is what a
// user asks; the table is read from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/executor.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;

// One graph per kernel family, built of values of type t (a family that refuses the type when
// the graph is built is left out: that is the op's rule, not the executor's).
std::vector<std::pair<std::string, std::function<Tensor()>>> families(DType t) {
  const auto x = [t] { return kiln::convert(kiln::uniform({4, 6}, 1) * 4.f - 2.f, t); };
  const auto square = [t] { return kiln::convert(kiln::uniform({4, 4}, 2) + 1.f, t); };
  const auto image = [t] { return kiln::convert(kiln::uniform({1, 2, 6, 6}, 3), t); };
  const auto rows = [] {
    return kiln::Tensor::from(std::vector<std::int64_t>{0, 5, 2, 1, 3, 4, 0, 1, 5, 5, 2, 0},
                              {4, 3});
  };
  return {
      {"elementwise", [=] { return x() * x() + x(); }},
      {"reduce", [=] { return kiln::sum(x() * x(), {1}); }},
      {"matmul", [=] { return kiln::matmul(x(), kiln::transpose(x(), 0, 1)); }},
      {"copy", [=] { return kiln::contiguous(kiln::transpose(x(), 0, 1)); }},
      {"concat", [=] { return kiln::concat(x(), x() * x(), 0); }},
      {"softmax", [=] { return kiln::softmax(x(), -1); }},
      {"cumsum", [=] { return kiln::cumsum(x(), 1); }},
      {"argsort", [=] { return kiln::argsort(x(), 1); }},
      {"gather", [=] { return kiln::gather(x(), 1, rows()); }},
      {"scatter_add",
       [=] { return kiln::scatter_add(x(), 1, rows(), kiln::gather(x(), 1, rows())); }},
      {"conv2d", [=] { return kiln::conv2d(image(), kiln::convert(kiln::ones({3, 2, 3, 3}), t)); }},
      {"max_pool2d", [=] { return kiln::max_pool2d(image(), {2, 2}); }},
      {"unslide_window",
       [=] {
         return kiln::unslide_window(kiln::sliding_window(x(), {2, 3}, {1, 1}) * x().sum(),
                                     {4, 6}, {1, 1});
       }},
      {"uniform", [=] { return kiln::uniform({3, 5}, 7, t) + kiln::uniform({3, 5}, 8, t); }},
      {"fft", [=] { return kiln::fft(x()); }},
      {"inv", [=] { return kiln::inv(square()); }},
  };
}

// "kind op dtype" of every kernel the executor left to the host while the families ran.
std::set<std::string> fallbacks_of(kiln::Executor& executor) {
  const auto counts = [&] {
    std::map<std::string, std::uint64_t> out;
    for (const kiln::ExecutorReportLine& l : kiln::executor_report())
      if (l.executor == executor.name()) out[l.kernel] = l.count;
    return out;
  };
  const auto before = counts();
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64, DType::f16, DType::bf16,
                  DType::boolean, DType::c64})
    for (const auto& [family, build] : families(t)) {
      Tensor result;
      try {
        result = build();
      } catch (const kiln::Error&) {
        continue;  // the op refuses the type
      }
      result.eval(executor);
      static_cast<void>(result.to_vector<double>());
    }
  std::set<std::string> out;
  for (const auto& [kernel, count] : counts()) {
    const auto it = before.find(kernel);
    if (it == before.end() || it->second < count) out.insert(kernel);
  }
  return out;
}

std::string listed(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& line : s) out += "  \"" + line + "\",\n";
  return out;
}

void expect_table(kiln::Executor& executor, const std::set<std::string>& pinned) {
  const std::set<std::string> seen = fallbacks_of(executor);
  std::set<std::string> added, gone;
  std::set_difference(seen.begin(), seen.end(), pinned.begin(), pinned.end(),
                      std::inserter(added, added.end()));
  std::set_difference(pinned.begin(), pinned.end(), seen.begin(), seen.end(),
                      std::inserter(gone, gone.end()));
  EXPECT_TRUE(added.empty()) << executor.name() << " now leaves to the host:\n" << listed(added);
  EXPECT_TRUE(gone.empty()) << executor.name() << " now computes itself:\n" << listed(gone)
                            << "(update the table in this test)";
  // Each fallback says why.
  for (const kiln::ExecutorReportLine& l : kiln::executor_report())
    if (l.executor == executor.name()) EXPECT_FALSE(l.reason.empty()) << l.kernel;
}

TEST(ExecutorSupport, CpuFallbacksArePinned) {
  // The reference's own kernels: integer products (no BLAS), random values, fft, unwindow; and
  // kernels of the narrow and complex types the CPU's code does not take.
  expect_table(*kiln::cpu_executor(), {
                                        "matmul matmul bool",
                                        "matmul matmul i32",
                                        "matmul matmul i64",
                                        "single argsort i64",
                                        "single concat c64",
                                        "single conv2d f64",
                                        "single cumsum bf16",
                                        "single cumsum c64",
                                        "single cumsum f16",
                                        "single fft c128",
                                        "single fft c64",
                                        "single gather bf16",
                                        "single gather bool",
                                        "single gather c64",
                                        "single gather f16",
                                        "single max_pool2d bool",
                                        "single max_pool2d i32",
                                        "single max_pool2d i64",
                                        "single random_uniform bf16",
                                        "single random_uniform f16",
                                        "single random_uniform f32",
                                        "single random_uniform f64",
                                        "single scatter_add bf16",
                                        "single scatter_add bool",
                                        "single scatter_add c64",
                                        "single scatter_add f16",
                                        "single solve bf16",
                                        "single solve f16",
                                        "single unwindow bf16",
                                        "single unwindow c64",
                                        "single unwindow f16",
                                        "single unwindow f32",
                                        "single unwindow f64",
                                        "single unwindow i32",
                                        "single unwindow i64",
                                      });
}

TEST(ExecutorSupport, OpenClFallbacksArePinned) {
  std::shared_ptr<kiln::Executor> opencl;
  try {
    opencl = kiln::opencl_executor();
  } catch (const kiln::Error& e) {
    GTEST_SKIP() << "no OpenCL device here: " << e.what();
  }
  // The LAPACK ops, and the one-node kernels of narrow types the renderer has no form for.
  expect_table(*opencl, {
                          "matmul matmul bf16",
                          "matmul matmul bool",
                          "matmul matmul f16",
                          "single argsort i64",
                          "single concat bf16",
                          "single concat bool",
                          "single concat f16",
                          "single contiguous bf16",
                          "single contiguous bool",
                          "single contiguous f16",
                          "single conv2d bf16",
                          "single conv2d f16",
                          "single cumsum bf16",
                          "single cumsum f16",
                          "single gather bf16",
                          "single gather bool",
                          "single gather f16",
                          "single max_pool2d bf16",
                          "single max_pool2d bool",
                          "single max_pool2d f16",
                          "single random_uniform bf16",
                          "single random_uniform f16",
                          "single scatter_add bf16",
                          "single scatter_add bool",
                          "single scatter_add f16",
                          "single softmax bf16",
                          "single softmax f16",
                          "single solve bf16",
                          "single solve f16",
                          "single solve f32",
                          "single solve f64",
                          "single unwindow bf16",
                          "single unwindow f16",
                        });
}

TEST(ExecutorSupport, TheReportNamesExecutorKernelAndReason) {
  // An integer product has no BLAS on the CPU: the reference computes it.
  const Tensor a = kiln::Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4}, {2, 2});
  kiln::matmul(a, a).eval(*kiln::cpu_executor());
  const auto report = kiln::executor_report();
  const auto line = std::find_if(report.begin(), report.end(), [](const auto& l) {
    return l.executor == "cpu" && l.kernel == "matmul matmul i32";
  });
  ASSERT_NE(line, report.end());
  EXPECT_EQ(line->reason, "no BLAS product of integers");
  EXPECT_GE(line->count, 1u);
}

TEST(ExecutorRegistry, NamesEveryExecutorOnceReferenceFirst) {
  const std::vector<std::string> names = kiln::executor_names();
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "reference");
  EXPECT_EQ(names[1], "cpu");
  EXPECT_NE(std::find(names.begin(), names.end(), "opencl"), names.end());
  for (const auto& e : kiln::executors()) {
    EXPECT_NE(std::find(names.begin(), names.end(), e->name()), names.end()) << e->name();
    EXPECT_EQ(kiln::find_executor(e->name()), e);
  }
  const kiln::Error unknown = [] {
    try {
      kiln::find_executor("tpu");
    } catch (const kiln::Error& e) {
      return e;
    }
    return kiln::Error(kiln::ErrorCode::none, "");
  }();
  EXPECT_EQ(unknown.code(), kiln::ErrorCode::invalid_select);
  EXPECT_NE(std::string(unknown.what()).find("reference, cpu, opencl, cuda"), std::string::npos)
      << unknown.what();
}

TEST(ExecutorRegistry, TheDeviceExecutorIsTheFirstDeviceThatRuns) {
  std::shared_ptr<kiln::Executor> device;
  try {
    device = kiln::device_executor();
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), kiln::ErrorCode::device_error) << e.what();
    GTEST_SKIP() << "no device executor here: " << e.what();
  }
  // OpenCL where it opens, else CUDA.
  bool opencl = true;
  try {
    kiln::opencl_executor();
  } catch (const kiln::Error&) {
    opencl = false;
  }
  EXPECT_EQ(device->name(), opencl ? "opencl" : "cuda");
}

TEST(ExecutorRegistry, KilnGpuChoosesTheDeviceExecutor) {
  const char* saved = std::getenv("KILN_GPU");
  const std::string restore = saved ? saved : "";
  setenv("KILN_GPU", "tpu", 1);
  const kiln::Error e = kiln_test::error_of([] { kiln::device_executor(); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::invalid_select);
  EXPECT_NE(std::string(e.what()).find("KILN_GPU=tpu names no device executor (known: opencl, cuda)"),
            std::string::npos) << e.what();
  setenv("KILN_GPU", "cpu", 1);  // an executor, but not a device one
  EXPECT_EQ(kiln_test::code_of([] { kiln::device_executor(); }), kiln::ErrorCode::invalid_select);
  for (const char* name : {"opencl", "cuda"}) {
    setenv("KILN_GPU", name, 1);
    try {
      EXPECT_EQ(kiln::device_executor()->name(), name);
    } catch (const kiln::Error& error) {
      EXPECT_EQ(error.code(), kiln::ErrorCode::device_error) << name << ": " << error.what();
    }
  }
  if (saved) setenv("KILN_GPU", restore.c_str(), 1);
  else unsetenv("KILN_GPU");
}

}  // namespace
