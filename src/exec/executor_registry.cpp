#include "exec/executor_registry.hpp"

#include "kiln/error.hpp"

namespace kiln {

#ifndef KILN_HAS_CUDA
std::shared_ptr<Executor> cuda_executor() {
  throw Error(ErrorCode::device_error,
              "kiln was built without CUDA (the CUDA toolkit was not found, or KILN_WITH_CUDA=OFF)");
}
CudaMemoryStats cuda_memory_stats() {
  cuda_executor();  // throws
  return {};
}
#endif

#ifndef KILN_HAS_OPENCL
std::shared_ptr<Executor> opencl_executor() {
  throw Error(ErrorCode::device_error, "kiln was built without OpenCL (KILN_WITH_OPENCL=OFF)");
}
std::vector<std::string> opencl_devices() { return {}; }
#endif

namespace detail {

std::span<const ExecutorEntry> executor_registry() {
  // The reference executor first: it is the oracle the others are tested against.
  static constexpr ExecutorEntry entries[] = {
      {"reference", false, &reference_executor},
      {"cpu", false, &cpu_executor},
      // OpenCL before CUDA: the C API's GPU functions (the first device executor) stay on the
      // path whose C suite passes on NVIDIA's GPUs; under CUDA that suite's host memory grows
      // until the process is killed, which is still to be found. KILN_GPU=cuda chooses CUDA.
      {"opencl", true, &opencl_executor},
      {"cuda", true, &cuda_executor},
  };
  return entries;
}

}  // namespace detail
}  // namespace kiln
