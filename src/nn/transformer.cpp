// TransformerEncoder and TransformerDecoder (stacks of layers), TransformerDecoderLayer and
// Transformer, with PyTorch's parameter names and its order of blocks.
#include <sstream>

#include "kiln/activations.hpp"
#include "kiln/nn.hpp"
#include "nn/checks.hpp"

namespace kiln::nn {

using checks::require;
using checks::require_positive;

namespace {
// `layer` takes `first`'s parameter values, as PyTorch's stacks copy one layer.
void copy_parameters(const Module& first, const Module& layer) {
  const auto from = first.named_parameters();
  const auto to = layer.named_parameters();
  for (std::size_t p = 0; p < to.size(); ++p) to[p].second.copy_(from[p].second.value());
}
}  // namespace

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
    if (i > 0) copy_parameters(*layers_.front(), *layer);  // PyTorch copies one layer
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

// ---- TransformerDecoder
// --------------------------------------------------------------------------

TransformerDecoder::TransformerDecoder(std::int64_t d_model, std::int64_t nhead,
                                       std::int64_t num_layers,
                                       TransformerDecoderLayerOptions options, bool final_norm) {
  require_positive("TransformerDecoder", "num_layers", num_layers);
  auto list = std::make_shared<ModuleList>();
  register_module("layers", list);
  for (std::int64_t i = 0; i < num_layers; ++i) {
    auto layer = std::make_shared<TransformerDecoderLayer>(d_model, nhead, options);
    if (i > 0) copy_parameters(*layers_.front(), *layer);
    list->push_back(layer);
    layers_.push_back(std::move(layer));
  }
  if (final_norm) {
    norm_ = std::make_shared<LayerNorm>(Shape{d_model}, options.layer_norm_eps);
    register_module("norm", norm_);
  }
}

Tensor TransformerDecoder::forward(const Tensor&) {
  throw Error(ErrorCode::invalid_select,
              "nn::TransformerDecoder: forward needs the target and the encoder's output "
              "(forward(tgt, memory, ...))");
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory,
                                   const AttentionMasks& tgt_masks,
                                   const AttentionMasks& memory_masks) {
  Tensor x = tgt;
  for (const auto& layer : layers_) x = layer->forward(x, memory, tgt_masks, memory_masks);
  return norm_ ? (*norm_)(x) : x;
}

std::string TransformerDecoder::describe() const {
  std::ostringstream s;
  s << "TransformerDecoder(" << layers_.size() << " layers" << (norm_ ? ", final norm" : "")
    << ")";
  return s.str();
}

// ---- Transformer
// ---------------------------------------------------------------------------------

Transformer::Transformer(std::int64_t d_model, std::int64_t nhead, TransformerOptions options)
    : d_model_(d_model), nhead_(nhead) {
  encoder_ = std::make_shared<TransformerEncoder>(d_model, nhead, options.num_encoder_layers,
                                                  options.layer, true);
  decoder_ = std::make_shared<TransformerDecoder>(d_model, nhead, options.num_decoder_layers,
                                                  options.layer, true);
  register_module("encoder", encoder_);
  register_module("decoder", decoder_);
  // PyTorch's _reset_parameters: Xavier's uniform initialisation of every matrix.
  for (const auto& [name, p] : named_parameters())
    if (p.shape().size() == 2) p.copy_(xavier_uniform(p.shape(), p.shape()[1], p.shape()[0]));
}

Tensor Transformer::forward(const Tensor&) {
  throw Error(ErrorCode::invalid_select,
              "nn::Transformer: forward needs the source and the target (forward(src, tgt, ...))");
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const AttentionMasks& src_masks,
                            const AttentionMasks& tgt_masks, const AttentionMasks& memory_masks) {
  const Tensor memory = encoder_->forward(src, src_masks);
  return decoder_->forward(tgt, memory, tgt_masks, memory_masks);
}

std::string Transformer::describe() const {
  std::ostringstream s;
  s << "Transformer(d_model " << d_model_ << ", " << nhead_ << " heads, "
    << encoder_->num_layers() << " encoder and " << decoder_->num_layers() << " decoder layers)";
  return s.str();
}

}  // namespace kiln::nn
