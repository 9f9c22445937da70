// kiln_bench: kiln against libtorch (when it is installed) on the workloads of issue 6, at 1 and
// 2 threads. Prints one Markdown table: medians of repeated runs after warm-up, the ratio
// libtorch/kiln (above 1: kiln is faster) and, for memory-bound workloads, the time the bytes
// they move take at the bandwidth measured at the start of the same run; for matmul and
// convolution, the time their multiply-adds take at the FMA peak measured there too.
//
//   kiln_bench [--quick] [--filter <substring>]
#include <kiln/kiln.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bandwidth.hpp"
#include "fma_peak.hpp"
#include "bench.hpp"
#include "table.hpp"
#include "timing.hpp"
#ifdef KILN_BENCH_HAVE_TORCH
#include "torch_threads.hpp"
#endif

namespace {

struct Options {
  bool quick = false;
  std::string filter;
};

void usage(std::ostream& os) {
  os << "usage: kiln_bench [--quick] [--filter <substring>]\n"
        "  --quick            fewer repetitions (for a smoke test, not for recorded results)\n"
        "  --filter <text>    only the workloads whose name contains <text>\n";
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--filter" && i + 1 < argc) {
      o.filter = argv[++i];
    } else if (a.rfind("--filter=", 0) == 0) {
      o.filter = a.substr(9);
    } else if (a == "--help" || a == "-h") {
      usage(std::cout);
      std::exit(0);
    } else {
      std::cerr << "kiln_bench: unknown argument '" << a << "'\n";
      usage(std::cerr);
      return false;
    }
  }
  return true;
}

#ifdef KILN_BENCH_HAVE_TORCH
// kiln's result against libtorch's: the largest difference relative to libtorch's largest
// magnitude.
std::string check(const std::vector<float>& kiln, const std::vector<float>& ref) {
  if (kiln.size() != ref.size()) return "SIZE DIFFERS";
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = std::abs(static_cast<double>(kiln[i]) - ref[i]);
    diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    scale = std::max(scale, std::abs(static_cast<double>(ref[i])));
  }
  const double rel = scale > 0 ? diff / scale : diff;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s (%.0e)", rel <= 1e-4 ? "ok" : "DIFFERS", rel);
  return buf;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) return 2;
  const bench::RepeatPolicy policy = opt.quick ? bench::quick_policy() : bench::full_policy();
  const int thread_counts[] = {1, 2};
  std::vector<bench::Workload> selected;
  for (bench::Workload& w : bench::all_workloads())
    if (opt.filter.empty() || w.name.find(opt.filter) != std::string::npos)
      selected.push_back(std::move(w));
  if (selected.empty()) {
    std::cerr << "kiln_bench: no workload matches '" << opt.filter << "'\n";
    return 1;
  }

  std::cout << "kiln_bench" << (opt.quick ? " --quick" : "") << ": kiln executor '"
            << kiln::current_executor()->name() << "', " << std::thread::hardware_concurrency()
            << " hardware threads\n";
#ifdef KILN_BENCH_HAVE_TORCH
  std::cout << "libtorch " << bench::torch_version()
            << ": eager functional ops under InferenceMode; its f32 matmul uses OpenBLAS"
#ifdef KILN_BENCH_HAVE_OPENBLAS
            << " (tried with OpenBLAS on n threads and on 1; the faster is shown)"
#endif
            << "\n";
#else
  std::cout << "libtorch: not built in (KILN_BENCH_HAVE_TORCH unset); its columns show n/a\n";
#endif
  double bandwidth[3] = {0, 0, 0};
  for (int n : thread_counts) {
    bandwidth[n] = bench::stream_bandwidth(n, opt.quick);
    std::printf("stream bandwidth (read + write), %d thread%s: %.1f GB/s\n", n, n > 1 ? "s" : "",
                bandwidth[n] / 1e9);
  }
  double peak[3] = {0, 0, 0};
  for (int n : thread_counts) {
    peak[n] = bench::fma_peak_flops(n, opt.quick);
    std::printf("FMA peak (%s, f32), %d thread%s: %.0f GFLOP/s\n", bench::fma_peak_isa(), n,
                n > 1 ? "s" : "", peak[n] / 1e9);
  }
  if (bandwidth[2] < 1.3 * bandwidth[1])
    std::cout << "warning: 2 threads stream no faster than 1; the second core seems busy or "
                 "throttled, so the 2-thread rows are not meaningful in this run\n";
  std::cout << "times: median of repeated runs after warm-up; ratio above 1: kiln is faster\n\n";
  bench::print_header(std::cout);

  for (const bench::Workload& w : selected) {
    const bench::Inputs inputs = bench::make_inputs(w);
    auto kiln_case = bench::make_kiln_case(w, inputs);
#ifdef KILN_BENCH_HAVE_TORCH
    auto torch_case = bench::make_torch_case(w, inputs);
#endif
    std::string verdict;
    for (int n : thread_counts) {
      bench::Row row;
      row.workload = w.name;
      row.threads = n;
      row.ops = w.ops;
      if (w.bytes > 0) row.bound_s = w.bytes / bandwidth[n];
      if (w.flops > 0) {
        // Measured again right before: the machine's speed drifts, and a slow moment during the
        // first measurement would make the bound too loose. The fastest measurement counts.
        peak[n] = std::max(peak[n], bench::fma_peak_flops(n, true));
        row.fma_bound_s = w.flops / peak[n];
      }
      kiln::set_num_threads(n);
#ifdef KILN_BENCH_HAVE_TORCH
      const auto configs = bench::torch_configs(n, w.uses_blas);
      bench::apply(configs.front());
#endif
      row.kiln_s = bench::median_seconds([&] { kiln_case->run(); }, policy);
#ifdef KILN_BENCH_HAVE_TORCH
      for (const auto& config : configs) {
        bench::apply(config);
        const double t = bench::median_seconds([&] { torch_case->run(); }, policy);
        if (row.torch_s < 0 || t < row.torch_s) {
          row.torch_s = t;
          row.torch_config = config.label;
        }
      }
      bench::apply(configs.front());
      if (verdict.empty()) verdict = check(kiln_case->result(), torch_case->result());
      row.check = verdict;
#endif
      bench::print_row(std::cout, row);
    }
  }
  if (std::any_of(selected.begin(), selected.end(),
                  [](const bench::Workload& w) { return w.flops > 0; })) {
    std::printf("\nFMA peak behind the FMA bounds (the fastest measurement of the run):");
    for (int n : thread_counts)
      std::printf(" %.0f GFLOP/s at %d thread%s;", peak[n] / 1e9, n, n > 1 ? "s" : "");
    std::printf("\n");
  }
  return 0;
}
