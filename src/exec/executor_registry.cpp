#include "exec/executor_registry.hpp"

#include "kiln/error.hpp"

namespace kiln {

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
  };
  return entries;
}

}  // namespace detail
}  // namespace kiln
