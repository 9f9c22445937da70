// Matrix products on a CUDA device through cuBLAS: f32 (exact, TF32 only where
// kiln::set_float32_matmul_precision allows it), f64, c64 and c128, f16 and bf16 (on the tensor
// cores, summed in f32), with operands read through transposing and batch-broadcasting views as
// they are. cuBLAS is loaded when the first product asks for it (dlopen), so kiln runs where it
// is missing: products then run as the renderer's own kernel. Other products (integer types,
// views cuBLAS cannot express, empty matrices, sizes past int) also stay with the generated
// kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "exec/cuda/cuda_device.hpp"
#include "exec/matrix_layout.hpp"

namespace kiln::detail::cuda {

struct BlasOperand {
  CUdeviceptr memory;
  MatrixLayout layout;
};

class CublasMatmul {
 public:
  explicit CublasMatmul(std::shared_ptr<CudaDevice> device) : device_(std::move(device)) {}
  ~CublasMatmul();
  CublasMatmul(const CublasMatmul&) = delete;
  CublasMatmul& operator=(const CublasMatmul&) = delete;

  // Whether cuBLAS computes the matmul node `root` (its type and sizes; not whether it loads).
  static bool takes(const Node& root);

  // Queues root = a @ b into `out` (contiguous, row-major) on the device's stream. False when
  // cuBLAS is not installed or refused the call (its reason in `why`); throws out_of_memory when
  // the device ran out of memory.
  bool run(const Node& root, const BlasOperand& a, const BlasOperand& b, CUdeviceptr out,
           std::string& why);

  // The products cuBLAS has computed in this process (for tests and KILN_DEBUG).
  static std::uint64_t products();

 private:
  std::shared_ptr<CudaDevice> device_;
  void* handle_ = nullptr;  // cublasHandle_t, made on first use
  bool unavailable_ = false;
  std::string unavailable_why_;
};

}  // namespace kiln::detail::cuda
