// bf16 matrix products through oneDNN's matmul primitive: products of bf16 values accumulated in
// f32 and each result rounded to nearest even (the reference's rule for a bf16 matmul, up to the
// order of the additions), with AVX-512 BF16's dot products where the CPU has them.
#pragma once

#include <cstdint>

namespace kiln::detail::cpu {

// c [m, n] (row-major) = a [m, k] b [k, n], each operand row-major with leading dimension lda /
// ldb, or column-major where ta / tb. Returns false, computing nothing, where oneDNN has no bf16
// primitive for this CPU.
bool bf16_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
               const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b, std::int64_t ldb,
               std::uint16_t* c);

}  // namespace kiln::detail::cpu
