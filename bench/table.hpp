// Result tables, printed as Markdown one row at a time (so progress shows while they run): the
// generic pieces (columns, cells, number formats) shared by kiln_bench and kiln_train_bench, and
// kiln_bench's own row.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace bench {

// ---- generic pieces ---------------------------------------------------------------------------
struct Column {
  std::string name;
  int width;  // cells are padded to this many characters
};

void print_header(std::ostream& os, const std::vector<Column>& columns);
// One row; `cells` has one entry per column.
void print_cells(std::ostream& os, const std::vector<Column>& columns,
                 const std::vector<std::string>& cells);
// About three significant digits, without exponent for values of 1 and more.
std::string number(double v);
// "1.23x" for num / den; "n/a" when either is missing (num < 0 or den <= 0).
std::string ratio_cell(double num, double den);

// ---- kiln_bench's table -----------------------------------------------------------------------
struct Row {
  std::string workload;
  int threads = 1;
  int ops = 0;                 // > 0: times are shown in microseconds per op
  double kiln_s = -1;          // seconds per run; < 0: not measured
  double torch_s = -1;
  double bound_s = -1;         // memory-bound time; < 0: not a memory-bound workload
  double fma_bound_s = -1;     // time at the FMA peak; < 0: not a compute-bound workload
  std::string torch_config;    // libtorch's fastest configuration
  std::string check;           // kiln's result against libtorch's
};

void print_header(std::ostream& os);
void print_row(std::ostream& os, const Row& row);

}  // namespace bench
