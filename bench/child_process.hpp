// Runs one side of kiln_train_bench in a forked child process, so that its memory, and so its
// peak resident set size, is its own and not mixed with the other side's.
#pragma once

#include <functional>
#include <string>

#include "train_bench.hpp"

namespace bench {

struct ChildOutcome {
  bool ok = false;       // the child finished and reported a result without error
  SideResult result;     // as the child wrote it (valid when the child got to write it)
  double peak_rss_mb = -1;  // the child's ru_maxrss from wait4()
  std::string failure;   // why !ok: the child's error, its exit status or signal
};

// Forks; the child runs `work`, sends the result it filled through a pipe and leaves with
// _exit() (no exit handlers or destructors of state inherited from the parent run in it).
// Exceptions in `work` become the result's error.
ChildOutcome run_in_child(const std::function<void(SideResult&)>& work);

// For the child: its resident memory now (from /proc/self/statm), in MiB; -1 if unknown.
double current_rss_mb();
// For the child: resets the kernel's high-water mark of its resident memory to what is resident
// now (Linux's /proc/self/clear_refs, "5"), so that the peak wait4() reports counts from here on.
// False where that is not possible.
bool reset_peak_rss();

}  // namespace bench
