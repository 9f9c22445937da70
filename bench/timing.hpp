// Medians of repeated runs, after warm-up runs.
#pragma once

#include <functional>

namespace bench {

struct RepeatPolicy {
  int warmup;          // untimed runs first
  int min_reps;        // at least this many timed runs ...
  double min_seconds;  // ... and at least this much timed time,
  double max_seconds;  // but stop after this much once min_reps (or 3 runs) are done
  int max_reps;
};

RepeatPolicy full_policy();
RepeatPolicy quick_policy();

// The median wall time of one call of `run`, in seconds.
double median_seconds(const std::function<void()>& run, const RepeatPolicy& policy);

}  // namespace bench
