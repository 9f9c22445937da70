// The machine's arithmetic peak, measured in the same run as the workloads, for the compute-bound
// time of matmul and convolution: the ratio to libtorch can only go as far as libtorch is from
// this bound.
#pragma once

namespace bench {

// Single-precision FLOP per second of a loop of independent fused multiply-adds in the widest
// vectors the CPU has (AVX-512, else AVX2 with FMA, else SSE multiplies and adds), each counted
// as two FLOP, on `threads` threads at once: the fastest of several passes.
double fma_peak_flops(int threads, bool quick);

// The instruction set fma_peak_flops uses here: "avx512", "avx2" or "sse".
const char* fma_peak_isa();

}  // namespace bench
