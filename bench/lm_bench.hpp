// kiln_lm_bench: the character-level Transformer of examples/char_lm trained by kiln and by
// libtorch on the same batches; what one side is asked to do.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "train_bench.hpp"

namespace bench {

struct LmSpec {
  std::string corpus = "/usr/share/common-licenses";
  std::int64_t batch = 32;
  int warmup = 3;    // untimed steps first
  int steps = 100;   // timed steps
  double lr = 3e-3;  // Adam
  std::uint64_t seed = 1;
};

// One training step on the next batch (inputs, targets [context, batch] row-major); its loss.
using LmStep = std::function<double(const std::vector<std::int64_t>& inputs,
                                    const std::vector<std::int64_t>& targets)>;
// Runs warm-up and timed steps on char_lm::Batches(spec.seed) and fills `result` (images are
// tokens here).
void run_lm_steps(const LmSpec& spec, std::int64_t vocabulary_size, const LmStep& step,
                  SideResult& result);

void lm_kiln(const LmSpec& spec, int threads, SideResult& result);
#ifdef KILN_BENCH_HAVE_TORCH
struct TorchConfig;
void lm_torch(const LmSpec& spec, const TorchConfig& config, SideResult& result);
#endif

}  // namespace bench
