// kiln's side of kiln_lm_bench: examples/char_lm's model and step (optimizer.step(loss), which
// evaluates forward, backward and the Adam update in one pass).
#include <kiln/kiln.hpp>
#include <kiln/nn.hpp>

#include "char_model.hpp"
#include "child_process.hpp"
#include "lm_bench.hpp"

namespace bench {

void lm_kiln(const LmSpec& spec, int threads, SideResult& result) {
  kiln::set_num_threads(threads);
  kiln::nn::manual_seed(spec.seed);
  const char_lm::Corpus corpus = char_lm::Corpus::load(spec.corpus);
  result.start_rss_mb = current_rss_mb();
  result.peak_reset = reset_peak_rss();
  char_lm::ModelConfig config;
  config.vocabulary = static_cast<std::int64_t>(corpus.vocabulary.size());
  char_lm::CharTransformer model(config);
  kiln::nn::Adam optimizer(model.parameters(), {.lr = spec.lr});
  const kiln::Shape shape{config.context, spec.batch};
  run_lm_steps(
      spec, config.vocabulary,
      [&](const std::vector<std::int64_t>& inputs, const std::vector<std::int64_t>& targets) {
        kiln::Tensor loss;
        {
          kiln::GradientContext gradients;
          loss = char_lm::next_token_loss(model, kiln::Tensor::from(inputs, shape),
                                          kiln::Tensor::from(targets, shape));
        }
        optimizer.step(loss);
        return loss.item<double>();
      },
      result);
}

}  // namespace bench
