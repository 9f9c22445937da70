// parallel_for over OpenMP's thread team (the team oneDNN uses too), no more threads than the machine
// has cores; idle threads sleep.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace kiln::detail {

// A reference to a callable taking (begin, end), without std::function's allocation: a body
// passed to parallel_for lives until the call returns.
class RangeBody {
 public:
  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, RangeBody>)
  RangeBody(F&& f)  // NOLINT: converts from any callable, as std::function does
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, std::int64_t begin, std::int64_t end) {
          (*static_cast<std::remove_reference_t<F>*>(o))(begin, end);
        }) {}
  void operator()(std::int64_t begin, std::int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, std::int64_t, std::int64_t);
};

// Calls body(begin, end) on disjoint ranges covering [0, count), on the calling thread and the
// pool's workers. Ranges hold at least `grain` items, so small jobs stay on one thread.
void parallel_for(std::int64_t count, std::int64_t grain, RangeBody body);

// Kernels over fewer values than this run on the calling thread: waking the pool costs more
// than the other threads would save (a training step of a small model is made of such kernels).
constexpr std::int64_t kParallelValues = 16384;
// The grain for parallel_for over items of `values` values each.
inline std::int64_t grain_for(std::int64_t values) {
  return std::max<std::int64_t>(1, kParallelValues / std::max<std::int64_t>(values, 1));
}

// Threads that parallel_for uses, the caller included (default: the number of cores, or the
// KILN_NUM_THREADS environment variable).
int thread_count();
// Gives the calling thread's OpenMP setting kiln's thread count, which oneDNN's regions follow;
// called before each evaluation.
void use_thread_count();
void set_thread_count(int threads);

}  // namespace kiln::detail
