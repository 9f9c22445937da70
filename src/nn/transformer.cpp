// The Transformer's layers (encoder and decoder layers, their stacks, and Transformer), with
// PyTorch's parameter names and its order of blocks.
#include <sstream>

#include "kiln/activations.hpp"
#include "kiln/nn.hpp"
#include "kiln/ops.hpp"
#include "nn/checks.hpp"

namespace kiln::nn {

using checks::require;
using checks::require_positive;

namespace {

void check_layer_options(const char* layer, const TransformerEncoderLayerOptions& options) {
  require(options.activation == "relu" || options.activation == "gelu", ErrorCode::invalid_select,
          std::string("nn::") + layer + ": activation must be \"relu\" or \"gelu\", got \"" +
              options.activation + "\"");
  require_positive(layer, "dim_feedforward", options.dim_feedforward);
}

// linear2(dropout(activation(linear1(x)))), the feed-forward block of every layer.
Tensor feed_forward(const Tensor& x, Linear& linear1, Dropout& dropout, Linear& linear2,
                    const std::string& activation) {
  const Tensor h = linear1(x);
  return linear2(dropout(activation == "gelu" ? gelu(h) : relu(h)));
}

// num_layers layers made by `make`, each starting with the first one's values as PyTorch's
// stacks copy one layer, in a ModuleList (names layers.{i}.*) and in `layers`.
template <class Layer, class Make>
std::shared_ptr<ModuleList> stack_of(const char* kind, std::int64_t num_layers, const Make& make,
                                     std::vector<std::shared_ptr<Layer>>& layers) {
  require_positive(kind, "num_layers", num_layers);
  auto list = std::make_shared<ModuleList>();
  for (std::int64_t i = 0; i < num_layers; ++i) {
    std::shared_ptr<Layer> layer = make();
    if (i > 0) {
      const auto from = layers.front()->named_parameters();
      const auto to = layer->named_parameters();
      for (std::size_t p = 0; p < to.size(); ++p) to[p].second.copy_(from[p].second.value());
    }
    list->push_back(layer);
    layers.push_back(std::move(layer));
  }
  return list;
}

std::string describe_layer(const char* kind, std::int64_t d_model, std::int64_t nhead,
                           const TransformerEncoderLayerOptions& options) {
  std::ostringstream s;
  s << kind << "(d_model " << d_model << ", " << nhead << " heads, feed-forward "
    << options.dim_feedforward << ", " << options.activation
    << (options.norm_first ? ", norm first" : "") << ")";
  return s.str();
}

std::string describe_stack(const char* kind, std::size_t layers, bool final_norm) {
  return std::string(kind) + "(" + std::to_string(layers) + " layers" +
         (final_norm ? ", final norm" : "") + ")";
}

}  // namespace

// ---- TransformerEncoderLayer
// ---------------------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(std::int64_t d_model, std::int64_t nhead,
                                                 TransformerEncoderLayerOptions options)
    : d_model_(d_model), nhead_(nhead), options_(std::move(options)) {
  check_layer_options("TransformerEncoderLayer", options_);
  // Registered in PyTorch's order, so that parameters list and save as PyTorch's do.
  self_attn_ = std::make_shared<MultiheadAttention>(d_model, nhead, options_.dropout, true,
                                                    options_.batch_first);
  linear1_ = std::make_shared<Linear>(d_model, options_.dim_feedforward);
  dropout_ = std::make_shared<Dropout>(options_.dropout);
  linear2_ = std::make_shared<Linear>(options_.dim_feedforward, d_model);
  norm1_ = std::make_shared<LayerNorm>(Shape{d_model}, options_.layer_norm_eps);
  norm2_ = std::make_shared<LayerNorm>(Shape{d_model}, options_.layer_norm_eps);
  dropout1_ = std::make_shared<Dropout>(options_.dropout);
  dropout2_ = std::make_shared<Dropout>(options_.dropout);
  register_module("self_attn", self_attn_);
  register_module("linear1", linear1_);
  register_module("dropout", dropout_);
  register_module("linear2", linear2_);
  register_module("norm1", norm1_);
  register_module("norm2", norm2_);
  register_module("dropout1", dropout1_);
  register_module("dropout2", dropout2_);
}

Tensor TransformerEncoderLayer::self_attention_block(const Tensor& x, const AttentionMasks& masks) {
  return (*dropout1_)(self_attn_->forward(x, x, x, masks).output);
}

Tensor TransformerEncoderLayer::feed_forward_block(const Tensor& x) {
  return (*dropout2_)(feed_forward(x, *linear1_, *dropout_, *linear2_, options_.activation));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src) { return forward(src, {}); }

Tensor TransformerEncoderLayer::forward(const Tensor& src, const AttentionMasks& masks) {
  Tensor x = src;
  if (options_.norm_first) {
    x = x + self_attention_block((*norm1_)(x), masks);
    return x + feed_forward_block((*norm2_)(x));
  }
  x = (*norm1_)(x + self_attention_block(x, masks));
  return (*norm2_)(x + feed_forward_block(x));
}

std::string TransformerEncoderLayer::describe() const {
  return describe_layer("TransformerEncoderLayer", d_model_, nhead_, options_);
}

// ---- TransformerEncoder
// --------------------------------------------------------------------------

TransformerEncoder::TransformerEncoder(std::int64_t d_model, std::int64_t nhead,
                                       std::int64_t num_layers,
                                       TransformerEncoderLayerOptions options, bool final_norm) {
  register_module("layers", stack_of(
                                "TransformerEncoder", num_layers,
                                [&] {
                                  return std::make_shared<TransformerEncoderLayer>(d_model, nhead,
                                                                                   options);
                                },
                                layers_));
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
  return describe_stack("TransformerEncoder", layers_.size(), norm_ != nullptr);
}

// ---- TransformerDecoderLayer
// ---------------------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(std::int64_t d_model, std::int64_t nhead,
                                                 TransformerDecoderLayerOptions options)
    : d_model_(d_model), nhead_(nhead), options_(std::move(options)) {
  check_layer_options("TransformerDecoderLayer", options_);
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
  return (*dropout3_)(feed_forward(x, *linear1_, *dropout_, *linear2_, options_.activation));
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
  return describe_layer("TransformerDecoderLayer", d_model_, nhead_, options_);
}

// ---- TransformerDecoder
// --------------------------------------------------------------------------

TransformerDecoder::TransformerDecoder(std::int64_t d_model, std::int64_t nhead,
                                       std::int64_t num_layers,
                                       TransformerDecoderLayerOptions options, bool final_norm) {
  register_module("layers", stack_of(
                                "TransformerDecoder", num_layers,
                                [&] {
                                  return std::make_shared<TransformerDecoderLayer>(d_model, nhead,
                                                                                   options);
                                },
                                layers_));
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
  return describe_stack("TransformerDecoder", layers_.size(), norm_ != nullptr);
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
