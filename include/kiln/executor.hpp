/// @file
/// Executors compute graph nodes. The reference executor is plain per-op code that serves as the
/// oracle for every faster executor.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

namespace detail {
struct Node;
}

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view name() const = 0;
  /// Computes the targets and every node they need that has no result yet. Results of
  /// intermediate nodes that no Tensor handle refers to may be released after their last use.
  virtual void execute(std::span<detail::Node* const> targets) = 0;

  /// One graph made ready to be computed again and again (what kiln::compile runs): prepare()
  /// walks, keys and schedules the graph once, and each run() executes that schedule from the
  /// values its leaves hold then. Between runs only results may change: its leaves' (new input
  /// values) and those of the nodes it computes, which the caller clears before each run. The
  /// leaves must hold values when prepare() is called; prepare() computes the targets once.
  class Prepared {
   public:
    virtual ~Prepared() = default;
    virtual void run() = 0;
  };
  virtual std::unique_ptr<Prepared> prepare(std::span<detail::Node* const> targets);
  /// Makes the values of the targets, which hold values, present in this executor's memory: a
  /// device executor uploads them now, so that its kernels that read them later transfer nothing;
  /// a host executor makes the host copy current (values computed on a device are read back).
  /// Memory given to Tensor::from_blob is read where it is at each use, so it is never placed.
  virtual void place(std::span<detail::Node* const> targets);
  /// Whether the node's values are present in this executor's memory now.
  virtual bool holds(const detail::Node& node) const;
  /// Waits until every kernel it has queued on its device has finished. Reading values does
  /// this by itself; a timing of device work needs it (the CPU executors never queue).
  virtual void synchronize() {}
};

/// Plain per-op code, the oracle.
std::shared_ptr<Executor> reference_executor();
/// Fused, vectorised and multi-threaded; the default.
std::shared_ptr<Executor> cpu_executor();
/// Generated OpenCL C kernels on an OpenCL device (KILN_OPENCL_DEVICE picks one by a part of its
/// name; default: the first GPU, else the first device). Throws kiln::Error(device_error) when
/// kiln was built without OpenCL or no device is present.
std::shared_ptr<Executor> opencl_executor();
/// Generated CUDA C kernels, compiled by NVRTC, on a CUDA device (KILN_CUDA_DEVICE picks one by
/// index; default: device 0). NVIDIA's driver and NVRTC are loaded when this is first called, so
/// kiln runs without them. Throws kiln::Error(device_error) when kiln was built without CUDA, or
/// the driver, NVRTC or a device is missing, saying which.
std::shared_ptr<Executor> cuda_executor();
/// The CUDA executor's device memory as its pool sees it, in bytes: `allocated` to tensors and
/// library workspaces now, `reserved` from the driver (allocated, plus what the pool keeps for
/// reuse), and `peak`, the most allocated at once since the executor opened. Throws
/// kiln::Error(device_error) as cuda_executor() does where there is no CUDA device.
struct CudaMemoryStats {
  std::size_t allocated = 0;
  std::size_t reserved = 0;
  std::size_t peak = 0;
};
CudaMemoryStats cuda_memory_stats();
/// The precision of f32 matrix products, as PyTorch's torch.set_float32_matmul_precision names
/// it: "highest" (the default) computes them in exact f32 everywhere; "high" and "medium" let
/// a CUDA device's cuBLAS use TF32 tensor cores (operands rounded to 10 bits of mantissa, sums
/// in f32), several times faster on large products and about 1e-3 off. The reference, CPU and
/// OpenCL executors compute f32 products exactly whatever the setting. Process-wide; another
/// name is an invalid_select error.
void set_float32_matmul_precision(std::string_view precision);
std::string float32_matmul_precision();
/// The OpenCL devices present, one line each: "platform:index name (type), OpenCL version" (the
/// "platform:index" form is what KILN_OPENCL_DEVICE accepts besides a part of the name). Empty
/// when kiln was built without OpenCL or no platform is installed.
std::vector<std::string> opencl_devices();
/// Every executor kiln has that can run here (a device's where the device is present), the
/// reference executor (the oracle) first, in the order of kiln's registry of executors
/// (executor_names()). A new backend is added to that registry; the registry-driven op test
/// (tests/test_registry_ops.cpp) then runs every op on it against the reference, and
/// `KILN_EXECUTOR=<its name>` makes it the default.
std::vector<std::shared_ptr<Executor>> executors();
/// The names of every executor kiln knows, in the registry's order ("reference", "cpu",
/// "opencl"), whether or not it can run here.
std::vector<std::string> executor_names();
/// The executor of that name (as KILN_EXECUTOR names them). A known executor that cannot run here
/// (no device, or built without it) throws its own error (device_error); an unknown name is an
/// invalid_select error that lists the names.
std::shared_ptr<Executor> find_executor(std::string_view name);
/// The first executor of a device that can run here, as the C API's *_gpu functions use it:
/// OpenCL, else CUDA; device_error naming each one tried when there is none. The environment
/// variable KILN_GPU (opencl or cuda) names the one to use instead (invalid_select for a name that
/// is not a device executor's).
std::shared_ptr<Executor> device_executor();
/// The executor eval() uses: cpu_executor(), or the one named by the environment variable
/// KILN_EXECUTOR (reference, cpu or opencl) at start-up, until set_executor() picks another.
std::shared_ptr<Executor> current_executor();
void set_executor(std::shared_ptr<Executor> executor);

/// One kind of kernel an executor left to the host's reference code in this process.
struct ExecutorReportLine {
  std::string executor;  ///< "opencl"
  std::string kernel;    ///< the kernel's kind, op and type: "single fft c64"
  std::string reason;    ///< why the executor did not compute it itself
  std::uint64_t count;   ///< kernels run so far
};
/// What ran where: every kind of kernel an executor has left to the host so far in this process
/// (KILN_DEBUG prints each such kernel as it runs). Empty when every kernel ran on its executor.
std::vector<ExecutorReportLine> executor_report();

/// Threads the CPU executor uses, the calling thread included (default: the number of cores, or
/// the environment variable KILN_NUM_THREADS).
int num_threads();
void set_num_threads(int threads);

}  // namespace kiln
