// kiln_train_bench: time per training epoch and peak memory of the Fashion-MNIST "2 Conv+pooling"
// CNN (the model of examples/fashion_mnist; Adam lr 1e-3, cross-entropy, batch 64) trained with
// kiln and with libtorch (when it is built in), side by side in one run. Each side, and each of
// libtorch's thread configurations, trains in its own forked child process on the same batches of
// the real data set, so that its peak resident memory is its own.
//
//   kiln_train_bench [--threads N] [--batches N] [--warmup N] [--full-epoch] [--data DIR]
//                    [--seed N] [--dtype f32|bf16|f16]

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "train_bench.hpp"
#include "train_report.hpp"
#ifdef KILN_BENCH_HAVE_TORCH
#include "torch_threads.hpp"
#endif

namespace {

struct Options {
  bench::TrainSpec spec;
  std::vector<int> threads{1, 2};
};

void usage(std::ostream& os) {
  os << "usage: kiln_train_bench [options]\n"
        "  --threads N     only N threads (default: 1, then 2)\n"
        "  --batches N     timed batches per side (default 150); the time per epoch is\n"
        "                  extrapolated from them\n"
        "  --warmup N      untimed batches before them (default 3)\n"
        "  --full-epoch    time one whole epoch (60,000 images) instead\n"
        "  --data DIR      directory of the Fashion-MNIST IDX files (default "
     << kiln::data::fashion_mnist_default_dir
     << ")\n"
        "  --seed N        seed for initialisation, shuffling and dropout (default 1)\n"
        "  --dtype T       f32 (default), or bf16 / f16: mixed precision, the layers computing\n"
        "                  in T and the parameters f32 (libtorch: its CPU autocast, bf16 only)\n";
}

bool parse(int argc, char** argv, Options& o) {
  auto value = [&](int& i, std::string& out) {
    if (i + 1 >= argc) {
      std::cerr << "kiln_train_bench: " << argv[i] << " needs a value\n";
      return false;
    }
    out = argv[++i];
    return true;
  };
  auto integer = [&](int& i, long long min, long long& out) {
    const std::string flag = argv[i];
    std::string s;
    if (!value(i, s)) return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0' || errno != 0 || out < min || out > 1000000) {
      std::cerr << "kiln_train_bench: " << flag << " needs an integer >= " << min << ", got '"
                << s << "'\n";
      return false;
    }
    return true;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    long long v = 0;
    if (a == "--threads") {
      if (!integer(i, 1, v)) return false;
      o.threads = {static_cast<int>(v)};
    } else if (a == "--batches") {
      if (!integer(i, 1, v)) return false;
      o.spec.batches = static_cast<int>(v);
    } else if (a == "--warmup") {
      if (!integer(i, 0, v)) return false;
      o.spec.warmup = static_cast<int>(v);
    } else if (a == "--seed") {
      if (!integer(i, 0, v)) return false;
      o.spec.seed = static_cast<std::uint64_t>(v);
    } else if (a == "--dtype") {
      std::string t;
      if (!value(i, t)) return false;
      if (t == "f32") o.spec.dtype = kiln::DType::f32;
      else if (t == "bf16") o.spec.dtype = kiln::DType::bf16;
      else if (t == "f16") o.spec.dtype = kiln::DType::f16;
      else {
        std::cerr << "kiln_train_bench: --dtype is f32, bf16 or f16, got '" << t << "'\n";
        return false;
      }
    } else if (a == "--full-epoch") {
      o.spec.full_epoch = true;
    } else if (a == "--data") {
      if (!value(i, o.spec.data_dir)) return false;
    } else if (a == "--help" || a == "-h") {
      usage(std::cout);
      std::exit(0);
    } else {
      std::cerr << "kiln_train_bench: unknown argument '" << a << "'\n";
      usage(std::cerr);
      return false;
    }
  }
  return true;
}

struct Group {
  int threads;
  bench::ChildOutcome kiln;
  std::vector<std::pair<std::string, bench::ChildOutcome>> torch;  // per configuration
};

std::string threads_text(int threads) {
  return std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

void progress(const std::string& what, int threads) {
  std::cerr << "kiln_train_bench: training " << what << ", " << threads_text(threads) << " ...\n";
}

// The index of libtorch's fastest configuration that finished; g.torch.size() if none did.
std::size_t best_torch(const Group& g) {
  std::size_t best = g.torch.size();
  for (std::size_t i = 0; i < g.torch.size(); ++i) {
    const double t = bench::seconds_per_batch(g.torch[i].second);
    if (t >= 0 && (best == g.torch.size() || t < bench::seconds_per_batch(g.torch[best].second)))
      best = i;
  }
  return best;
}

void print_group(const Group& g, bool full_epoch, std::vector<std::string>& failures) {
  const double kiln_s = bench::seconds_per_batch(g.kiln);
  if (!g.kiln.ok) failures.push_back("kiln, " + threads_text(g.threads) + ": " + g.kiln.failure);
  bench::print_train_row(std::cout, {"kiln", "kiln " + std::to_string(g.threads), g.threads,
                                     &g.kiln, full_epoch, kiln_s});
  const std::size_t best = best_torch(g);
  for (std::size_t i = 0; i < g.torch.size(); ++i) {
    const auto& [label, outcome] = g.torch[i];
    if (!outcome.ok) failures.push_back("libtorch (" + label + "): " + outcome.failure);
    bench::print_train_row(std::cout, {"libtorch", label + (i == best ? " (best)" : ""),
                                       g.threads, &outcome, full_epoch, kiln_s});
  }
  if (g.torch.empty()) {
#ifdef KILN_BENCH_HAVE_TORCH
    const char* why = "no f16 CPU autocast";
#else
    const char* why = "not built in";
#endif
    bench::print_train_row(std::cout, {"libtorch", why, g.threads, nullptr, full_epoch, kiln_s});
  }
}

void print_summary(const Group& g) {
  std::printf("%s: ", threads_text(g.threads).c_str());
  const double kiln_s = bench::seconds_per_batch(g.kiln);
  const std::size_t best = best_torch(g);
  if (kiln_s < 0 || best == g.torch.size()) {
    std::printf("no comparison (a side is missing)\n");
    return;
  }
  const auto& [label, outcome] = g.torch[best];
  std::printf("libtorch's best (%s) takes %.2fx kiln's time per batch (above 1: kiln is "
              "faster); peak RSS %.0f MiB (libtorch) vs %.0f MiB (kiln)\n",
              label.c_str(), bench::seconds_per_batch(outcome) / kiln_s, outcome.peak_rss_mb,
              g.kiln.peak_rss_mb);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) return 2;
  const bench::TrainSpec& spec = opt.spec;
  const char* policy = std::getenv("OMP_WAIT_POLICY");

  std::cout << "kiln_train_bench: Fashion-MNIST \"2 Conv+pooling\" CNN, Adam lr 1e-3, "
               "cross-entropy, batch "
            << spec.batch_size << ", data from " << spec.data_dir << "\n"
            << spec.warmup << " warm-up batch" << (spec.warmup == 1 ? "" : "es") << ", then "
            << (spec.full_epoch ? std::string("one whole epoch timed")
                                : std::to_string(spec.batches) +
                                      " timed batches, extrapolated to an epoch")
            << "; " << std::thread::hardware_concurrency() << " hardware threads; OMP_WAIT_POLICY="
            << (policy ? policy : "unset (libgomp's default: idle threads spin briefly, then sleep)")
            << " (both sides share libgomp)\n";
#ifdef KILN_BENCH_HAVE_TORCH
  std::cout << bench::torch_build_info()
            << "; its configurations at n threads: OpenBLAS on n threads and on 1, the faster "
               "marked (best)\n";
#else
  std::cout << "libtorch: not built in (KILN_BENCH_HAVE_TORCH unset); its rows show n/a\n";
#endif
  std::cout << "layers compute in " << kiln::dtype_name(spec.dtype)
            << (spec.dtype == kiln::DType::f32 ? "" : " (mixed precision: parameters and loss f32)")
            << (spec.dtype == kiln::DType::f16 ? "; libtorch has no f16 CPU autocast: no rows" : "")
            << "\n";
  std::cout << "each side trains in its own child process of this one program, so both sides' "
               "memory includes the code of both libraries; RSS at start: resident memory once "
               "that side has loaded the data\n\n";

  std::vector<Group> groups;
  for (int n : opt.threads) {
    Group g{n, {}, {}};
    progress("kiln", n);
    g.kiln = bench::run_in_child([&](bench::SideResult& r) { bench::train_kiln(spec, n, r); });
#ifdef KILN_BENCH_HAVE_TORCH
    // libtorch 1.13's CPU autocast has bf16 only: no f16 row to compare with.
    if (spec.dtype != kiln::DType::f16)
    for (const bench::TorchConfig& config : bench::torch_configs(n, /*uses_blas=*/true)) {
      progress("libtorch (" + config.label + ")", n);
      g.torch.emplace_back(config.label, bench::run_in_child([&](bench::SideResult& r) {
                             bench::train_torch(spec, config, r);
                           }));
    }
#endif
    groups.push_back(std::move(g));
  }

  std::vector<std::string> failures;
  bench::print_train_header(std::cout, spec.full_epoch);
  bool peak_reset = true;
  auto note_reset = [&](const bench::ChildOutcome& o) {
    if (o.ok && !o.result.peak_reset) peak_reset = false;
  };
  for (const Group& g : groups) {
    print_group(g, spec.full_epoch, failures);
    note_reset(g.kiln);
    for (const auto& t : g.torch) note_reset(t.second);
  }
  std::cout << "\n";
  for (const Group& g : groups) print_summary(g);
  std::cout << (peak_reset
                    ? "peak RSS: the most resident memory from the start of training (data "
                      "loaded) to the end, of each child process\n"
                    : "peak RSS: the child processes' whole lives, data loading included (the "
                      "peak could not be reset after loading)\n");
  for (const std::string& f : failures) std::cerr << "kiln_train_bench: FAILED: " << f << "\n";
  return failures.empty() ? 0 : 1;
}
