// parallel_for runs on OpenMP's thread team: oneDNN (matmul, convolution) uses the same team, so
// kiln never has two pools of busy threads competing for the cores. Idle team threads wait
// briefly and then sleep (libgomp's default policy).
#include "exec/cpu/parallel.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

namespace kiln::detail {

namespace {

int default_threads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<int>& threads() {
  static std::atomic<int> n{[] {
    const int t = default_threads();
    omp_set_num_threads(t);  // for oneDNN's regions too
    return t;
  }()};
  return n;
}

}  // namespace

void parallel_for(std::int64_t count, std::int64_t grain, RangeBody body) {
  if (count <= 0) return;
  const int team = threads().load();
  const std::int64_t by_grain = std::max<std::int64_t>(1, count / std::max<std::int64_t>(grain, 1));
  // One contiguous range per thread: each thread streams through its own part of the buffers.
  // On the 2-core machine of bench/RESULTS.md this beat four dynamically taken pieces per thread
  // in every memory-bound row (row add 0.78x -> 0.94x of libtorch at 2 threads).
  const std::int64_t pieces = std::min<std::int64_t>(team, by_grain);
  if (pieces <= 1 || team == 1 || omp_in_parallel()) {
    body(0, count);
    return;
  }
  // Exceptions must not leave an OpenMP region: the first one is kept and rethrown here.
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for schedule(static, 1) num_threads(team)
  for (std::int64_t piece = 0; piece < pieces; ++piece) {
    try {
      body(count * piece / pieces, count * (piece + 1) / pieces);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

int thread_count() { return threads().load(); }

void use_thread_count() {
  // OpenMP's thread count is a per-thread setting: a program that evaluates from several threads
  // gets kiln's count on each of them.
  const int team = threads().load();
  if (omp_get_max_threads() != team) omp_set_num_threads(team);
}

void set_thread_count(int n) {
  threads().store(std::max(1, n));
  // oneDNN sizes its parallel regions from the calling thread's OpenMP setting.
  omp_set_num_threads(std::max(1, n));
}

}  // namespace kiln::detail
