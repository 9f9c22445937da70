// The OpenCL backend: the generated-kernel backend (exec/device/) on an OpenCL device, with
// matrix products through CLBlast where it takes them. Only kernels that run the user's C++
// callables, and the kernels of complex values the renderer has no form of (render.hpp:
// renders_complex), go to the runtime's host fallback, which KILN_DEBUG names and
// kiln::executor_report() lists.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "exec/codegen/render.hpp"
#include "exec/device/generated_backend.hpp"
#include "exec/matrix_layout.hpp"
#include "exec/opencl/clblast_matmul.hpp"
#include "exec/opencl/opencl_device.hpp"
#include "exec/runtime.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail::opencl {

namespace {

class OpenClBackend final : public device::GeneratedBackend {
 public:
  explicit OpenClBackend(std::shared_ptr<OpenClDevice> device)
      : GeneratedBackend(device), device_(std::move(device)) {
    // KILN_OPENCL_GRAPHS=1 records repeated schedules as lists of launches (recorded_schedule.cpp);
    // off by default: OpenCL has no graphs, so a replay saves only kiln's own work per kernel
    // while adding the copies of inputs and results.
    records_ = environment_is("KILN_OPENCL_GRAPHS", "1");
  }

  std::string_view name() const override { return "opencl"; }

  FusionPolicy fusion() const override {
    FusionPolicy p;
    p.host_callables = false;  // a C++ callable cannot run on the device
    // A chain of thousands of ops would be one kernel whose compilation takes longer than the
    // memory traffic of cutting it saves.
    p.max_ops = 256;
    p.narrow_types = true;  // elementwise kernels and reductions (can_render)
    // Complex values: the elementwise ops with a complex form fused like the others, products
    // through CLBlast; the host computes the other kernels of complex values.
    p.complex_single_kernels = true;
    p.complex_elementwise = &renders_complex;
    return p;
  }

 protected:
  bool library_supports(const Kernel& k, std::string& reason) const override {
    if (k.kind == Kernel::Kind::matmul && use_clblast_ &&
        clblast_takes(*k.root, device_->traits().fp64))
      return true;
    reason = "CLBlast does not take it";
    return false;
  }

  // A product CLBlast takes runs there; false leaves it to the generated kernel.
  bool library_kernel(const KernelRun& r) override {
    const Kernel& k = r.kernel;
    if (k.kind != Kernel::Kind::matmul || !use_clblast_ ||
        !clblast_takes(*k.root, device_->traits().fp64))
      return false;
    return library_product(r, [&](const device::DeviceBuffer& a, MatrixLayout a_layout,
                                  const device::DeviceBuffer& b, MatrixLayout b_layout,
                                  const device::DeviceBuffer& out, std::string& why) {
      return clblast_matmul(*device_, *k.root, {memory_of(a), std::move(a_layout)},
                            {memory_of(b), std::move(b_layout)}, memory_of(out), why);
    });
  }

 private:
  static cl_mem memory_of(const device::DeviceBuffer& b) {
    return static_cast<const ClMemory&>(b).handle();
  }

  std::shared_ptr<OpenClDevice> device_;
  // KILN_OPENCL_BLAS=0 computes products with the generated kernel (to compare, or to avoid
  // CLBlast's first-use compilation).
  const bool use_clblast_ = !environment_is("KILN_OPENCL_BLAS", "0");
};

// The device the executor opened, for simulate_device_loss.
std::weak_ptr<OpenClDevice>& opened_device() {
  static std::weak_ptr<OpenClDevice> device;
  return device;
}

}  // namespace

void simulate_device_loss(bool lost) {
  if (const auto device = opened_device().lock()) device->simulate_loss(lost);
}

}  // namespace detail::opencl

std::vector<std::string> opencl_devices() { return detail::opencl::device_list(); }

std::shared_ptr<Executor> opencl_executor() {
  // Opened once; a machine without a device gives the same error on every later call without
  // asking the driver again.
  static const std::variant<std::shared_ptr<Executor>, Error> instance =
      []() -> std::variant<std::shared_ptr<Executor>, Error> {
    try {
      auto device = detail::opencl::OpenClDevice::open();
      detail::opencl::opened_device() = device;
      return detail::make_runtime(
          std::make_unique<detail::opencl::OpenClBackend>(std::move(device)));
    } catch (const Error& e) {
      return e;
    }
  }();
  if (const auto* error = std::get_if<Error>(&instance)) throw *error;
  return std::get<std::shared_ptr<Executor>>(instance);
}

}  // namespace kiln
