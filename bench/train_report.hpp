// kiln_train_bench's result table: one row per side and configuration.
#pragma once

#include <iosfwd>
#include <string>

#include "child_process.hpp"

namespace bench {

struct TrainRow {
  std::string side;     // "kiln" or "libtorch"
  std::string config;   // thread settings, " (best)" for libtorch's fastest
  int threads = 1;
  const ChildOutcome* outcome = nullptr;  // nullptr: not run (libtorch not built in)
  bool full_epoch = false;                // the timed batches were one whole epoch
  double kiln_seconds_per_batch = -1;     // kiln's at the same threads, for the ratio column
};

void print_train_header(std::ostream& os, bool full_epoch);
void print_train_row(std::ostream& os, const TrainRow& row);

// Seconds per timed batch; -1 when the side did not finish.
double seconds_per_batch(const ChildOutcome& outcome);

}  // namespace bench
