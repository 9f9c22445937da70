#include "exec/opencl/clblast_matmul.hpp"

#include <clblast.h>

#include <atomic>
#include <complex>
#include <string>

#include "graph/node.hpp"

namespace kiln::detail::opencl {

bool clblast_takes(const Node& root, bool device_has_fp64) {
  const DType part = real_type(root.dtype);
  if (!is_inexact(root.dtype) || (part != DType::f32 && !(part == DType::f64 && device_has_fp64)))
    return false;
  const std::size_t rank = root.shape.size();
  // CLBlast wants every dimension above zero; empty products are the renderer's.
  return root.numel() > 0 && root.inputs[0]->shape[rank - 1] > 0;
}

namespace {

std::atomic<std::uint64_t> products{0};

template <class T>
clblast::StatusCode gemm(OpenClDevice& device, const Node& root, const BlasOperand& a,
                         const BlasOperand& b, cl_mem out) {
  using clblast::Layout, clblast::Transpose;
  const std::size_t rank = root.shape.size();
  const auto m = static_cast<std::size_t>(root.shape[rank - 2]);
  const auto n = static_cast<std::size_t>(root.shape[rank - 1]);
  const auto k = static_cast<std::size_t>(root.inputs[0]->shape[rank - 1]);
  const Shape batch(root.shape.begin(), root.shape.end() - 2);
  const std::int64_t batches = shape_numel(batch);
  const Transpose ta = a.layout.transposed ? Transpose::kYes : Transpose::kNo;
  const Transpose tb = b.layout.transposed ? Transpose::kYes : Transpose::kNo;
  const auto lda = static_cast<std::size_t>(a.layout.ld);
  const auto ldb = static_cast<std::size_t>(b.layout.ld);
  cl_command_queue queue = device.queue();
  const auto sa = single_batch_stride(a.layout, batch);
  const auto sb = single_batch_stride(b.layout, batch);
  if (batches == 1 ||
      (sa && sb && *sa >= 0 && *sb >= 0 && a.layout.offset >= 0 && b.layout.offset >= 0)) {
    device.enqueued();
    if (batches == 1)
      return clblast::Gemm<T>(Layout::kRowMajor, ta, tb, m, n, k, T{1}, a.memory,
                              static_cast<std::size_t>(batch_offset(a.layout, batch, 0)), lda,
                              b.memory, static_cast<std::size_t>(batch_offset(b.layout, batch, 0)),
                              ldb, T{0}, out, 0, n, &queue);
    return clblast::GemmStridedBatched<T>(
        Layout::kRowMajor, ta, tb, m, n, k, T{1}, a.memory,
        static_cast<std::size_t>(a.layout.offset), lda, static_cast<std::size_t>(*sa), b.memory,
        static_cast<std::size_t>(b.layout.offset), ldb, static_cast<std::size_t>(*sb), T{0}, out, 0,
        n, m * n, static_cast<std::size_t>(batches), &queue);
  }
  // Batch dimensions that do not nest (one broadcast, another not): one call per product.
  for (std::int64_t i = 0; i < batches; ++i) {
    device.enqueued();
    const auto status =
        clblast::Gemm<T>(Layout::kRowMajor, ta, tb, m, n, k, T{1}, a.memory,
                         static_cast<std::size_t>(batch_offset(a.layout, batch, i)), lda, b.memory,
                         static_cast<std::size_t>(batch_offset(b.layout, batch, i)), ldb, T{0}, out,
                         static_cast<std::size_t>(i) * m * n, n, &queue);
    if (status != clblast::StatusCode::kSuccess) return status;
  }
  return clblast::StatusCode::kSuccess;
}

}  // namespace

bool clblast_matmul(OpenClDevice& device, const Node& root, const BlasOperand& a,
                    const BlasOperand& b, cl_mem out, std::string& why) {
  clblast::StatusCode status;
  switch (root.dtype) {
    case DType::f32: status = gemm<float>(device, root, a, b, out); break;
    case DType::c64: status = gemm<std::complex<float>>(device, root, a, b, out); break;
    case DType::c128: status = gemm<std::complex<double>>(device, root, a, b, out); break;
    default: status = gemm<double>(device, root, a, b, out); break;
  }
  if (status == clblast::StatusCode::kSuccess) {
    products.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  const auto code = static_cast<cl_int>(status);
  // Codes above -1000 are OpenCL's own; the device running out of memory is the user's error.
  if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
      code == CL_OUT_OF_HOST_MEMORY)
    check(code, "CLBlast gemm");
  why = "CLBlast refused the product (status " + std::to_string(code) + ")";
  return false;
}

std::uint64_t clblast_products() { return products.load(std::memory_order_relaxed); }

}  // namespace kiln::detail::opencl
