// Loops over chunks of contiguous values for the CPU executor's fused kernels. Each instruction
// set (generic x86-64, AVX2, AVX-512) has its own compiled copy of the float loops, with SLEEF's
// vectorised transcendental functions; the fastest copy the machine supports is chosen at run
// time, so one binary runs everywhere.
#pragma once

#include <cstdint>

#include "graph/op_registry.hpp"

namespace kiln::detail::cpu {

struct FloatLoops {
  const char* isa;
  // out[i] = op(a[i]) / op(a[i], b[i]) for the float-valued unary and arithmetic binary ops.
  void (*unary_f32)(Op op, const float* a, float* out, std::int64_t n);
  void (*unary_f64)(Op op, const double* a, double* out, std::int64_t n);
  void (*binary_f32)(Op op, const float* a, const float* b, float* out, std::int64_t n);
  void (*binary_f64)(Op op, const double* a, const double* b, double* out, std::int64_t n);
  // Horizontal reductions of a contiguous row (sum accumulates in several lanes).
  double (*row_sum_f32)(const float* a, std::int64_t n);
  float (*row_max_f32)(const float* a, std::int64_t n);
  float (*row_min_f32)(const float* a, std::int64_t n);
  // sums[i] += a[i]: one row of a column sum.
  void (*column_sum_f32)(const float* a, double* sums, std::int64_t n);
  // sums[i] += rows[0][i], then rows[1][i], ... rows[7][i]: eight rows of a column sum, with the
  // same additions in the same order as eight calls of column_sum_f32, but one pass over sums.
  void (*column_sum8_f32)(const float* const* rows, double* sums, std::int64_t n);
  // One output row of 2x2, stride 2 max pooling (input rows r0, r1), and its gradient: the
  // pooled gradient shared among each window's maxima, written to input rows d0, d1.
  void (*pool2x2_row_f32)(const float* r0, const float* r1, float* out, std::int64_t ow);
  void (*pool2x2_grad_row_f32)(const float* r0, const float* r1, const float* grad, float* d0,
                               float* d1, std::int64_t ow);
  // softmax (log: log_softmax) of one row.
  void (*softmax_row_f32)(const float* in, float* out, std::int64_t n, bool log);
  // One block of `channels` <= `block` channels of an image in oneDNN's channel-blocked layout
  // ([positions][block], unused channels padding each block) to planes ([channels][positions]).
  void (*unblock_channels_f32)(const float* blocked, float* planes, std::int64_t channels,
                               std::int64_t positions, std::int64_t block);
  // The reverse: planes to one block, the channels past `channels` zero.
  void (*block_channels_f32)(const float* planes, float* blocked, std::int64_t channels,
                             std::int64_t positions, std::int64_t block);
  // The 16-bit floats (graph/narrow_floats.hpp): their values as f32, f32 values rounded to
  // them (to nearest, ties to even; a NaN becomes the quiet NaN of its sign), and f32 values
  // rounded in place to the nearest value of the type.
  void (*widen_f16)(const std::uint16_t* in, float* out, std::int64_t n);
  void (*narrow_f16)(const float* in, std::uint16_t* out, std::int64_t n);
  void (*widen_bf16)(const std::uint16_t* in, float* out, std::int64_t n);
  void (*narrow_bf16)(const float* in, std::uint16_t* out, std::int64_t n);
  void (*round_f16)(float* values, std::int64_t n);
  void (*round_bf16)(float* values, std::int64_t n);
};

// The loops for the best instruction set this machine has (KILN_ISA=generic|avx2|avx512
// overrides, for testing).
const FloatLoops& float_loops();

// Whether `op` has a vectorised float loop.
bool has_float_loop(Op op);

}  // namespace kiln::detail::cpu
