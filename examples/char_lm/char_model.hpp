// The character-level language model of examples/char_lm, shared with bench/lm_kiln.cpp: the
// corpus (the licence texts every Debian system ships in /usr/share/common-licenses), its batches,
// and a small decoder-only Transformer (token and position embeddings, causal
// TransformerEncoderLayers, a linear head).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <kiln/kiln.hpp>
#include <kiln/nn.hpp>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace char_lm {

inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

// Every regular file of `dir`, in name order, one after another; the bytes seen give the
// vocabulary (sorted), each byte becoming its index.
struct Corpus {
  std::vector<std::int64_t> tokens;
  std::vector<unsigned char> vocabulary;

  static Corpus load(const std::string& dir) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    std::string text;
    for (const auto& path : files) {
      std::ifstream in(path, std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      text += bytes.str();
    }
    if (text.size() < 1024)
      throw std::runtime_error("char_lm: the corpus in " + dir + " has fewer than 1024 bytes");
    Corpus c;
    bool seen[256] = {};
    for (unsigned char ch : text) seen[ch] = true;
    std::int64_t index[256] = {};
    for (int b = 0; b < 256; ++b)
      if (seen[b]) {
        index[b] = static_cast<std::int64_t>(c.vocabulary.size());
        c.vocabulary.push_back(static_cast<unsigned char>(b));
      }
    c.tokens.reserve(text.size());
    for (unsigned char ch : text) c.tokens.push_back(index[ch]);
    return c;
  }
};

// Random windows of context + 1 tokens: inputs are the first `context`, targets the next ones.
// Both are [context, batch] (sequence first, as the layers take them), flattened row-major.
class Batches {
 public:
  Batches(const Corpus& corpus, std::int64_t batch, std::int64_t context, std::uint64_t seed)
      : corpus_(corpus), batch_(batch), context_(context), gen_(seed) {}

  void next(std::vector<std::int64_t>& inputs, std::vector<std::int64_t>& targets) {
    std::uniform_int_distribution<std::size_t> start(
        0, corpus_.tokens.size() - static_cast<std::size_t>(context_) - 1);
    inputs.assign(static_cast<std::size_t>(batch_ * context_), 0);
    targets.assign(inputs.size(), 0);
    for (std::int64_t b = 0; b < batch_; ++b) {
      const std::size_t s = start(gen_);
      for (std::int64_t t = 0; t < context_; ++t) {
        const auto at = static_cast<std::size_t>(t * batch_ + b);
        inputs[at] = corpus_.tokens[s + static_cast<std::size_t>(t)];
        targets[at] = corpus_.tokens[s + static_cast<std::size_t>(t) + 1];
      }
    }
  }

 private:
  const Corpus& corpus_;
  std::int64_t batch_, context_;
  std::mt19937_64 gen_;
};

struct ModelConfig {
  std::int64_t vocabulary = 0;
  std::int64_t context = 64;
  std::int64_t d_model = 64;
  std::int64_t heads = 4;
  std::int64_t layers = 2;
  std::int64_t feed_forward = 256;
};

// tokens [T, N] (T <= context) -> logits [T, N, vocabulary]; position t sees tokens 0..t.
class CharTransformer : public kiln::nn::Module {
 public:
  explicit CharTransformer(const ModelConfig& config) : config_(config) {
    namespace nn = kiln::nn;
    token_ = std::make_shared<nn::Embedding>(config.vocabulary, config.d_model);
    position_ = std::make_shared<nn::Embedding>(config.context, config.d_model);
    register_module("token", token_);
    register_module("position", position_);
    nn::TransformerEncoderLayerOptions options;
    options.dim_feedforward = config.feed_forward;
    options.dropout = 0.0;
    // Held typed here for forward(x, masks), and in a ModuleList for the names "layers.0...".
    auto list = std::make_shared<nn::ModuleList>();
    for (std::int64_t i = 0; i < config.layers; ++i) {
      layers_.push_back(
          std::make_shared<nn::TransformerEncoderLayer>(config.d_model, config.heads, options));
      list->push_back(layers_.back());
    }
    register_module("layers", list);
    head_ = std::make_shared<nn::Linear>(config.d_model, config.vocabulary);
    register_module("head", head_);
  }

  kiln::Tensor forward(const kiln::Tensor& tokens) override {
    const std::int64_t T = tokens.size(0);
    kiln::Tensor x = (*token_)(tokens) + (*position_)(kiln::arange(T)).unsqueeze(1);
    kiln::nn::AttentionMasks causal;
    causal.is_causal = true;
    for (const auto& layer : layers_) x = layer->forward(x, causal);
    return (*head_)(x);
  }

  std::string describe() const override {
    return "CharTransformer(vocabulary " + std::to_string(config_.vocabulary) + ", d_model " +
           std::to_string(config_.d_model) + ", " + std::to_string(config_.layers) + " layers)";
  }

  const ModelConfig& config() const { return config_; }

 private:
  ModelConfig config_;
  std::shared_ptr<kiln::nn::Embedding> token_, position_;
  std::vector<std::shared_ptr<kiln::nn::TransformerEncoderLayer>> layers_;
  std::shared_ptr<kiln::nn::Linear> head_;
};

// Mean cross-entropy of the next token over every position of the batch.
inline kiln::Tensor next_token_loss(CharTransformer& model, const kiln::Tensor& inputs,
                                    const kiln::Tensor& targets) {
  const kiln::Tensor logits = model(inputs);
  const std::int64_t vocabulary = model.config().vocabulary;
  return kiln::nn::cross_entropy(logits.reshape({-1, vocabulary}), targets.reshape({-1}));
}

}  // namespace char_lm
