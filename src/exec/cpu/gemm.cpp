#include "exec/cpu/gemm.hpp"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <complex>
#include <optional>

#include "exec/cpu/bf16_gemm.hpp"
#include "exec/cpu/source.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/matrix_layout.hpp"
#include "exec/operand.hpp"
#include "kiln/error.hpp"

namespace kiln::detail::cpu {

namespace {

// One operand as a stack of matrices (matrix_layout.hpp), in its own buffer or a copy.
struct Matrices : MatrixLayout {
  std::shared_ptr<Buffer> owned;  // a contiguous copy, when the view could not be passed on
  const Buffer* buffer = nullptr;
};

Matrices describe_operand(const KernelInput& in, const Shape& shape, DType type) {
  Matrices m;
  if (auto layout = library_layout(in, shape, type)) {
    static_cast<MatrixLayout&>(m) = std::move(*layout);
    m.buffer = in.node->result.get();
    return m;
  }
  const Source src(*in.node->result, in.view);
  m.owned = std::make_shared<Buffer>(type, shape_numel(shape));
  src.read(0, m.owned->numel(), m.owned->data(), type);
  m.buffer = m.owned.get();
  static_cast<MatrixLayout&>(m) = row_major_layout(shape);
  return m;
}

// Products this small (multiply-adds) go to OpenBLAS, whose per-call cost is lower.
constexpr std::int64_t kSmallGemm = std::int64_t{1} << 18;

template <class T>
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T* c) {
  if constexpr (std::is_same_v<T, float>) {
    if (m * n * k <= kSmallGemm) {
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                  static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
                  static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f, c, static_cast<int>(n));
      return;
    }
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n) !=
        dnnl_success)
      throw Error(ErrorCode::internal_error, "matmul: oneDNN sgemm rejected its arguments");
  } else {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), 0.0, c, static_cast<int>(n));
  }
}

// Whether a stack of products runs as whole products spread over kiln's threads rather than one
// after another, each split by the library over the threads. Small products split poorly: on the
// 2-core machine of bench/RESULTS.md, [64,128,128]@[64,128,128] took 0.84 ms spread against 0.95
// to 1.01 ms split (kiln_bench), 64 products of 64x64 0.105 against 0.215 ms. Large products
// split well, and an uneven share of a few products (3 on 2 threads) costs more than splitting
// each. OpenBLAS (f64, small f32) runs its own threads above kSmallGemm, so f64 stacks are spread
// only below that.
bool spread_products(std::int64_t batches, std::int64_t product, bool f32) {
  constexpr std::int64_t kSpreadProduct = std::int64_t{1} << 22;  // multiply-adds, 160^3
  constexpr std::int64_t kSpreadTotal = std::int64_t{1} << 18;    // enough to wake the threads
  const std::int64_t threads = thread_count();
  return threads > 1 && batches >= threads && product <= (f32 ? kSpreadProduct : kSmallGemm) &&
         batches * product >= kSpreadTotal && (batches % threads == 0 || batches >= 4 * threads);
}

// A bf16 product with oneDNN's bf16 matmul; false (nothing written) where it has none.
bool bf16_matmul(const Node& root, const KernelInput& a_in, const KernelInput& b_in, Buffer& out) {
  const Shape& sa = root.inputs[0]->shape;
  const Shape& sb = root.inputs[1]->shape;
  const std::size_t rank = root.shape.size();
  const std::int64_t m = sa[rank - 2], k = sa[rank - 1], n = sb[rank - 1];
  if (m == 0 || n == 0 || k == 0) return false;  // (the f32 path fills k == 0 with zeros)
  const Matrices a = describe_operand(a_in, sa, DType::bf16);
  const Matrices b = describe_operand(b_in, sb, DType::bf16);
  const Shape batch(root.shape.begin(), root.shape.end() - 2);
  const std::int64_t batches = shape_numel(batch);
  auto* c = out.as<std::uint16_t>();
  for (std::int64_t bt = 0; bt < batches; ++bt) {
    const std::int64_t oa = batch_offset(a, batch, bt), ob = batch_offset(b, batch, bt);
    if (!bf16_gemm(a.transposed, b.transposed, m, n, k, a.buffer->as<std::uint16_t>() + oa, a.ld,
                   b.buffer->as<std::uint16_t>() + ob, b.ld, c + bt * m * n))
      return false;  // only the first product can fail: the primitive is made then
  }
  return true;
}

// A stack of complex products with BLAS's cgemm/zgemm. An operand of another type, or read
// through a view BLAS cannot take, is copied into a contiguous complex stack first.
bool complex_matmul(const Node& root, const KernelInput& a_in, const KernelInput& b_in,
                    Buffer& out) {
  const Shape& sa = root.inputs[0]->shape;
  const Shape& sb = root.inputs[1]->shape;
  const std::size_t rank = root.shape.size();
  const std::int64_t m = sa[rank - 2], k = sa[rank - 1], n = sb[rank - 1];
  if (m == 0 || n == 0) return true;
  const DType type = root.dtype;
  auto operand = [&](const KernelInput& in, const Shape& shape) {
    if (in.node->dtype == type)
      if (auto layout = library_layout(in, shape, type)) {
        Matrices matrices;
        static_cast<MatrixLayout&>(matrices) = std::move(*layout);
        matrices.buffer = in.node->result.get();
        return matrices;
      }
    const Operand values{in.node->result.get(), in.view, in.node->dtype, shape};
    Matrices matrices;
    matrices.owned = std::make_shared<Buffer>(type, shape_numel(shape));
    dispatch_with_complex(type, [&]<class T>() {
      if constexpr (is_complex_v<T>) {
        T* o = matrices.owned->as<T>();
        for (std::int64_t i = 0; i < matrices.owned->numel(); ++i) o[i] = values.get<T>(i);
      }
    });
    matrices.buffer = matrices.owned.get();
    static_cast<MatrixLayout&>(matrices) = row_major_layout(shape);
    return matrices;
  };
  const Matrices a = operand(a_in, sa), b = operand(b_in, sb);
  const Shape batch(root.shape.begin(), root.shape.end() - 2);
  const std::int64_t batches = shape_numel(batch);
  dispatch_with_complex(type, [&]<class T>() {
    if constexpr (is_complex_v<T>) {
      T* c = out.as<T>();
      const T one{1}, zero{0};
      for (std::int64_t bt = 0; bt < batches; ++bt) {
        const T* pa = a.buffer->as<T>() + batch_offset(a, batch, bt);
        const T* pb = b.buffer->as<T>() + batch_offset(b, batch, bt);
        T* pc = c + bt * m * n;
        if (k == 0) {
          std::fill(pc, pc + m * n, zero);
          continue;
        }
        const auto ta = a.transposed ? CblasTrans : CblasNoTrans;
        const auto tb = b.transposed ? CblasTrans : CblasNoTrans;
        if constexpr (std::is_same_v<T, std::complex<float>>)
          cblas_cgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n),
                      static_cast<int>(k), &one, pa, static_cast<int>(a.ld), pb,
                      static_cast<int>(b.ld), &zero, pc, static_cast<int>(n));
        else
          cblas_zgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n),
                      static_cast<int>(k), &one, pa, static_cast<int>(a.ld), pb,
                      static_cast<int>(b.ld), &zero, pc, static_cast<int>(n));
      }
    }
  });
  return true;
}

}  // namespace

// The product of f32 or f64 operands (`type`) into `out`, of that type.
bool matmul_of_float_type(const Node& root, const KernelInput& a_in, const KernelInput& b_in,
                          Buffer& out, DType type);

bool matmul_with_library(const Node& root, const KernelInput& a_in, const KernelInput& b_in,
                         Buffer& out) {
  if (is_complex(root.dtype)) return complex_matmul(root, a_in, b_in, out);
  if (!is_float(root.dtype)) return false;
  if (root.dtype == DType::bf16 && root.inputs[0]->dtype == DType::bf16 &&
      root.inputs[1]->dtype == DType::bf16 && bf16_matmul(root, a_in, b_in, out))
    return true;
  // Other 16-bit floats: the operands widened to f32 (where they are read), the product of f32.
  return computed_as_f32(root, out, [&](Buffer& values) {
    return matmul_of_float_type(root, a_in, b_in, values, arithmetic_type(root.dtype));
  });
}

bool matmul_of_float_type(const Node& root, const KernelInput& a_in, const KernelInput& b_in,
                          Buffer& out, DType type) {
  const Shape& sa = root.inputs[0]->shape;
  const Shape& sb = root.inputs[1]->shape;
  const std::size_t rank = root.shape.size();
  const std::int64_t m = sa[rank - 2], k = sa[rank - 1], n = sb[rank - 1];
  if (m == 0 || n == 0) return true;
  const Matrices a = describe_operand(a_in, sa, type);
  const Matrices b = describe_operand(b_in, sb, type);
  const Shape batch(root.shape.begin(), root.shape.end() - 2);
  const std::int64_t batches = shape_numel(batch);
  dispatch(type, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      T* c = out.as<T>();
      if (k == 0) {
        std::fill(c, c + out.numel(), T{0});
        return;
      }
      const auto products = [&](std::int64_t first, std::int64_t end) {
        for (std::int64_t bt = first; bt < end; ++bt) {
          const std::int64_t oa = batch_offset(a, batch, bt), ob = batch_offset(b, batch, bt);
          gemm<T>(a.transposed, b.transposed, m, n, k, a.buffer->as<T>() + oa, a.ld,
                  b.buffer->as<T>() + ob, b.ld, c + bt * m * n);
        }
      };
      if (spread_products(batches, m * n * k, std::is_same_v<T, float>))
        parallel_for(batches, 1, products);  // inside the region the libraries use one thread
      else
        products(0, batches);
    }
  });
  return true;
}

}  // namespace kiln::detail::cpu
