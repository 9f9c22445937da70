#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace bench {

RepeatPolicy full_policy() { return {2, 15, 1.0, 10.0, 1000}; }
RepeatPolicy quick_policy() { return {1, 3, 0.1, 1.0, 50}; }

double median_seconds(const std::function<void()>& run, const RepeatPolicy& policy) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < policy.warmup; ++i) run();
  std::vector<double> times;
  double total = 0;
  while (static_cast<int>(times.size()) < policy.max_reps) {
    const auto start = clock::now();
    run();
    const double t = std::chrono::duration<double>(clock::now() - start).count();
    times.push_back(t);
    total += t;
    const int done = static_cast<int>(times.size());
    if (done >= policy.min_reps && total >= policy.min_seconds) break;
    if (total >= policy.max_seconds && done >= std::min(policy.min_reps, 3)) break;
  }
  std::sort(times.begin(), times.end());
  const std::size_t n = times.size();
  return n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
}

}  // namespace bench
