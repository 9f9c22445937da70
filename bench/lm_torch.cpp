// libtorch's side of kiln_lm_bench: examples/char_lm's model written with the torch::nn C++ API
// (token and position embeddings, post-norm TransformerEncoderLayers under a causal mask, a
// linear head), trained the usual eager way on the same batches.
#include <torch/torch.h>

#include <kiln/kiln.hpp>
#include <limits>

#include "char_model.hpp"
#include "child_process.hpp"
#include "lm_bench.hpp"
#include "torch_threads.hpp"

namespace bench {

namespace {

namespace tnn = torch::nn;

struct CharTransformerImpl : tnn::Module {
  CharTransformerImpl(const char_lm::ModelConfig& c)
      : vocabulary(c.vocabulary),
        token(register_module("token", tnn::Embedding(c.vocabulary, c.d_model))),
        position(register_module("position", tnn::Embedding(c.context, c.d_model))),
        layers(register_module("layers", tnn::ModuleList())),
        head(register_module("head", tnn::Linear(c.d_model, c.vocabulary))) {
    for (std::int64_t i = 0; i < c.layers; ++i)
      layers->push_back(
          tnn::TransformerEncoderLayer(tnn::TransformerEncoderLayerOptions(c.d_model, c.heads)
                                           .dim_feedforward(c.feed_forward)
                                           .dropout(0.0)));
  }

  torch::Tensor forward(const torch::Tensor& tokens) {
    const std::int64_t T = tokens.size(0);
    torch::Tensor x = token(tokens) + position(torch::arange(T)).unsqueeze(1);
    const torch::Tensor causal =
        torch::full({T, T}, -std::numeric_limits<float>::infinity()).triu(1);
    for (const auto& layer : *layers)
      x = layer->as<tnn::TransformerEncoderLayer>()->forward(x, causal);
    return head(x);
  }

  std::int64_t vocabulary;
  tnn::Embedding token, position;
  tnn::ModuleList layers;
  tnn::Linear head;
};
TORCH_MODULE(CharTransformer);

}  // namespace

void lm_torch(const LmSpec& spec, const TorchConfig& config, SideResult& result) {
  kiln::set_num_threads(config.torch_threads);  // kiln shares libgomp with libtorch
  apply(config);
  torch::manual_seed(spec.seed);
  const char_lm::Corpus corpus = char_lm::Corpus::load(spec.corpus);
  result.start_rss_mb = current_rss_mb();
  result.peak_reset = reset_peak_rss();
  char_lm::ModelConfig c;
  c.vocabulary = static_cast<std::int64_t>(corpus.vocabulary.size());
  CharTransformer model(c);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(spec.lr));
  model->train();
  run_lm_steps(
      spec, c.vocabulary,
      [&](const std::vector<std::int64_t>& inputs, const std::vector<std::int64_t>& targets) {
        auto tensor = [&](const std::vector<std::int64_t>& v) {
          return torch::from_blob(const_cast<std::int64_t*>(v.data()), {c.context, spec.batch},
                                  torch::kLong);
        };
        optimizer.zero_grad();
        const torch::Tensor logits = model->forward(tensor(inputs));
        const torch::Tensor loss = tnn::functional::cross_entropy(
            logits.reshape({-1, c.vocabulary}), tensor(targets).reshape({-1}));
        loss.backward();
        optimizer.step();
        return loss.item<double>();
      },
      result);
}

}  // namespace bench
