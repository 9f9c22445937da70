// TransformerEncoder (a stack of encoder layers) and TransformerDecoderLayer, with PyTorch's
// parameter names and its order of blocks.
#include <sstream>

#include "kiln/activations.hpp"
#include "kiln/nn.hpp"
#include "nn/checks.hpp"

namespace kiln::nn {

using checks::require;
using checks::require_positive;

// ---- TransformerEncoder
// --------------------------------------------------------------------------

TransformerEncoder::TransformerEncoder(std::int64_t d_model, std::int64_t nhead,
                                       std::int64_t num_layers,
                                       TransformerEncoderLayerOptions options, bool final_norm) {
  require_positive("TransformerEncoder", "num_layers", num_layers);
  auto list = std::make_shared<ModuleList>();
  register_module("layers", list);
  for (std::int64_t i = 0; i < num_layers; ++i) {
    auto layer = std::make_shared<TransformerEncoderLayer>(d_model, nhead, options);
    if (i > 0) {  // PyTorch's layers are copies of one layer
      const auto first = layers_.front()->named_parameters();
      const auto own = layer->named_parameters();
      for (std::size_t p = 0; p < own.size(); ++p) own[p].second.copy_(first[p].second.value());
    }
    list->push_back(layer);
    layers_.push_back(std::move(layer));
  }
  if (final_norm) {
    norm_ = std::make_shared<LayerNorm>(Shape{d_model}, options.layer_norm_eps);
    register_module("norm", norm_);
  }
}

Tensor TransformerEncoder::forward(const Tensor& src) { return forward(src, {}); }

Tensor TransformerEncoder::forward(const Tensor& src, const AttentionMasks& masks) {
  Tensor x = src;
  for (const auto& layer : layers_) x = layer->forward(x, masks);
  return norm_ ? (*norm_)(x) : x;
}

std::string TransformerEncoder::describe() const {
  std::ostringstream s;
  s << "TransformerEncoder(" << layers_.size() << " layers" << (norm_ ? ", final norm" : "")
    << ")";
  return s.str();
}

// ---- TransformerDecoderLayer
// ---------------------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(std::int64_t d_model, std::int64_t nhead,
                                                 TransformerDecoderLayerOptions options)
    : d_model_(d_model), nhead_(nhead), options_(std::move(options)) {
  require(options_.activation == "relu" || options_.activation == "gelu", ErrorCode::invalid_select,
          "nn::TransformerDecoderLayer: activation must be \"relu\" or \"gelu\", got \"" +
              options_.activation + "\"");
  require_positive("TransformerDecoderLayer", "dim_feedforward", options_.dim_feedforward);
  // Registered in PyTorch's order, so that parameters list and save as PyTorch's do.
  self_attn_ = std::make_shared<MultiheadAttention>(d_model, nhead, options_.dropout, true,
                                                    options_.batch_first);
  multihead_attn_ = std::make_shared<MultiheadAttention>(d_model, nhead, options_.dropout, true,
                                                         options_.batch_first);
  linear1_ = std::make_shared<Linear>(d_model, options_.dim_feedforward);
  dropout_ = std::make_shared<Dropout>(options_.dropout);
  linear2_ = std::make_shared<Linear>(options_.dim_feedforward, d_model);
  norm1_ = std::make_shared<LayerNorm>(Shape{d_model}, options_.layer_norm_eps);
  norm2_ = std::make_shared<LayerNorm>(Shape{d_model}, options_.layer_norm_eps);
  norm3_ = std::make_shared<LayerNorm>(Shape{d_model}, options_.layer_norm_eps);
  dropout1_ = std::make_shared<Dropout>(options_.dropout);
  dropout2_ = std::make_shared<Dropout>(options_.dropout);
  dropout3_ = std::make_shared<Dropout>(options_.dropout);
  register_module("self_attn", self_attn_);
  register_module("multihead_attn", multihead_attn_);
  register_module("linear1", linear1_);
  register_module("dropout", dropout_);
  register_module("linear2", linear2_);
  register_module("norm1", norm1_);
  register_module("norm2", norm2_);
  register_module("norm3", norm3_);
  register_module("dropout1", dropout1_);
  register_module("dropout2", dropout2_);
  register_module("dropout3", dropout3_);
}

Tensor TransformerDecoderLayer::forward(const Tensor&) {
  throw Error(ErrorCode::invalid_select,
              "nn::TransformerDecoderLayer: forward needs the target and the encoder's output "
              "(forward(tgt, memory, ...))");
}

Tensor TransformerDecoderLayer::feed_forward_block(const Tensor& x) {
  const Tensor h = (*linear1_)(x);
  const Tensor a = options_.activation == "gelu" ? gelu(h) : relu(h);
  return (*dropout3_)((*linear2_)((*dropout_)(a)));
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const AttentionMasks& tgt_masks,
                                        const AttentionMasks& memory_masks) {
  auto self_block = [&](const Tensor& x) {
    return (*dropout1_)(self_attn_->forward(x, x, x, tgt_masks).output);
  };
  auto memory_block = [&](const Tensor& x) {
    return (*dropout2_)(multihead_attn_->forward(x, memory, memory, memory_masks).output);
  };
  Tensor x = tgt;
  if (options_.norm_first) {
    x = x + self_block((*norm1_)(x));
    x = x + memory_block((*norm2_)(x));
    return x + feed_forward_block((*norm3_)(x));
  }
  x = (*norm1_)(x + self_block(x));
  x = (*norm2_)(x + memory_block(x));
  return (*norm3_)(x + feed_forward_block(x));
}

std::string TransformerDecoderLayer::describe() const {
  std::ostringstream s;
  s << "TransformerDecoderLayer(d_model " << d_model_ << ", " << nhead_ << " heads, feed-forward "
    << options_.dim_feedforward << ", " << options_.activation
    << (options_.norm_first ? ", norm first" : "") << ")";
  return s.str();
}

}  // namespace kiln::nn
