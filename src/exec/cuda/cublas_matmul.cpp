#include "exec/cuda/cublas_matmul.hpp"

#include <cublas_v2.h>

#include <atomic>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>

#include "exec/cuda/loaded_library.hpp"
#include "exec/matmul_precision.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"

namespace kiln::detail::cuda {

namespace {

// cublasGemmStridedBatchedEx with a compute type (cublas_api.h also declares a C++ overload
// taking a cudaDataType, which makes decltype ambiguous).
using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const void*, const void*, cudaDataType, int, long long,
                                  const void*, cudaDataType, int, long long, const void*, void*,
                                  cudaDataType, int, long long, int, cublasComputeType_t,
                                  cublasGemmAlgo_t);

struct CublasApi {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasDestroy_v2) destroy;
  decltype(&::cublasSetStream_v2) set_stream;
  decltype(&::cublasSetMathMode) set_math_mode;
  decltype(&::cublasSgemmStridedBatched) sgemm;
  decltype(&::cublasDgemmStridedBatched) dgemm;
  decltype(&::cublasCgemmStridedBatched) cgemm;
  decltype(&::cublasZgemmStridedBatched) zgemm;
  GemmEx gemm_ex;
};

// Loaded once per process; null (with the reason) where cuBLAS is not installed.
const CublasApi* cublas_api(std::string& why) {
  static std::string missing;
  static const CublasApi* api = []() -> const CublasApi* {
    void* library = open_library({"libcublas.so.13", "libcublas.so"});
    if (library == nullptr) {
      missing = "cuBLAS (libcublas.so.13) is not installed here";
      return nullptr;
    }
    static CublasApi a{};
    const auto resolve = [&](const char* symbol, auto& into) {
      return cuda::resolve(library, symbol, into, missing);
    };
    const bool all = resolve("cublasCreate_v2", a.create) &&
                     resolve("cublasDestroy_v2", a.destroy) &&
                     resolve("cublasSetStream_v2", a.set_stream) &&
                     resolve("cublasSetMathMode", a.set_math_mode) &&
                     resolve("cublasSgemmStridedBatched", a.sgemm) &&
                     resolve("cublasDgemmStridedBatched", a.dgemm) &&
                     resolve("cublasCgemmStridedBatched", a.cgemm) &&
                     resolve("cublasZgemmStridedBatched", a.zgemm) &&
                     resolve("cublasGemmStridedBatchedEx", a.gemm_ex);
    return all ? &a : nullptr;
  }();
  if (api == nullptr) why = missing;
  return api;
}

std::atomic<std::uint64_t> computed{0};

constexpr auto kMostInt = static_cast<std::int64_t>(std::numeric_limits<int>::max());

// One strided-batched call of cuBLAS: C (m x n, column-major) = op1(X) op2(Y) over `batches`,
// each operand as its memory and an offset, offsets and strides in elements of the product's
// type.
struct CublasOperand {
  CUdeviceptr memory;
  std::int64_t at;
  int ld;
  long long stride;
};
using BatchedCall = std::function<cublasStatus_t(cublasOperation_t op1, cublasOperation_t op2,
                                                 int m, int n, int k, const CublasOperand& x,
                                                 const CublasOperand& y, const CublasOperand& c,
                                                 int batches)>;

// Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first, and an operand stored
// column-major ("transposed") is read with op T. One call where every batch is a stride apart,
// else one call per product (batch dimensions that do not nest: one broadcast, another not).
cublasStatus_t product_calls(const Node& root, const BlasOperand& a, const BlasOperand& b,
                             CUdeviceptr out, const BatchedCall& call) {
  const std::size_t rank = root.shape.size();
  const auto m = static_cast<int>(root.shape[rank - 2]);
  const auto n = static_cast<int>(root.shape[rank - 1]);
  const auto k = static_cast<int>(root.inputs[0]->shape[rank - 1]);
  const Shape batch(root.shape.begin(), root.shape.end() - 2);
  const std::int64_t batches = shape_numel(batch);
  const cublasOperation_t op_b = b.layout.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = a.layout.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto lda = static_cast<int>(a.layout.ld), ldb = static_cast<int>(b.layout.ld);
  const auto sa = single_batch_stride(a.layout, batch);
  const auto sb = single_batch_stride(b.layout, batch);
  const long long mn = static_cast<long long>(m) * n;
  if (batches == 1 || (sa && sb && *sa >= 0 && *sb >= 0))
    return call(op_b, op_a, n, m, k,
                {b.memory, batch_offset(b.layout, batch, 0), ldb, batches == 1 ? 0 : *sb},
                {a.memory, batch_offset(a.layout, batch, 0), lda, batches == 1 ? 0 : *sa},
                {out, 0, n, mn}, static_cast<int>(batches));
  for (std::int64_t i = 0; i < batches; ++i) {
    const cublasStatus_t status =
        call(op_b, op_a, n, m, k, {b.memory, batch_offset(b.layout, batch, i), ldb, 0},
             {a.memory, batch_offset(a.layout, batch, i), lda, 0}, {out, i * mn, n, 0}, 1);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
  }
  return CUBLAS_STATUS_SUCCESS;
}

// The element `o.at` of operand o's memory, of type S.
template <class S> S* element(const CublasOperand& o) {
  return reinterpret_cast<S*>(o.memory) + o.at;
}

template <class T> struct Gemm;
template <> struct Gemm<float> {
  static auto of(const CublasApi& a) { return a.sgemm; }
  using Scalar = float;
};
template <> struct Gemm<double> {
  static auto of(const CublasApi& a) { return a.dgemm; }
  using Scalar = double;
};
template <> struct Gemm<std::complex<float>> {
  static auto of(const CublasApi& a) { return a.cgemm; }
  using Scalar = cuComplex;
};
template <> struct Gemm<std::complex<double>> {
  static auto of(const CublasApi& a) { return a.zgemm; }
  using Scalar = cuDoubleComplex;
};

// A product of f32, f64, c64 or c128 values, in their type.
template <class T>
cublasStatus_t gemm(const CublasApi& api, cublasHandle_t handle, const Node& root,
                    const BlasOperand& a, const BlasOperand& b, CUdeviceptr out) {
  using S = typename Gemm<T>::Scalar;
  S one{};
  if constexpr (std::is_floating_point_v<S>) one = 1;
  else one.x = 1;
  const S zero{};
  const auto gemm_call = Gemm<T>::of(api);
  return product_calls(root, a, b, out,
                       [&](cublasOperation_t op1, cublasOperation_t op2, int m, int n, int k,
                           const CublasOperand& x, const CublasOperand& y, const CublasOperand& c,
                           int batches) {
                         return gemm_call(handle, op1, op2, m, n, k, &one, element<S>(x), x.ld,
                                          x.stride, element<S>(y), y.ld, y.stride, &zero,
                                          element<S>(c), c.ld, c.stride, batches);
                       });
}

// A product of f16 or bf16 values on the tensor cores: products of 16-bit values are exact in
// f32, they accumulate in f32 (reduced-precision reductions disallowed) and the result is rounded
// to its type once, as the reference computes them (in f32, rounded once) up to the order of
// the sums.
cublasStatus_t gemm_16bit(const CublasApi& api, cublasHandle_t handle, const Node& root,
                          const BlasOperand& a, const BlasOperand& b, CUdeviceptr out) {
  const cudaDataType type = root.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const float one = 1, zero = 0;
  return product_calls(root, a, b, out,
                       [&](cublasOperation_t op1, cublasOperation_t op2, int m, int n, int k,
                           const CublasOperand& x, const CublasOperand& y, const CublasOperand& c,
                           int batches) {
                         return api.gemm_ex(handle, op1, op2, m, n, k, &one,
                                            element<std::uint16_t>(x), type, x.ld, x.stride,
                                            element<std::uint16_t>(y), type, y.ld, y.stride, &zero,
                                            element<std::uint16_t>(c), type, c.ld, c.stride,
                                            batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                       });
}

}  // namespace

bool CublasMatmul::takes(const Node& root) {
  const DType part = real_type(root.dtype);
  if (!is_inexact(root.dtype) || (part != DType::f32 && part != DType::f64 &&
                                  part != DType::f16 && part != DType::bf16))
    return false;
  const std::size_t rank = root.shape.size();
  const std::int64_t k = root.inputs[0]->shape[rank - 1];
  const Shape batch(root.shape.begin(), root.shape.end() - 2);
  // cuBLAS takes int sizes and wants every dimension above zero; the rest is the renderer's.
  return root.numel() > 0 && k > 0 && root.shape[rank - 2] <= kMostInt &&
         root.shape[rank - 1] <= kMostInt && k <= kMostInt && shape_numel(batch) <= kMostInt;
}

CublasMatmul::~CublasMatmul() {
  std::string why;
  if (handle_ != nullptr) {
    device_->bind();
    cublas_api(why)->destroy(static_cast<cublasHandle_t>(handle_));
  }
}

bool CublasMatmul::run(const Node& root, const BlasOperand& a, const BlasOperand& b,
                       CUdeviceptr out, std::string& why) {
  const CublasApi* api = cublas_api(why);
  if (api == nullptr) return false;
  device_->usable();
  if (a.layout.ld > kMostInt || b.layout.ld > kMostInt) {
    why = "a leading dimension past int";
    return false;
  }
  if (handle_ == nullptr) {
    cublasHandle_t handle = nullptr;
    if (api->create(&handle) != CUBLAS_STATUS_SUCCESS) {
      why = "cublasCreate failed";
      return false;
    }
    handle_ = handle;
    api->set_stream(handle, device_->stream());
  }
  const auto handle = static_cast<cublasHandle_t>(handle_);
  // Exact products unless kiln::set_float32_matmul_precision let f32 ones use TF32
  // (NVIDIA_TF32_OVERRIDE is NVIDIA's own switch over both); 16-bit products sum in f32 only.
  const bool narrow = root.dtype == DType::f16 || root.dtype == DType::bf16;
  api->set_math_mode(handle, narrow ? static_cast<cublasMath_t>(
                                          CUBLAS_DEFAULT_MATH |
                                          CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
                             : root.dtype == DType::f32 && float32_products_may_use_tf32()
                                 ? CUBLAS_TF32_TENSOR_OP_MATH
                                 : CUBLAS_DEFAULT_MATH);
  cublasStatus_t status;
  switch (root.dtype) {
    case DType::f16:
    case DType::bf16: status = gemm_16bit(*api, handle, root, a, b, out); break;
    case DType::f32: status = gemm<float>(*api, handle, root, a, b, out); break;
    case DType::f64: status = gemm<double>(*api, handle, root, a, b, out); break;
    case DType::c64: status = gemm<std::complex<float>>(*api, handle, root, a, b, out); break;
    default: status = gemm<std::complex<double>>(*api, handle, root, a, b, out); break;
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    computed.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    throw Error(ErrorCode::out_of_memory,
                "CUDA: cuBLAS could not allocate its workspace for a product of shape " +
                    shape_to_string(root.shape));
  why = "cuBLAS refused the product (status " + std::to_string(static_cast<int>(status)) + ")";
  return false;
}

std::uint64_t CublasMatmul::products() { return computed.load(std::memory_order_relaxed); }

}  // namespace kiln::detail::cuda
