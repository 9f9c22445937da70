#include "bandwidth.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace bench {

namespace {

// Runs body(begin, end) on `threads` threads over equal parts of [0, n).
template <class F> void split(int threads, std::int64_t n, F body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([=] { body(n * t / threads, n * (t + 1) / threads); });
  for (auto& th : pool) th.join();
}

}  // namespace

double stream_bandwidth(int threads, bool quick) {
  const std::int64_t n = std::int64_t{1} << 26;  // 256 MiB per array
  std::unique_ptr<float[]> src(new float[n]);
  std::unique_ptr<float[]> dst(new float[n]);
  float* s = src.get();
  float* d = dst.get();
  // First touch by the threads that stream the part later.
  split(threads, n, [=](std::int64_t lo, std::int64_t hi) {
    std::fill(s + lo, s + hi, 1.0f);
    std::fill(d + lo, d + hi, 0.0f);
  });
  const int passes = quick ? 4 : 20;
  double best = 1e30;
  for (int p = 0; p < passes; ++p) {
    const auto start = std::chrono::steady_clock::now();
    split(threads, n, [=](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) d[i] = s[i] + 1.0f;
    });
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * static_cast<double>(n) * sizeof(float) / best;
}

}  // namespace bench
