// kiln_lm_bench: time per training step, tokens per second and peak memory of the
// character-level Transformer of examples/char_lm (2 post-norm encoder layers of width 64, 4
// heads, feed-forward 256, causal, context 64, batch 32, Adam), kiln against libtorch on the same
// batches. Each side trains in its own child process, so that its peak resident memory is its own.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <kiln/kiln.hpp>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "lm_bench.hpp"
#include "torch_threads.hpp"

namespace {

struct Row {
  std::string side;
  int threads;
  bench::ChildOutcome outcome;
};

void usage() {
  std::puts(
      "usage: kiln_lm_bench [--steps N] [--warmup N] [--threads N] [--corpus DIR]\n"
      "  --steps N     timed training steps per side (default 100)\n"
      "  --threads N   only N threads (default: 1, then 2)");
}

void print(const Row& r, double kiln_ms) {
  if (!r.outcome.ok) {
    std::printf("| %-28s | %7d | failed: %s\n", r.side.c_str(), r.threads,
                r.outcome.failure.c_str());
    return;
  }
  const bench::SideResult& s = r.outcome.result;
  const double ms = s.timed_seconds * 1e3 / static_cast<double>(s.timed_batches);
  const double tokens = static_cast<double>(s.timed_images) / s.timed_seconds;
  char ratio[32] = "-";
  if (kiln_ms > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", ms / kiln_ms);
  std::printf("| %-28s | %7d | %7.2f | %9.0f | %13.0f | %6.3f -> %6.3f | %13s |\n", r.side.c_str(),
              r.threads, ms, tokens, r.outcome.peak_rss_mb, s.first_loss, s.last_loss, ratio);
}

}  // namespace

int main(int argc, char** argv) {
  bench::LmSpec spec;
  std::vector<int> threads{1, 2};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--steps" && has_value)
      spec.steps = std::stoi(argv[++i]);
    else if (a == "--warmup" && has_value)
      spec.warmup = std::stoi(argv[++i]);
    else if (a == "--threads" && has_value)
      threads = {std::stoi(argv[++i])};
    else if (a == "--corpus" && has_value)
      spec.corpus = argv[++i];
    else {
      usage();
      return a == "--help" ? 0 : 2;
    }
  }
  std::cout << "kiln_lm_bench: char-level Transformer of examples/char_lm on " << spec.corpus
            << ", batch " << spec.batch << " x 64 tokens, Adam lr " << spec.lr << "; "
            << spec.warmup << " warm-up steps, " << spec.steps << " timed; "
            << std::thread::hardware_concurrency() << " hardware threads\n";
#ifndef KILN_BENCH_HAVE_TORCH
  std::cout << "libtorch: not built in (KILN_BENCH_HAVE_TORCH unset); only kiln runs\n";
#endif
  std::cout << "\n| side                         | threads | ms/step | tokens/s  | peak RSS MiB  "
               "| loss first -> last | libtorch/kiln |\n"
            << "| ---------------------------- | ------- | ------- | --------- | ------------- "
               "| ------------------ | ------------- |\n";
  bool failed = false;
  for (int n : threads) {
    Row kiln{"kiln", n,
             bench::run_in_child([&](bench::SideResult& r) { bench::lm_kiln(spec, n, r); })};
    print(kiln, 0);
    failed = failed || !kiln.outcome.ok;
    const double kiln_ms = kiln.outcome.ok
                               ? kiln.outcome.result.timed_seconds * 1e3 /
                                     static_cast<double>(kiln.outcome.result.timed_batches)
                               : 0;
#ifdef KILN_BENCH_HAVE_TORCH
    for (const bench::TorchConfig& config : bench::torch_configs(n, /*uses_blas=*/true)) {
      Row torch{
          "libtorch (" + config.label + ")", n,
          bench::run_in_child([&](bench::SideResult& r) { bench::lm_torch(spec, config, r); })};
      print(torch, kiln_ms);
      failed = failed || !torch.outcome.ok;
    }
#endif
  }
  std::cout << "\npeak RSS: the most resident memory of each side's child process from the start "
               "of training (corpus loaded) to the end; loss last: mean of the last 10 steps\n";
  return failed ? 1 : 0;
}
