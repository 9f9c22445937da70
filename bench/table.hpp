// The result table, printed as Markdown one row at a time (so progress shows while it runs).
#pragma once

#include <iosfwd>
#include <string>

namespace bench {

struct Row {
  std::string workload;
  int threads = 1;
  int ops = 0;                 // > 0: times are shown in microseconds per op
  double kiln_s = -1;          // seconds per run; < 0: not measured
  double torch_s = -1;
  double bound_s = -1;         // memory-bound time; < 0: not a memory-bound workload
  std::string torch_config;    // libtorch's fastest configuration
  std::string check;           // kiln's result against libtorch's
};

void print_header(std::ostream& os);
void print_row(std::ostream& os, const Row& row);

}  // namespace bench
