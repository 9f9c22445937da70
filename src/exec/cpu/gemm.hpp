// Matrix products through BLAS libraries: oneDNN's sgemm for f32, OpenBLAS's dgemm for f64.
#pragma once

#include "exec/fusion.hpp"

namespace kiln::detail::cpu {

// Computes the matmul node `root` from its two (batched) operands into `out`. Operands read
// through a transposing or batch-broadcasting view are passed to the library as they are;
// other views are copied first. Returns false for types the libraries do not cover.
bool matmul_with_library(const Node& root, const KernelInput& a, const KernelInput& b,
                         Buffer& out);

}  // namespace kiln::detail::cpu
