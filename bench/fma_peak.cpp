#include "fma_peak.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace bench {

namespace {

// Twelve accumulators: more than an FMA's latency times the FMA units (4 cycles x 2 on current
// x86 cores), so the loop is bound by throughput. The result is returned, so the loop is kept.
constexpr int kChains = 12;

[[gnu::target("avx512f")]] float fma_loop_avx512(std::int64_t iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 x = _mm512_set1_ps(0.9999f), y = _mm512_set1_ps(0.0001f);
  for (std::int64_t k = 0; k < iterations; ++k)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  alignas(64) float lanes[16];
  float sum = 0;
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float v : lanes) sum += v;
  }
  return sum;
}

[[gnu::target("avx2,fma")]] float fma_loop_avx2(std::int64_t iterations) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 x = _mm256_set1_ps(0.9999f), y = _mm256_set1_ps(0.0001f);
  for (std::int64_t k = 0; k < iterations; ++k)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  alignas(32) float lanes[8];
  float sum = 0;
  for (int i = 0; i < kChains; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float v : lanes) sum += v;
  }
  return sum;
}

float fma_loop_sse(std::int64_t iterations) {
  __m128 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm_set1_ps(0.001f * static_cast<float>(i));
  const __m128 x = _mm_set1_ps(0.9999f), y = _mm_set1_ps(0.0001f);
  for (std::int64_t k = 0; k < iterations; ++k)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], x), y);
  alignas(16) float lanes[4];
  float sum = 0;
  for (int i = 0; i < kChains; ++i) {
    _mm_store_ps(lanes, acc[i]);
    for (float v : lanes) sum += v;
  }
  return sum;
}

struct Isa {
  const char* name;
  float (*loop)(std::int64_t);
  double flop_per_iteration;
};

Isa detect() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512", fma_loop_avx512, kChains * 16 * 2.0};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"avx2", fma_loop_avx2, kChains * 8 * 2.0};
  return {"sse", fma_loop_sse, kChains * 4 * 2.0};
}

const Isa& isa() {
  static const Isa chosen = detect();
  return chosen;
}

}  // namespace

const char* fma_peak_isa() { return isa().name; }

double fma_peak_flops(int threads, bool quick) {
  const std::int64_t iterations = 20'000'000;  // about 0.1 s per pass
  const int passes = quick ? 2 : 5;
  double best = 1e30;
  std::vector<float> sink(static_cast<std::size_t>(threads));
  for (int p = 0; p < passes; ++p) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { sink[static_cast<std::size_t>(t)] = isa().loop(iterations); });
    for (auto& th : pool) th.join();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  // The sums depend on every FMA; reading them keeps the loops from being optimised away.
  volatile float keep = 0;
  for (float s : sink) keep = keep + s;
  return isa().flop_per_iteration * static_cast<double>(iterations) * threads / best;
}

}  // namespace bench
