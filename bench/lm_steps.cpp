// The loop both sides of kiln_lm_bench run: untimed warm-up steps, then the timed ones, on the
// same batches (char_lm::Batches with the spec's seed).
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "char_model.hpp"
#include "lm_bench.hpp"

namespace bench {

void run_lm_steps(const LmSpec& spec, std::int64_t vocabulary_size, const LmStep& step,
                  SideResult& result) {
  const char_lm::Corpus corpus = char_lm::Corpus::load(spec.corpus);
  if (static_cast<std::int64_t>(corpus.vocabulary.size()) != vocabulary_size)
    throw std::runtime_error("kiln_lm_bench: the corpus changed while loading");
  const std::int64_t context = char_lm::ModelConfig{}.context;
  char_lm::Batches batches(corpus, spec.batch, context, spec.seed);
  std::vector<std::int64_t> inputs, targets;
  auto checked = [&](int i) {
    batches.next(inputs, targets);
    const double loss = step(inputs, targets);
    if (!std::isfinite(loss))
      throw std::runtime_error("the training loss is not finite at step " + std::to_string(i));
    return loss;
  };
  for (int i = 0; i < spec.warmup; ++i) {
    const double loss = checked(i);
    if (i == 0) result.first_loss = loss;
  }
  const int tail = std::min(10, spec.steps);
  double tail_sum = 0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (int i = 0; i < spec.steps; ++i) {
    const double loss = checked(spec.warmup + i);
    if (spec.warmup == 0 && i == 0) result.first_loss = loss;
    if (i + tail >= spec.steps) tail_sum += loss;
  }
  result.timed_seconds = std::chrono::duration<double>(clock::now() - start).count();
  result.timed_batches = spec.steps;
  result.timed_images = static_cast<std::int64_t>(spec.steps) * spec.batch * context;
  result.last_loss = tail > 0 ? tail_sum / tail : result.first_loss;
}

}  // namespace bench
