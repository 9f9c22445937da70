// Activation modules, normalisation (LayerNorm, GroupNorm), Embedding, pooling (AvgPool2d,
// AdaptiveAvgPool2d) and Upsample.
#include <cmath>
#include <sstream>

#include "kiln/activations.hpp"
#include "kiln/indexing.hpp"
#include "api/builder.hpp"
#include "kiln/nn.hpp"
#include "kiln/normalization.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"
#include "kiln/windows.hpp"
#include "nn/checks.hpp"

namespace kiln::nn {

using checks::require;
using checks::require_positive;

// ---- activations ----------------------------------------------------------------------------------

Tensor GELU::forward(const Tensor& x) { return gelu(x); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, slope_); }
std::string LeakyReLU::describe() const {
  std::ostringstream s;
  s << "LeakyReLU(" << slope_ << ")";
  return s.str();
}
Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim_); }
std::string Softmax::describe() const { return "Softmax(dim " + std::to_string(dim_) + ")"; }

// ---- LayerNorm, GroupNorm -------------------------------------------------------------------------

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine)
    : shape_(std::move(normalized_shape)), eps_(eps) {
  require(!shape_.empty(), ErrorCode::illegal_dimension,
          "nn::LayerNorm: normalized_shape must not be empty");
  for (std::int64_t d : shape_) require_positive("LayerNorm", "normalized_shape", d);
  require(eps > 0, ErrorCode::illegal_dimension, "nn::LayerNorm: eps must be positive");
  if (elementwise_affine) {
    weight_ = register_parameter("weight", ones(shape_));
    bias_ = register_parameter("bias", zeros(shape_));
  }
}

void LayerNorm::reset_parameters() {
  if (weight_.defined()) weight_.copy_(ones(shape_));
  if (bias_.defined()) bias_.copy_(zeros(shape_));
}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, shape_, weight_.defined() ? weight_.value() : Tensor(),
                    bias_.defined() ? bias_.value() : Tensor(), eps_);
}

std::string LayerNorm::describe() const {
  return "LayerNorm(" + shape_to_string(shape_) + (weight_.defined() ? ", affine)" : ")");
}

GroupNorm::GroupNorm(std::int64_t groups, std::int64_t channels, double eps, bool affine)
    : groups_(groups), channels_(channels), eps_(eps) {
  require_positive("GroupNorm", "groups", groups);
  require_positive("GroupNorm", "channels", channels);
  require(channels % groups == 0, ErrorCode::illegal_dimension,
          "nn::GroupNorm: channels " + std::to_string(channels) + " must be a multiple of groups " +
              std::to_string(groups));
  require(eps > 0, ErrorCode::illegal_dimension, "nn::GroupNorm: eps must be positive");
  if (affine) {
    weight_ = register_parameter("weight", ones({channels}));
    bias_ = register_parameter("bias", zeros({channels}));
  }
}

void GroupNorm::reset_parameters() {
  if (weight_.defined()) weight_.copy_(ones({channels_}));
  if (bias_.defined()) bias_.copy_(zeros({channels_}));
}

Tensor GroupNorm::forward(const Tensor& x) {
  require(x.defined() && x.rank() >= 2 && x.size(1) == channels_, ErrorCode::incompatible_shapes,
          "nn::GroupNorm: expected an input [N, " + std::to_string(channels_) + ", ...], got " +
              (x.defined() ? shape_to_string(x.shape()) : std::string("an empty handle")));
  return group_norm(x, groups_, weight_.defined() ? weight_.value() : Tensor(),
                    bias_.defined() ? bias_.value() : Tensor(), eps_);
}

std::string GroupNorm::describe() const {
  return "GroupNorm(" + std::to_string(groups_) + " groups, " + std::to_string(channels_) +
         " channels" + (weight_.defined() ? ", affine)" : ")");
}

// ---- Embedding ------------------------------------------------------------------------------------

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim)
    : num_(num_embeddings), dim_(embedding_dim) {
  require_positive("Embedding", "num_embeddings", num_embeddings);
  require_positive("Embedding", "embedding_dim", embedding_dim);
  weight_ = register_parameter("weight", random_normal({num_, dim_}));
}

void Embedding::reset_parameters() { weight_.copy_(random_normal({num_, dim_})); }

Tensor Embedding::forward(const Tensor& indices) {
  return detail::as_called("nn::Embedding", {&indices}, [&] {
    require(indices.defined() && is_integer(indices.dtype()), ErrorCode::wrong_type,
            "nn::Embedding: needs integer indices, got " +
                (indices.defined() ? std::string(dtype_name(indices.dtype())) + " " +
                                         shape_to_string(indices.shape())
                                   : std::string("<empty>")));
    Shape out = indices.shape();
    out.push_back(dim_);
    return reshape(index_select(weight_.value(), 0, reshape(indices, {indices.numel()})), out);
  });
}

std::string Embedding::describe() const {
  return "Embedding(" + std::to_string(num_) + ", " + std::to_string(dim_) + ")";
}

// ---- AvgPool2d ------------------------------------------------------------------------------------

AvgPool2d::AvgPool2d(std::int64_t kernel_size, std::int64_t stride, std::int64_t padding)
    : kernel_(kernel_size), stride_(stride == 0 ? kernel_size : stride), padding_(padding) {
  require_positive("AvgPool2d", "kernel_size", kernel_size);
  require_positive("AvgPool2d", "stride", stride_);
  require(padding >= 0, ErrorCode::illegal_dimension,
          "nn::AvgPool2d: padding must be >= 0, got " + std::to_string(padding));
}

Tensor AvgPool2d::forward(const Tensor& x) {
  Pool2dOptions o;
  o.stride = {stride_, stride_};
  o.padding = {padding_, padding_};
  return avg_pool2d(x, {kernel_, kernel_}, o);
}

std::string AvgPool2d::describe() const {
  return "AvgPool2d(" + std::to_string(kernel_) + "x" + std::to_string(kernel_) + ", stride " +
         std::to_string(stride_) + ", padding " + std::to_string(padding_) + ")";
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(std::int64_t output_size)
    : AdaptiveAvgPool2d(std::array<std::int64_t, 2>{output_size, output_size}) {}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(std::array<std::int64_t, 2> output_size)
    : size_(output_size) {
  require_positive("AdaptiveAvgPool2d", "output height", size_[0]);
  require_positive("AdaptiveAvgPool2d", "output width", size_[1]);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return adaptive_avg_pool2d(x, size_); }

std::string AdaptiveAvgPool2d::describe() const {
  return "AdaptiveAvgPool2d(" + std::to_string(size_[0]) + "x" + std::to_string(size_[1]) + ")";
}

Upsample::Upsample(UpsampleOptions options) : options_(options) {
  const bool by_size = options.size[0] != 0 || options.size[1] != 0;
  if (by_size) {
    require_positive("Upsample", "output height", options.size[0]);
    require_positive("Upsample", "output width", options.size[1]);
  } else {
    require(options.scale_factor > 0 && std::isfinite(options.scale_factor),
            ErrorCode::invalid_select,
            "nn::Upsample: needs an output size or a positive scale factor");
  }
  require(!options.align_corners || options.mode == InterpolateMode::bilinear,
          ErrorCode::invalid_select, "nn::Upsample: align_corners is for bilinear mode only");
}

Tensor Upsample::forward(const Tensor& x) {
  if (!x.defined() || x.rank() != 4)
    throw Error(ErrorCode::illegal_dimensionality,
                "nn::Upsample: needs an input [N, C, H, W], got " +
                    (x.defined() ? shape_to_string(x.shape()) : std::string("<empty>")));
  Shape size{options_.size[0], options_.size[1]};
  if (size[0] == 0) {
    auto scaled = [&](std::int64_t n) {
      return static_cast<std::int64_t>(std::floor(static_cast<double>(n) * options_.scale_factor));
    };
    size = {scaled(x.size(2)), scaled(x.size(3))};
    if (size[0] < 1 || size[1] < 1)
      throw Error(ErrorCode::illegal_dimension,
                  "nn::Upsample: scale factor " + std::to_string(options_.scale_factor) +
                      " leaves no rows or columns of input " + shape_to_string(x.shape()));
  }
  return interpolate(x, size, options_.mode, options_.align_corners);
}

std::string Upsample::describe() const {
  const std::string mode = options_.mode == InterpolateMode::nearest ? "nearest" : "bilinear";
  if (options_.size[0] != 0)
    return "Upsample(" + std::to_string(options_.size[0]) + "x" + std::to_string(options_.size[1]) +
           ", " + mode + ")";
  return "Upsample(scale " + std::to_string(options_.scale_factor) + ", " + mode + ")";
}

}  // namespace kiln::nn
