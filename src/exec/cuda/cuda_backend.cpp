// The CUDA backend: the generated-kernel backend (exec/device/) on a CUDA device, its kernels
// rendered in CUDA C (which spells out the NaN rule) and compiled by NVRTC for the device's
// architecture, with matrix products through cuBLAS, convolutions through cuDNN and Fourier
// transforms through cuFFT. Kernels that
// run the user's C++ callables, and the kernels of complex values the renderer has no form of
// (render.hpp: renders_complex), go to the runtime's host fallback, which KILN_DEBUG names and
// kiln::executor_report() lists.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <variant>

#include "exec/cuda/cublas_matmul.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "exec/cuda/cudnn_convolution.hpp"
#include "exec/cuda/cufft_transform.hpp"
#include "exec/codegen/render.hpp"
#include "exec/device/generated_backend.hpp"
#include "exec/matrix_layout.hpp"
#include "exec/runtime.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail::cuda {
namespace {

class CudaBackend final : public device::GeneratedBackend {
 public:
  explicit CudaBackend(std::shared_ptr<CudaDevice> device)
      : GeneratedBackend(device), device_(device), blas_(device), dnn_(device),
        fft_(std::move(device)) {
    // A repeated schedule (a training step) is captured once as a CUDA graph and launched as a
    // whole from then on (recorded_schedule.cpp); KILN_CUDA_GRAPHS=0 launches kernel by kernel.
    records_ = device_->records() && !environment_is("KILN_CUDA_GRAPHS", "0");
  }

  std::string_view name() const override { return "cuda"; }

  FusionPolicy fusion() const override {
    FusionPolicy p;
    p.host_callables = false;  // a C++ callable cannot run on the device
    // NVRTC compiles each math call inline (sin's argument reduction included): a chain of 256
    // takes seconds to build, 64 well under one (four launches instead of one).
    p.max_ops = 64;
    p.narrow_types = true;
    // Complex values: the elementwise ops with a complex form fused like the others; the other
    // kernels of complex values are kernels of their own (products through cuBLAS, transforms
    // through cuFFT).
    p.complex_single_kernels = true;
    p.complex_elementwise = &renders_complex;
    return p;
  }

 protected:
  std::uint64_t library_epoch() const override { return fft_.epoch(); }

  bool library_supports(const Kernel& k, std::string& reason) const override {
    if (k.kind == Kernel::Kind::matmul && use_blas_ && CublasMatmul::takes(*k.root)) return true;
    reason = "cuBLAS does not take it";
    return false;
  }

  // A product cuBLAS takes runs there, a convolution cuDNN takes there, a Fourier transform
  // cuFFT takes there; false leaves it to the generated kernel.
  bool library_kernel(const KernelRun& r) override {
    const Kernel& k = r.kernel;
    if (k.kind == Kernel::Kind::single && use_dnn_ && CudnnConvolution::takes(*k.root))
      return convolution(r);
    if (k.kind == Kernel::Kind::single && use_fft_ && CufftTransform::takes(*k.root))
      return transform(r);
    if (k.kind != Kernel::Kind::matmul || !use_blas_ || !CublasMatmul::takes(*k.root))
      return false;
    return library_product(r, [&](const device::DeviceBuffer& a, MatrixLayout a_layout,
                                  const device::DeviceBuffer& b, MatrixLayout b_layout,
                                  const device::DeviceBuffer& out, std::string& why) {
      return blas_.run(*k.root, {memory_of(a), std::move(a_layout)},
                       {memory_of(b), std::move(b_layout)}, memory_of(out), why);
    });
  }

 private:
  bool convolution(const KernelRun& r) {
    const Kernel& k = r.kernel;
    const Node& root = *k.root;
    // cuDNN reads both operands as they lie: contiguous, of the node's type.
    for (const KernelInput& in : k.inputs)
      if ((in.view != nullptr && !in.view->is_identity()) || in.node->result->dtype() != root.dtype)
        return false;
    const auto a = on_device(*k.inputs[0].node->result);
    const auto b = on_device(*k.inputs[1].node->result);
    Output out = output(r, 0, root);
    std::string why;
    if (!dnn_.run(root, memory_of(*a), memory_of(*b), memory_of(*out.memory), why)) {
      if (debug_)
        std::cerr << "[kiln] cuda: " << root.info().name << " " << shape_to_string(root.shape)
                  << ": " << why << "; the generated kernel computes it\n";
      return false;
    }
    publish(*k.root, std::move(out));
    return true;
  }

  bool transform(const KernelRun& r) {
    const Kernel& k = r.kernel;
    const Node& root = *k.root;
    // cuFFT reads the input as it lies: contiguous.
    const KernelInput& in = k.inputs[0];
    if (in.view != nullptr && !in.view->is_identity()) return false;
    const auto a = on_device(*in.node->result);
    Output out = output(r, 0, root);
    std::string why;
    if (!fft_.run(root, memory_of(*a), memory_of(*out.memory), why)) {
      if (debug_)
        std::cerr << "[kiln] cuda: fft " << shape_to_string(root.shape) << ": " << why
                  << "; the generated kernel computes it\n";
      return false;
    }
    publish(*k.root, std::move(out));
    return true;
  }

  static CUdeviceptr memory_of(const device::DeviceBuffer& b) {
    return static_cast<const CudaMemory&>(b).handle();
  }

  std::shared_ptr<CudaDevice> device_;
  CublasMatmul blas_;
  CudnnConvolution dnn_;
  CufftTransform fft_;
  // KILN_CUDA_BLAS=0 computes products with the generated kernel (to compare them).
  const bool use_blas_ = !environment_is("KILN_CUDA_BLAS", "0");
  // KILN_CUDA_DNN=0 computes convolutions with the generated kernels.
  const bool use_dnn_ = !environment_is("KILN_CUDA_DNN", "0");
  // KILN_CUDA_FFT=0 computes Fourier transforms with the generated kernel.
  const bool use_fft_ = !environment_is("KILN_CUDA_FFT", "0");
};

// The device the executor opened, for cuda_memory_stats.
std::weak_ptr<CudaDevice>& opened_device() {
  static std::weak_ptr<CudaDevice> device;
  return device;
}

}  // namespace
}  // namespace detail::cuda

std::shared_ptr<Executor> cuda_executor() {
  // Opened once; a machine without a driver or device gives the same error on every later call.
  static const std::variant<std::shared_ptr<Executor>, Error> instance =
      []() -> std::variant<std::shared_ptr<Executor>, Error> {
    try {
      auto device = detail::cuda::CudaDevice::open();
      detail::cuda::opened_device() = device;
      return detail::make_runtime(std::make_unique<detail::cuda::CudaBackend>(std::move(device)));
    } catch (const Error& e) {
      return e;
    }
  }();
  if (const auto* error = std::get_if<Error>(&instance)) throw *error;
  return std::get<std::shared_ptr<Executor>>(instance);
}

CudaMemoryStats cuda_memory_stats() {
  const std::shared_ptr<Executor> executor = cuda_executor();  // throws where there is no device
  const auto device = detail::cuda::opened_device().lock();
  if (!device) return {};
  CudaMemoryStats stats;
  stats.allocated = device->allocated_bytes();
  stats.reserved = stats.allocated + device->pooled_bytes();
  stats.peak = device->peak_bytes();
  return stats;
}

}  // namespace kiln
