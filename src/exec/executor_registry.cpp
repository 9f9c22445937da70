#include "exec/executor_registry.hpp"

#include "kiln/error.hpp"

namespace kiln {

#ifndef KILN_HAS_CUDA
std::shared_ptr<Executor> cuda_executor() {
  throw Error(ErrorCode::device_error,
              "kiln was built without CUDA (the CUDA toolkit was not found, or KILN_WITH_CUDA=OFF)");
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
      {"opencl", true, &opencl_executor},
      // After OpenCL, so that the C API's GPU functions keep the tested OpenCL path until the CUDA
      // backend has run its suite on a GPU; then it goes first (issue 39: CUDA on NVIDIA devices).
      {"cuda", true, &cuda_executor},
  };
  return entries;
}

}  // namespace detail
}  // namespace kiln
