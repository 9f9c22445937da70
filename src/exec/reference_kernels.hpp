// The reference implementation of every op in the op table: plain per-op loops, written to be
// obviously correct. Faster executors are tested against these.
#pragma once

#include "graph/node.hpp"

namespace kiln::detail {

// Computes `node` into `out` (node.dtype, node.numel()). The inputs (or the bases of views) must
// hold results. A node of a 16-bit float type, or one reading such inputs, is computed widened
// (reference_narrow_floats.cpp): its 16-bit inputs read as f32, the op computed in f32, and its
// result rounded to its type.
void run_reference_kernel(const Node& node, Buffer& out);

// The kernels of the types with C++ arithmetic (i32, i64, f32, f64).
void run_typed_reference_kernel(const Node& node, Buffer& out);

// The kernels of the indexing and custom ops (reference_indexing_kernels.cpp).
void run_reference_indexing_kernel(const Node& node, Buffer& out);

// The kernels of conv2d, max_pool2d and their gradients (reference_window2d_kernels.cpp).
void run_reference_window2d_kernel(const Node& node, Buffer& out);

// The kernels of the linalg rows: LAPACK on the host (lapack_kernels.cpp). Every executor calls
// this same function, so LAPACK is the oracle for these ops.
void run_lapack_kernel(const Node& node, Buffer& out);

// The kernel of the fft row: KISS FFT on the host (spectral_kernels.cpp), for every executor.
void run_spectral_kernel(const Node& node, Buffer& out);

// The uniform [0, 1) value number `index` of the stream `seed`: a counter-based generator, so
// every executor produces the same values in any order.
double uniform_value(std::uint64_t seed, std::uint64_t index);
float uniform_value_f32(std::uint64_t seed, std::uint64_t index);

}  // namespace kiln::detail
