// The CUDA backend: the generated-kernel backend (exec/device/) on a CUDA device, its kernels
// rendered in CUDA C (which spells out the NaN rule) and compiled by NVRTC for the device's
// architecture. Matrix products, convolutions and Fourier transforms through NVIDIA's libraries
// (cuBLASLt, cuDNN, cuFFT) are still to come: for now the generated kernels compute them, and
// complex values go to the host.
#include <memory>
#include <string>
#include <variant>

#include "exec/cuda/cuda_device.hpp"
#include "exec/device/generated_backend.hpp"
#include "exec/runtime.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail::cuda {
namespace {

class CudaBackend final : public device::GeneratedBackend {
 public:
  explicit CudaBackend(std::shared_ptr<CudaDevice> device) : GeneratedBackend(std::move(device)) {}

  std::string_view name() const override { return "cuda"; }

  FusionPolicy fusion() const override {
    FusionPolicy p;
    p.host_callables = false;  // a C++ callable cannot run on the device
    p.max_ops = 256;
    p.narrow_types = true;
    return p;
  }
};

}  // namespace
}  // namespace detail::cuda

std::shared_ptr<Executor> cuda_executor() {
  // Opened once; a machine without a driver or device gives the same error on every later call.
  static const std::variant<std::shared_ptr<Executor>, Error> instance =
      []() -> std::variant<std::shared_ptr<Executor>, Error> {
    try {
      return detail::make_runtime(
          std::make_unique<detail::cuda::CudaBackend>(detail::cuda::CudaDevice::open()));
    } catch (const Error& e) {
      return e;
    }
  }();
  if (const auto* error = std::get_if<Error>(&instance)) throw *error;
  return std::get<std::shared_ptr<Executor>>(instance);
}

}  // namespace kiln
