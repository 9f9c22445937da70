#include "table.hpp"

#include <cstdio>
#include <iomanip>
#include <ostream>
#include <vector>

namespace bench {

void print_cells(std::ostream& os, const std::vector<Column>& columns,
                 const std::vector<std::string>& cells) {
  os << "|";
  for (std::size_t i = 0; i < cells.size() && i < columns.size(); ++i)
    os << " " << std::left << std::setw(columns[i].width) << cells[i] << " |";
  os << "\n" << std::flush;
}

void print_header(std::ostream& os, const std::vector<Column>& columns) {
  std::vector<std::string> names, rules;
  for (const Column& c : columns) {
    names.push_back(c.name);
    rules.emplace_back(static_cast<std::size_t>(c.width), '-');
  }
  print_cells(os, columns, names);
  print_cells(os, columns, rules);
}

std::string number(double v) {
  char buf[32];
  if (v >= 100) std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (v >= 10) std::snprintf(buf, sizeof buf, "%.1f", v);
  else if (v >= 1) std::snprintf(buf, sizeof buf, "%.2f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string ratio_cell(double num, double den) {
  if (num < 0 || den <= 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", num / den);
  return buf;
}

namespace {

const std::vector<Column> kColumns{
    {"workload", 38},      {"threads", 7},     {"kiln ms", 11},
    {"libtorch ms", 11},   {"ratio (libtorch/kiln)", 21},
    {"memory bound ms", 15}, {"FMA bound ms", 12}, {"kiln/bound", 10}, {"libtorch config", 15},
    {"check vs libtorch", 17}};

std::string time_cell(double seconds, int ops) {
  if (seconds < 0) return "n/a";
  if (ops > 0) return number(seconds * 1e6 / ops) + " us/op";
  return number(seconds * 1e3);
}

}  // namespace

void print_header(std::ostream& os) { print_header(os, kColumns); }

void print_row(std::ostream& os, const Row& r) {
  const double bound = r.bound_s >= 0 ? r.bound_s : r.fma_bound_s;
  print_cells(os, kColumns,
              {r.workload, std::to_string(r.threads), time_cell(r.kiln_s, r.ops),
               time_cell(r.torch_s, r.ops), ratio_cell(r.torch_s, r.kiln_s),
               r.bound_s < 0 ? "-" : number(r.bound_s * 1e3),
               r.fma_bound_s < 0 ? "-" : number(r.fma_bound_s * 1e3),
               bound < 0 ? "-" : ratio_cell(r.kiln_s, bound),
               r.torch_config.empty() ? "n/a" : r.torch_config,
               r.check.empty() ? "n/a" : r.check});
}

}  // namespace bench
