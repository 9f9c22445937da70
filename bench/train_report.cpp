#include "train_report.hpp"

#include <cstdio>
#include <ostream>
#include <vector>

#include "table.hpp"

namespace bench {

namespace {

std::vector<Column> columns(bool full_epoch) {
  return {{"side", 8},
          {"config", 22},
          {"threads", 7},
          {"ms/batch", 8},
          {full_epoch ? "s/epoch (measured)" : "s/epoch (extrapolated)", 22},
          {"images/s", 8},
          {"peak RSS MiB", 12},
          {"RSS at start MiB", 16},
          {"time libtorch/kiln", 18},
          {"loss first -> last", 18}};
}

std::string cell(double v) { return v < 0 ? "n/a" : number(v); }

}  // namespace

double seconds_per_batch(const ChildOutcome& o) {
  if (!o.ok || o.result.timed_batches <= 0) return -1;
  return o.result.timed_seconds / static_cast<double>(o.result.timed_batches);
}

void print_train_header(std::ostream& os, bool full_epoch) {
  print_header(os, columns(full_epoch));
}

void print_train_row(std::ostream& os, const TrainRow& row) {
  std::string ms = "n/a", epoch = "n/a", rate = "n/a", peak = "n/a", start = "n/a",
              ratio = "-", loss = "n/a";
  if (row.outcome && row.outcome->ok) {
    const ChildOutcome& o = *row.outcome;
    const SideResult& r = o.result;
    const double per_batch = seconds_per_batch(o);
    ms = cell(per_batch * 1e3);
    // A whole epoch has one short batch at the end; extrapolating by the batch count of an
    // epoch counts it as a full one (at most one batch of error).
    epoch = cell(row.full_epoch ? r.timed_seconds
                                : per_batch * static_cast<double>(r.epoch_batches));
    rate = cell(static_cast<double>(r.timed_images) / r.timed_seconds);
    peak = cell(o.peak_rss_mb);
    start = cell(r.start_rss_mb);
    if (row.side != "kiln") ratio = ratio_cell(per_batch, row.kiln_seconds_per_batch);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f -> %.3f", r.first_loss, r.last_loss);
    loss = buf;
  } else if (row.outcome) {
    ms = epoch = rate = loss = "FAILED";
    peak = cell(row.outcome->peak_rss_mb);
  }
  print_cells(os, columns(row.full_epoch),
              {row.side, row.config, std::to_string(row.threads), ms, epoch, rate, peak, start,
               ratio, loss});
}

}  // namespace bench
