/// @file
/// kiln::nn: neural-network modules, initialisations, losses, optimisers and saving/loading of
/// parameters, all built on kiln's public tensor API and autodiff.
///
///   kiln::nn::manual_seed(1);
///   kiln::nn::Sequential model(kiln::nn::Linear(784, 128), kiln::nn::ReLU(),
///                              kiln::nn::Linear(128, 10));
///   kiln::nn::Adam opt(model.parameters(), {.lr = 1e-3});
///   Tensor loss;
///   {
///     kiln::GradientContext ctx;                     // the forward graph is differentiable
///     loss = kiln::nn::cross_entropy(model(x), labels);
///   }
///   opt.step(loss);  // forward, backward and update evaluated in one pass
///
/// Parameters. A kiln graph is immutable, so "updating a parameter in place" means replacing the
/// tensor in its slot: a Parameter is a shared handle to a slot holding the current value (a
/// floating leaf tensor marked with watch()). A module and the optimiser that trains it hold
/// handles to the same slots, so the module computes with the values the optimiser stored last.
/// The tensor a Parameter gives (value(), or the Parameter itself where a Tensor is expected)
/// reads the slot too, as do its copies: `Tensor w = register_parameter("w", ...)` kept in a
/// member trains, as in libtorch.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/composite_ops.hpp"
#include "kiln/losses.hpp"
#include "kiln/ops.hpp"
#include "kiln/safetensors.hpp"
#include "kiln/tensor.hpp"

namespace kiln::nn {

/// ---- random initialisation ----------------------------------------------------------------------
/// nn draws every seed it needs (initialisation, dropout masks) from kiln's one global generator
/// (kiln::manual_seed, kiln::next_seed), so a program that calls manual_seed(s) first and then
/// builds and trains a model the same way gets the same numbers on every run. Modules draw their
/// seeds when they are constructed; Sequential's constructor initialises its modules again in
/// their order, so `Sequential(a, b, c)` gives the same parameters whatever order the compiler
/// constructs a, b and c in.
using kiln::manual_seed;
using kiln::next_seed;

/// f32 tensors of `shape` drawn uniformly from [low, high); seed 0 draws one from next_seed().
Tensor uniform(Shape shape, double low, double high, std::uint64_t seed = 0);
/// Kaiming (He) uniform: U(-b, b) with b = gain * sqrt(3 / fan_in) and gain = sqrt(2 / (1 + a^2))
/// (the gain of leaky ReLU with negative slope a). a = 0 suits ReLU networks; a = sqrt(5) gives
/// b = 1 / sqrt(fan_in), PyTorch's default for Linear and Conv2d weights (and what this module
/// uses, see default_weight_init).
Tensor kaiming_uniform(Shape shape, std::int64_t fan_in, double a = 0.0, std::uint64_t seed = 0);
/// Xavier (Glorot) uniform: U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform(Shape shape, std::int64_t fan_in, std::int64_t fan_out, double gain = 1.0,
                      std::uint64_t seed = 0);

class Parameter;

/// In-place initialisation of a parameter, as PyTorch's torch.nn.init: each replaces the value by
/// new values of its shape, drawn from the generator that nn::manual_seed seeds. Fans come from the
/// shape as PyTorch computes them: a weight [out, in, k...] has fan_in = in * k... and fan_out =
/// out * k...; a shape of fewer than two dimensions has none (illegal_dimension).
namespace init {
std::pair<std::int64_t, std::int64_t> fans(const Shape& shape);  ///< (fan_in, fan_out)
void uniform_(const Parameter& p, double low = 0.0, double high = 1.0);
void normal_(const Parameter& p, double mean = 0.0, double std = 1.0);
void constant_(const Parameter& p, double value);
void zeros_(const Parameter& p);
void ones_(const Parameter& p);
/// U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)); N(0, gain * sqrt(2 / (fan_in + fan_out))).
void xavier_uniform_(const Parameter& p, double gain = 1.0);
void xavier_normal_(const Parameter& p, double gain = 1.0);
/// fan_in mode with the gain of leaky ReLU of negative slope a (a = 0: ReLU):
/// U(-b, b), b = gain * sqrt(3 / fan_in); N(0, gain / sqrt(fan_in)).
void kaiming_uniform_(const Parameter& p, double a = 0.0);
void kaiming_normal_(const Parameter& p, double a = 0.0);
}  // namespace init

/// ---- parameters -----------------------------------------------------------------------------------
class Parameter {
 public:
  Parameter() = default;  ///< an empty handle
  /// A new slot holding `value` as a watched leaf: of its own floating type (f32, f64, f16,
  /// bf16), or of default_dtype() when `value` holds integers or booleans.
  Parameter(std::string name, const Tensor& value);

  bool defined() const { return slot_ != nullptr; }
  const std::string& name() const;
  /// The parameter as a tensor, libtorch's way: this handle and every copy of it read the current
  /// value, so `Tensor w = register_parameter("w", ...)` kept in a member sees every optimiser
  /// step (assigning another tensor to such a member rebinds it, as in libtorch).
  const Tensor& value() const;
  operator const Tensor&() const { return value(); }
  const Shape& shape() const { return value().shape(); }
  std::int64_t numel() const { return value().numel(); }
  DType dtype() const;
  /// Replaces the value for every holder of this slot. The new value must have the same shape
  /// and dtype (else incompatible_shapes / wrong_type naming the parameter); it is evaluated and
  /// stored as a new watched leaf (its graph is not kept).
  void set(const Tensor& value) const;
  /// The same, converting the value to the parameter's dtype first (libtorch's `p.copy_(v)`).
  void copy_(const Tensor& value) const;
  /// Converts the value to a floating `dtype` (Module::to does this for a whole model).
  void to(DType dtype) const;
  /// Moves the value to `device` (Tensor::to), where every computation with it then runs. New
  /// values given by set, copy_ or an optimiser's step stay on that device.
  void to(const Device& device) const;
  /// The gradient backward() accumulated for the current value (undefined if none).
  Tensor grad() const { return value().grad(); }
  void zero_grad() const { value().zero_grad(); }
  /// True when both handles refer to the same slot.
  bool same_slot(const Parameter& other) const { return slot_ == other.slot_; }
  /// A frozen parameter (requires_grad false) is left alone by every optimiser: step(loss) builds
  /// no gradient for it and step() ignores its accumulated one. Shared by every holder of the slot.
  bool requires_grad() const;
  void set_requires_grad(bool requires_grad) const;

 private:
  friend class Optimizer;
  friend class Module;
  /// Holds a pending update (unevaluated) in place of the value, so that the old value has no
  /// handle left and the update may take its memory over.
  void hold(const Tensor& pending) const;
  void store(Tensor value) const;
  // `value` on the device this parameter lives on (a new value never moves a parameter).
  Tensor on_own_device(const Tensor& value) const;
  void check_shape(const Tensor& value, const char* op) const;
  /// A slot for a module's buffer: never trained, never a gradient variable.
  static Parameter buffer(std::string name, const Tensor& value);

  struct Slot;
  std::shared_ptr<Slot> slot_;
};

/// A new leaf holding the values of `t` (evaluating it if needed): the result keeps no reference
/// to t's graph. Used to store updated parameters and optimiser state.
Tensor detach(const Tensor& t);

/// ---- modules ----------------------------------------------------------------------------------------
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  /// Modules are moved into containers; a copy would share parameter slots, so there is none.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;

  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  /// One line describing the module, e.g. "Linear(784 -> 10, bias)".
  virtual std::string describe() const = 0;

  /// This module's parameters then its children's, depth first, with dotted names as PyTorch
  /// gives them: "weight", "0.weight", "3.bias", ...
  std::vector<std::pair<std::string, Parameter>> named_parameters() const;
  std::vector<Parameter> parameters() const;
  std::int64_t num_parameters() const;  ///< total number of elements
  /// State that is not trained (BatchNorm's running statistics), named like the parameters. It
  /// is saved and loaded with them (save writes the parameters, then the buffers) and is never
  /// given to an optimiser.
  std::vector<std::pair<std::string, Parameter>> named_buffers() const;
  /// Training mode (the default) or evaluation mode, for this module and all its children.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad() const;
  /// Freezes (requires_grad false) or unfreezes every parameter of this module and its children.
  void set_requires_grad(bool requires_grad) const;
  /// Places the values of every parameter and buffer on `executor` (Tensor::place_on: uploaded
  /// to its device now), so that evaluating the model there moves no weights. The computation
  /// does not follow; to(device) moves the model.
  void place_on(Executor& executor) const;
  /// Moves every parameter and buffer to `device`, as libtorch's `module->to(device)`: the
  /// model's forward pass, its gradients and its optimiser's steps then run on that device, with
  /// inputs placed there too (`x.to(device)`; inputs on another device are device_error).
  void to(const Device& device) const;
  /// Converts every parameter and buffer to the floating type `dtype` (libtorch's
  /// `module->to(torch::kFloat64)`): the layers then compute in it, and data of another type is
  /// a wrong_type error naming the layer and both types.
  void to(DType dtype) const;
  /// A multi-line summary: one line per module with its parameter count, and the total.
  std::string summary() const;
  /// Draws this module's own parameters again (as its constructor does) from the global generator;
  /// modules without a random initialisation do nothing.
  virtual void reset_parameters() {}
  /// reset_parameters() of this module, then of its children in order, depth first.
  void reset_all_parameters();
  /// fn on every module below this one, children first (depth first), then on this one, as
  /// PyTorch's Module.apply: with nn::init, weight initialisation per module type, e.g.
  ///   model.apply([](nn::Module& m) {
  ///     if (auto* l = dynamic_cast<nn::Linear*>(&m)) nn::init::xavier_uniform_(l->weight());
  ///   });
  void apply(const std::function<void(Module&)>& fn);

 protected:
  Parameter register_parameter(std::string name, const Tensor& value);
  Parameter register_buffer(std::string name, const Tensor& value);
  /// Replaces a buffer's value by `fresh` (built outside gradient contexts, lazily): it is
  /// computed with the next evaluation, in place of the old value where nothing else reads that.
  void update_buffer(const Parameter& buffer, const Tensor& fresh);
  void register_module(std::string name, std::shared_ptr<Module> module);
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }

 private:
  void summary_lines(const std::string& prefix, std::string& out) const;

  std::vector<std::pair<std::string, Parameter>> parameters_;
  std::vector<std::pair<std::string, Parameter>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

/// Mixed precision, as PyTorch's torch.autocast: while an Autocast lives, on its thread, Linear,
/// Conv1d, Conv2d and ConvTranspose2d compute in its 16-bit float type (f16 or bf16): their float
/// input, weight and bias are converted to it, so their results, and the activations, pooling and
/// dropout that follow them, are 16-bit values, in half the memory. The parameters stay f32 (the
/// master copy the optimiser updates; the conversion's gradient brings each gradient back to
/// f32), and the losses compute in f32 (cross_entropy converts 16-bit logits). Autocasts nest;
/// the innermost applies. A type other than f16 and bf16 is a wrong_type error. f16's narrow range
/// needs loss scaling (the gradients of a small loss underflow); bf16 has f32's range.
class Autocast {
 public:
  explicit Autocast(DType dtype = DType::bf16);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  DType previous_;
};
/// The type the layers compute in on this thread: an Autocast's, or f32 outside any.
DType autocast_dtype();

/// y = x W^T + b for x [N, in] (or any [..., in]): weight [out, in] and bias [out], as in PyTorch
/// (so weights load from and compare with PyTorch's directly). Weight and bias are drawn from
/// U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's default; kaiming_uniform with a = sqrt(5)).
class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  void reset_parameters() override;
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }  // undefined without bias
  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }

 private:
  std::int64_t in_, out_;
  Parameter weight_, bias_;
};

/// 2-D convolution over [N, C, H, W]: weight [out, in / groups, k, k], bias [out]. `padding`
/// zeros on each side, 0 by default as in PyTorch; padding = same_padding pads dilation (k - 1) / 2,
/// which keeps H and W for odd k and stride 1 (an even kernel with same_padding is an error).
/// in and out must be multiples of groups. Initialised as Linear with fan_in = in / groups * k * k.
class Conv2d : public Module {
 public:
  static constexpr std::int64_t same_padding = -1;
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
         std::int64_t stride = 1, std::int64_t padding = 0, bool bias = true,
         std::int64_t dilation = 1, std::int64_t groups = 1);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  void reset_parameters() override;
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }

 private:
  std::int64_t in_, out_, kernel_, stride_, padding_, dilation_, groups_;
  Parameter weight_, bias_;
};

/// 1-D convolution over [N, C, W] (or [C, W]): weight [out, in / groups, k], bias [out];
/// initialised as Conv2d with fan_in = in / groups * k.
class Conv1d : public Module {
 public:
  Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
         std::int64_t stride = 1, std::int64_t padding = 0, bool bias = true,
         std::int64_t dilation = 1, std::int64_t groups = 1);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  void reset_parameters() override;
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }

 private:
  std::int64_t in_, out_, kernel_, stride_, padding_, dilation_, groups_;
  Parameter weight_, bias_;
};

/// Transposed 2-D convolution (kiln::conv_transpose2d) over [N, C, H, W]: weight
/// [in, out / groups, k, k], bias [out]; output size (H - 1) stride - 2 padding +
/// dilation (k - 1) + output_padding + 1. Initialised as PyTorch does, with
/// fan_in = out / groups * k * k (the weight's second dimension times the kernel).
class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
                  std::int64_t stride = 1, std::int64_t padding = 0,
                  std::int64_t output_padding = 0, bool bias = true, std::int64_t dilation = 1,
                  std::int64_t groups = 1);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  void reset_parameters() override;
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }

 private:
  std::int64_t in_, out_, kernel_, stride_, padding_, output_padding_, dilation_, groups_;
  Parameter weight_, bias_;
};

/// Max pooling over [N, C, H, W]; stride 0 means the kernel size.
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(std::int64_t kernel_size, std::int64_t stride = 0);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  std::int64_t kernel_, stride_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "ReLU"; }
};

/// [N, d1, d2, ...] -> [N, d1 * d2 * ...].
class Flatten : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "Flatten"; }
};

/// In training mode each element is zeroed with probability p and the others are scaled by
/// 1 / (1 - p) (a fresh mask, seeded from next_seed(), for every forward call); in evaluation
/// mode the input passes unchanged.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  double p() const { return p_; }

 private:
  double p_;
};

/// Applies its modules in order. Children are named "0", "1", ... (so their parameters are
/// "0.weight", "0.bias", ...).
class Sequential : public Module {
 public:
  Sequential() = default;
  template <class... M>
    requires(sizeof...(M) > 0 && (std::is_base_of_v<Module, std::decay_t<M>> && ...))
  explicit Sequential(M&&... modules) {
    (add(std::forward<M>(modules)), ...);
    /// The arguments were constructed in an order the compiler chose: initialise them again in
    /// their order, from where the generator stands (the same place whatever that order was).
    reset_all_parameters();
  }
  template <class M>
    requires std::is_base_of_v<Module, std::decay_t<M>>
  Sequential& add(M&& module) {
    return add(std::shared_ptr<Module>(std::make_shared<std::decay_t<M>>(std::forward<M>(module))));
  }
  Sequential& add(std::shared_ptr<Module> module);
  std::size_t size() const { return children().size(); }
  Module& operator[](std::size_t i) const { return *children().at(i).second; }

  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "Sequential"; }
};

/// Holds modules (children "0", "1", ...) for a forward() written by hand, as torch::nn::ModuleList:
/// their parameters belong to the list's owner. Calling the list itself is an error.
class ModuleList : public Module {
 public:
  ModuleList() = default;
  template <class M>
    requires std::is_base_of_v<Module, std::decay_t<M>>
  ModuleList& push_back(M&& module) {
    return push_back(
        std::shared_ptr<Module>(std::make_shared<std::decay_t<M>>(std::forward<M>(module))));
  }
  ModuleList& push_back(std::shared_ptr<Module> module);
  std::size_t size() const { return children().size(); }
  Module& operator[](std::size_t i) const;
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "ModuleList"; }
};

/// Holds modules by name (children in insertion order) for a forward() written by hand, as
/// torch::nn::ModuleDict: parameters are named "<name>.<parameter>". Names are non-empty, have no
/// '.', and are distinct (invalid_select otherwise). Calling the dict itself is an error.
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  template <class M>
    requires std::is_base_of_v<Module, std::decay_t<M>>
  ModuleDict& insert(std::string name, M&& module) {
    return insert(std::move(name), std::shared_ptr<Module>(std::make_shared<std::decay_t<M>>(
                                       std::forward<M>(module))));
  }
  ModuleDict& insert(std::string name, std::shared_ptr<Module> module);
  bool contains(const std::string& name) const;
  /// The module of that name; invalid_select naming it and the names there are.
  Module& operator[](const std::string& name) const;
  std::vector<std::string> keys() const;
  std::size_t size() const { return children().size(); }
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "ModuleDict"; }
};

/// ---- activations as modules -----------------------------------------------------------------------
class GELU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "GELU"; }
};
class SiLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "SiLU"; }
};
class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "Tanh"; }
};
class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "Sigmoid"; }
};
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : slope_(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  double slope_;
};
/// Softmax over dimension `dim`.
class Softmax : public Module {
 public:
  explicit Softmax(int dim) : dim_(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  int dim_;
};

/// ---- normalisation, embedding, pooling --------------------------------------------------------
/// layer_norm over the last dimensions (normalized_shape); weight ones and bias zeros of that
/// shape when elementwise_affine.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  void reset_parameters() override;
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }

 private:
  Shape shape_;
  double eps_;
  Parameter weight_, bias_;
};

/// group_norm of [N, C, ...] with `groups` groups; weight ones and bias zeros [C] when affine.
class GroupNorm : public Module {
 public:
  GroupNorm(std::int64_t groups, std::int64_t channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  void reset_parameters() override;
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }

 private:
  std::int64_t groups_, channels_;
  double eps_;
  Parameter weight_, bias_;
};

/// Batch normalisation over the channels (dimension 1), PyTorch's BatchNorm1d / BatchNorm2d. In
/// training mode each channel is normalised with the batch's mean and (biased) variance over every
/// other dimension, and the running statistics (buffers running_mean, zeros, and running_var,
/// ones) move towards the batch's mean and unbiased variance by `momentum`; they are computed with
/// the next evaluation (a training step's), in place. In evaluation mode the running statistics
/// normalise instead (the batch's own where none are tracked). weight (ones) and bias (zeros) are
/// trained when `affine`. momentum is in [0, 1] (PyTorch's cumulative average, momentum None, is
/// not offered). A batch with one value per channel cannot be normalised in training mode
/// (invalid_select, as in PyTorch).
struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
};
class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  void reset_parameters() override;    ///< weight 1, bias 0
  void reset_running_stats();           ///< mean 0, variance 1
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }
  const Parameter& running_mean() const { return running_mean_; }  // undefined untracked
  const Parameter& running_var() const { return running_var_; }
  std::int64_t num_features() const { return features_; }

 protected:
  /// `ranks`: the input ranks the subclass takes ([N, C] and [N, C, L]; [N, C, H, W]).
  BatchNorm(const char* name, std::vector<std::int64_t> ranks, std::int64_t num_features,
            BatchNormOptions options);

 private:
  const char* name_;
  std::vector<std::int64_t> ranks_;
  std::int64_t features_;
  BatchNormOptions options_;
  Parameter weight_, bias_, running_mean_, running_var_;
};
/// Over [N, C] or [N, C, L].
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(std::int64_t num_features, BatchNormOptions options = {});
};
/// Over [N, C, H, W].
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(std::int64_t num_features, BatchNormOptions options = {});
};

/// A table of num_embeddings vectors of size dim (weight [num, dim], drawn from N(0, 1) as in
/// PyTorch): integer indices of any shape give [..., dim]. An index outside [0, num) is an error
/// when the values are computed.
class Embedding : public Module {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim);
  Tensor forward(const Tensor& indices) override;
  std::string describe() const override;
  void reset_parameters() override;
  const Parameter& weight() const { return weight_; }

 private:
  std::int64_t num_, dim_;
  Parameter weight_;
};

/// Average pooling over [N, C, H, W]; stride 0 means the kernel size; padding zeros count in the
/// average (PyTorch's count_include_pad).
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  std::int64_t kernel_, stride_, padding_;
};

/// Average pooling to a fixed output size whatever the input's (PyTorch's AdaptiveAvgPool2d):
/// [N, C, H, W] -> [N, C, H', W'] (see kiln::adaptive_avg_pool2d). A classifier's head after
/// convolutions of any input size: AdaptiveAvgPool2d(1) then Flatten.
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::int64_t output_size);  ///< square
  explicit AdaptiveAvgPool2d(std::array<std::int64_t, 2> output_size);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  std::array<std::int64_t, 2> size_;
};

/// Resizes the last two dimensions of [N, C, H, W] (PyTorch's Upsample, through
/// kiln::interpolate): to a fixed size, or by a scale factor (the output size is
/// floor(H * scale), floor(W * scale)).
struct UpsampleOptions {
  std::array<std::int64_t, 2> size{0, 0};  ///< {0, 0}: from scale_factor
  double scale_factor = 0;                 ///< used when size is {0, 0}
  InterpolateMode mode = InterpolateMode::nearest;
  bool align_corners = false;              ///< bilinear only
};
class Upsample : public Module {
 public:
  explicit Upsample(UpsampleOptions options);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  UpsampleOptions options_;
};

/// ---- attention and recurrent layers ---------------------------------------------------------------
/// Multi-head attention as PyTorch's MultiheadAttention, with its parameter names and layouts
/// (in_proj_weight [3E, E] holding the query, key and value projections, in_proj_bias [3E],
/// out_proj.weight [E, E], out_proj.bias [E]), so weights move to and from PyTorch. Inputs are
/// [L, N, E] (sequence first), [N, L, E] with batch_first, or [L, E] unbatched; key and value may
/// have another length S. Masks as in PyTorch's module: attn_mask [L, S] or [N * heads, L, S],
/// key_padding_mask [N, S]; for a bool or integer mask true (non-zero) means "leave out", a float mask is
/// added to the scores. Dropout acts on the attention weights in training mode.
struct AttentionMasks {
  Tensor attn_mask;
  Tensor key_padding_mask;
  bool is_causal = false;  ///< query i attends to keys j <= i (instead of attn_mask)
};
struct AttentionOutput {
  Tensor output;   ///< like the query
  Tensor weights;  ///< [N, L, S] averaged over heads ([L, S] unbatched)
};
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, double dropout = 0.0,
                     bool bias = true, bool batch_first = false);
  /// Self-attention: query, key and value are x.
  Tensor forward(const Tensor& x) override;
  AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                          const AttentionMasks& masks = {});
  std::string describe() const override;
  void reset_parameters() override;
  std::int64_t embed_dim() const { return embed_; }
  std::int64_t num_heads() const { return heads_; }

 private:
  std::int64_t embed_, heads_;
  double dropout_;
  bool batch_first_;
  Parameter in_proj_weight_, in_proj_bias_;
  std::shared_ptr<Linear> out_proj_;
};

/// One encoder layer of a Transformer, as PyTorch's TransformerEncoderLayer (names self_attn.*,
/// linear1, linear2, norm1, norm2): self-attention and a feed-forward block of
/// dim_feedforward with the activation ("relu" or "gelu"), each with dropout, a residual
/// connection and LayerNorm, after (norm_first false, PyTorch's default) or before each block.
struct TransformerEncoderLayerOptions {
  std::int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
};
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(std::int64_t d_model, std::int64_t nhead,
                          TransformerEncoderLayerOptions options = {});
  Tensor forward(const Tensor& src) override;
  Tensor forward(const Tensor& src, const AttentionMasks& masks);
  std::string describe() const override;

 private:
  Tensor self_attention_block(const Tensor& x, const AttentionMasks& masks);
  Tensor feed_forward_block(const Tensor& x);

  std::int64_t d_model_, nhead_;
  TransformerEncoderLayerOptions options_;
  std::shared_ptr<MultiheadAttention> self_attn_;
  std::shared_ptr<Linear> linear1_, linear2_;
  std::shared_ptr<LayerNorm> norm1_, norm2_;
  std::shared_ptr<Dropout> dropout_, dropout1_, dropout2_;
};

/// A stack of num_layers encoder layers, as PyTorch's TransformerEncoder (names layers.{i}.*, and
/// norm.* for the LayerNorm after the last layer when `final_norm`): every layer starts with the
/// first one's weights, as PyTorch's copies of one layer do. Masks apply to every layer.
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(std::int64_t d_model, std::int64_t nhead, std::int64_t num_layers,
                     TransformerEncoderLayerOptions options = {}, bool final_norm = false);
  Tensor forward(const Tensor& src) override;
  Tensor forward(const Tensor& src, const AttentionMasks& masks);
  std::string describe() const override;
  std::int64_t num_layers() const { return static_cast<std::int64_t>(layers_.size()); }

 private:
  std::vector<std::shared_ptr<TransformerEncoderLayer>> layers_;
  std::shared_ptr<LayerNorm> norm_;
};

/// One decoder layer of a Transformer, as PyTorch's TransformerDecoderLayer (names self_attn.*,
/// multihead_attn.*, linear1, linear2, norm1, norm2, norm3): self-attention over the target,
/// attention from the target to the encoder's output (`memory`), and the feed-forward block, each
/// with dropout, a residual connection and LayerNorm, after (norm_first false) or before each
/// block. Options as the encoder layer's.
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;
class TransformerDecoderLayer : public Module {
 public:
  TransformerDecoderLayer(std::int64_t d_model, std::int64_t nhead,
                          TransformerDecoderLayerOptions options = {});
  /// A decoder layer needs the memory: this form is an invalid_select error saying so.
  Tensor forward(const Tensor& tgt) override;
  /// `tgt_masks` for the self-attention (attn_mask [T, T], key_padding_mask [N, T], is_causal),
  /// `memory_masks` for the attention to the memory ([T, S], [N, S]).
  Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMasks& tgt_masks = {},
                 const AttentionMasks& memory_masks = {});
  std::string describe() const override;

 private:
  Tensor feed_forward_block(const Tensor& x);

  std::int64_t d_model_, nhead_;
  TransformerDecoderLayerOptions options_;
  std::shared_ptr<MultiheadAttention> self_attn_, multihead_attn_;
  std::shared_ptr<Linear> linear1_, linear2_;
  std::shared_ptr<LayerNorm> norm1_, norm2_, norm3_;
  std::shared_ptr<Dropout> dropout_, dropout1_, dropout2_, dropout3_;
};

/// A stack of num_layers decoder layers, as PyTorch's TransformerDecoder (names layers.{i}.*, and
/// norm.* when `final_norm`), every layer starting as a copy of the first. Masks apply to every
/// layer.
class TransformerDecoder : public Module {
 public:
  TransformerDecoder(std::int64_t d_model, std::int64_t nhead, std::int64_t num_layers,
                     TransformerDecoderLayerOptions options = {}, bool final_norm = false);
  /// A decoder needs the memory: this form is an invalid_select error saying so.
  Tensor forward(const Tensor& tgt) override;
  Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMasks& tgt_masks = {},
                 const AttentionMasks& memory_masks = {});
  std::string describe() const override;
  std::int64_t num_layers() const { return static_cast<std::int64_t>(layers_.size()); }

 private:
  std::vector<std::shared_ptr<TransformerDecoderLayer>> layers_;
  std::shared_ptr<LayerNorm> norm_;
};

/// PyTorch's nn.Transformer: an encoder of num_encoder_layers and a decoder of num_decoder_layers,
/// each with a final LayerNorm (names encoder.*, decoder.*). Its parameters of more than one
/// dimension are drawn again from Xavier's uniform distribution, as PyTorch's constructor does.
struct TransformerOptions {
  std::int64_t num_encoder_layers = 6;
  std::int64_t num_decoder_layers = 6;
  TransformerEncoderLayerOptions layer = {};
};
class Transformer : public Module {
 public:
  Transformer(std::int64_t d_model = 512, std::int64_t nhead = 8, TransformerOptions options = {});
  /// A Transformer needs the source and the target: this form is an invalid_select error.
  Tensor forward(const Tensor& src) override;
  /// src_masks for the encoder's self-attention, tgt_masks for the decoder's, memory_masks for
  /// the decoder's attention to the encoder's output.
  Tensor forward(const Tensor& src, const Tensor& tgt, const AttentionMasks& src_masks = {},
                 const AttentionMasks& tgt_masks = {}, const AttentionMasks& memory_masks = {});
  std::string describe() const override;
  TransformerEncoder& encoder() { return *encoder_; }
  TransformerDecoder& decoder() { return *decoder_; }

 private:
  std::int64_t d_model_, nhead_;
  std::shared_ptr<TransformerEncoder> encoder_;
  std::shared_ptr<TransformerDecoder> decoder_;
};

/// LSTM and GRU as PyTorch's, with its parameter names per layer k (weight_ih_l{k} [G * H, in],
/// weight_hh_l{k} [G * H, H], bias_ih_l{k}, bias_hh_l{k}; G = 4 gates i, f, g, o for the LSTM, 3
/// gates r, z, n for the GRU) and its initialisation U(-1/sqrt(H), 1/sqrt(H)). Inputs [L, N, in]
/// (sequence first), [N, L, in] with batch_first, or [L, in] unbatched; outputs the last layer's
/// hidden state at every step, and the final states [num_layers, N, H] ([num_layers, H]
/// unbatched). Missing initial states are zeros. Dropout, in training mode, acts on the outputs of
/// every layer but the last. Bidirectional: each layer also runs over the reversed sequence
/// (parameters *_l{k}_reverse), its output is both directions' hidden states concatenated
/// ([.., 2 * H], the next layer's input), and the states are [2 * num_layers, N, H], layer by
/// layer, the forward direction first.
struct RecurrentOptions {
  std::int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0.0;
  bool bidirectional = false;
};
struct LSTMState {
  Tensor h;
  Tensor c;
};
struct LSTMOutput {
  Tensor output;
  LSTMState state;
};
struct GRUOutput {
  Tensor output;
  Tensor h;
};
class RecurrentBase : public Module {
 public:
  std::int64_t input_size() const { return input_; }
  std::int64_t hidden_size() const { return hidden_; }
  const RecurrentOptions& options() const { return options_; }
  void reset_parameters() override;

 protected:
  RecurrentBase(const char* kind, std::int64_t gates, std::int64_t input_size,
                std::int64_t hidden_size, RecurrentOptions options);
  /// The input as [L, N, in], whether it was unbatched, and a state as [layers, N, H] (zeros
  /// when undefined).
  Tensor sequence_first(const Tensor& x, bool& unbatched) const;
  Tensor initial_state(const Tensor& given, const char* what, std::int64_t batch,
                       bool unbatched, DType dtype) const;
  Tensor restore_layout(const Tensor& output, bool unbatched) const;
  Tensor dropped_between_layers(const Tensor& y, std::int64_t layer);
  /// 2 when bidirectional, else 1; layers_[k * directions() + d] is layer k's direction d.
  std::int64_t directions() const { return options_.bidirectional ? 2 : 1; }
  struct Layer;
  /// Advances one direction's states (the first is h, its output) by one step, given the step's
  /// input projection (x_t W_ih^T + b_ih).
  using Step = std::function<void(const Layer& layer, const Tensor& projected,
                                  std::vector<Tensor>& states)>;
  /// Runs every layer and direction over `input` [L, N, in] from the initial states (each
  /// [layers * directions, N, H]); returns the last layer's output [L, N, directions * H] and the
  /// final states, stacked as the initial ones.
  std::pair<Tensor, std::vector<Tensor>> run_layers(Tensor input,
                                                    const std::vector<Tensor>& initial,
                                                    const Step& step);
  std::string describe_as(const char* kind) const;

  const char* kind_;
  std::int64_t gates_, input_, hidden_;
  RecurrentOptions options_;
  struct Layer {
    Parameter w_ih, w_hh, b_ih, b_hh;
  };
  std::vector<Layer> layers_;
};
class LSTM : public RecurrentBase {
 public:
  LSTM(std::int64_t input_size, std::int64_t hidden_size, RecurrentOptions options = {});
  Tensor forward(const Tensor& x) override;
  LSTMOutput forward(const Tensor& x, const LSTMState& state);
  std::string describe() const override;
};
class GRU : public RecurrentBase {
 public:
  GRU(std::int64_t input_size, std::int64_t hidden_size, RecurrentOptions options = {});
  Tensor forward(const Tensor& x) override;
  GRUOutput forward(const Tensor& x, const Tensor& h0);
  std::string describe() const override;
};

/// ---- losses ---------------------------------------------------------------------------------------
/// Mean over the batch of -log softmax(logits)[label]: logits [N, C], integer labels [N].
Tensor cross_entropy(const Tensor& logits, const Tensor& labels);
/// Mean of (prediction - target)^2 over all elements.
Tensor mse(const Tensor& prediction, const Tensor& target);
/// Fraction of rows of logits [N, C] whose argmax equals the label (an f64 0-d tensor).
Tensor accuracy(const Tensor& logits, const Tensor& labels);
/// Number of rows of logits [N, C] whose argmax equals the label (an i64 0-d tensor).
Tensor correct_count(const Tensor& logits, const Tensor& labels);

/// ---- gradient clipping ------------------------------------------------------------------------------
/// The gradients scaled together by min(1, max_norm / (norm + 1e-6)), where norm is the L2 norm of
/// all of them as one vector (PyTorch's clip_grad_norm_), and that norm (f32, 0-d). Lazy: nothing
/// is evaluated here. Undefined gradients stay undefined and count as zeros.
struct ClippedGradients {
  std::vector<Tensor> gradients;
  Tensor total_norm;
};
ClippedGradients clip_grad_norm(const std::vector<Tensor>& gradients, double max_norm);
/// Each gradient clamped to [-clip_value, clip_value] (PyTorch's clip_grad_value_).
std::vector<Tensor> clip_grad_value(const std::vector<Tensor>& gradients, double clip_value);

/// Clipping an optimiser applies to every step's gradients, inside the step (so the fused
/// step(loss) keeps its single pass): by value first, then by the global norm; 0 turns either off.
struct GradientClipping {
  double max_norm = 0.0;
  double max_value = 0.0;
};

/// Dynamic loss scaling (PyTorch's GradScaler) for f16 mixed precision, whose gradients would
/// underflow f16's range: step(loss) differentiates loss * scale and divides the gradients by the
/// scale before the update. A step whose gradients are not all finite is skipped (parameters,
/// state and step count unchanged) and the scale multiplied by `backoff`; after `interval` steps
/// in a row without one, the scale is multiplied by `growth`. The gradients are evaluated (and
/// checked on the host) before the updates: two passes instead of one. initial_scale 0: off.
struct LossScaling {
  double initial_scale = 65536.0;
  double growth = 2.0;
  double backoff = 0.5;
  std::int64_t interval = 2000;
};

/// ---- optimisers -----------------------------------------------------------------------------------
/// An optimiser holds handles to parameter slots and replaces their values on each step. Both
/// forms of step() evaluate the new parameters and the new optimiser state together, in one
/// pass, store them as new leaves, and leave the parameters without gradient (zero_grad).
/// The new values are written into the old values' memory (in place, no new buffers) when the
/// optimiser holds the only handle to an old value: a handle kept to an old value keeps it, and
/// graphs built earlier on an old value that are evaluated after the step see the new one.
/// Parameters with settings of their own (PyTorch's parameter groups): `lr` and `weight_decay`,
/// where set, replace the optimiser's for these parameters (e.g. no weight decay for biases and
/// norms, a smaller rate for a pretrained backbone). A group's rate follows the optimiser's:
/// set_lr, and so every schedule, scales it by the same factor, as PyTorch's schedules scale each
/// group's rate from its own initial one.
struct ParamGroup {
  std::vector<Parameter> parameters;
  std::optional<double> lr;
  std::optional<double> weight_decay;
};

class Optimizer {
 public:
  explicit Optimizer(std::vector<Parameter> parameters);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Uses the gradients accumulated by backward() (parameters without one are left alone).
  void step();
  /// Builds the gradients of `loss` (a one-element tensor built in a GradientContext) with
  /// respect to the parameters and evaluates loss, gradients and updates in one pass; gradients
  /// accumulated by an earlier backward() are added. Afterwards loss.item() costs nothing.
  void step(const Tensor& loss);
  void zero_grad() const;
  const std::vector<Parameter>& parameters() const { return parameters_; }
  std::int64_t steps() const { return steps_; }
  /// The learning rate of the following steps (for schedules such as a decay per epoch); a
  /// negative or NaN rate throws invalid_select.
  virtual double lr() const = 0;
  virtual void set_lr(double lr) = 0;
  /// Adds a group after the parameters given so far. Its parameters must be new to the optimiser
  /// (invalid_select); an lr of its own needs the optimiser's to be positive, and neither may be
  /// negative or NaN.
  void add_param_group(ParamGroup group);
  /// The learning rate of parameter i's following steps (its group's, or the optimiser's).
  double lr_of(std::size_t i) const;
  /// Clipping of the gradients of the following steps (negative or NaN bounds: invalid_select).
  void set_gradient_clipping(GradientClipping clipping);
  const GradientClipping& gradient_clipping() const { return clipping_; }
  /// Loss scaling of the following step(loss) calls (a scale, growth or backoff that is not
  /// positive and finite, a backoff of 1 or more, or an interval below 1: invalid_select;
  /// initial_scale 0 turns it off).
  void set_loss_scaling(LossScaling scaling);
  /// The scale the next step(loss) uses (0 when loss scaling is off).
  double loss_scale() const { return scale_; }
  /// Steps skipped since the optimiser was made because their gradients were not finite.
  std::int64_t skipped_steps() const { return skipped_; }

  /// Everything later steps depend on besides the parameters, as named tensors (for checkpoints):
  /// "steps" and the optimiser's counters (i64 scalars, e.g. Adam's "t"), "lr" (f64 scalar),
  /// with loss scaling on "loss_scale" (f64), "loss_scale_good_steps" and "skipped_steps" (i64),
  /// and per parameter i that has taken a step its state "<i>.<name>" with PyTorch's names (SGD's
  /// "momentum_buffer", Adam's "exp_avg" and "exp_avg_sq", ...), f32 of the parameter's shape.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  /// Restores what state_dict() gave, exactly. The whole of `state` is checked first (a name
  /// this optimiser does not have, a missing counter, another shape or dtype: incompatible_shapes
  /// or wrong_type, naming the entry; a loss scale for an optimiser whose loss scaling is off:
  /// incompatible_shapes); on error nothing changes. A state without a loss scale keeps the
  /// current one.
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state);

 protected:
  /// The optimiser's own state, for state_dict(): per-parameter tensor lists (one entry per
  /// parameter, undefined before its first step) and counters, by name.
  struct StateSlots {
    std::vector<std::pair<std::string, std::vector<Tensor>*>> tensors;
    std::vector<std::pair<std::string, std::int64_t*>> counters;
  };
  virtual StateSlots state_slots() { return {}; }
  /// The weight decay of parameter i: its group's, or `otherwise` (the optimiser's own).
  double weight_decay_of(std::size_t i, double otherwise) const;

  /// The new value of parameter i from its value and gradient (both f32, lazily built), adding
  /// the new state tensors (lazy) to `state_out` in a fixed order. A new state tensor built as
  /// assign(old, new) (and read as such by the update) can be updated in place. commit_state
  /// receives the state twice, in the same order: unevaluated before the step's evaluation (so
  /// that the old state has no handle left), then evaluated and detached.
  virtual Tensor update(std::size_t i, const Tensor& value, const Tensor& grad,
                        std::vector<Tensor>& state_out) = 0;
  virtual void commit_state(std::size_t i, std::vector<Tensor> state) = 0;
  /// Called once per step before the updates are built (e.g. to advance Adam's step count).
  virtual void begin_step() {}

 private:
  void apply(const std::vector<Tensor>& grads, const Tensor& loss);
  bool gradients_finite(const std::vector<Tensor>& grads, const Tensor& loss) const;

  std::vector<Parameter> parameters_;
  std::int64_t steps_ = 0;
  GradientClipping clipping_;
  LossScaling scaling_{.initial_scale = 0};
  double scale_ = 0;                // the current loss scale (0: off)
  std::int64_t good_steps_ = 0;     // finite steps in a row since the scale last changed
  std::int64_t skipped_ = 0;
  /// The groups added after the first parameters, each from its first parameter to the next's.
  struct GroupSettings {
    std::size_t first;
    double lr_factor;  ///< the group's rate over the optimiser's
    std::optional<double> weight_decay;
  };
  std::vector<GroupSettings> groups_;
  const GroupSettings* group_of(std::size_t i) const;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;  ///< L2: weight_decay * value is added to the gradient
  bool nesterov = false;
  double dampening = 0.0;  ///< the new gradient enters the momentum buffer scaled by 1 - dampening
};

/// PyTorch's SGD: g = grad + wd * p; with momentum, buf = g on the first step and
/// buf = momentum * buf + (1 - dampening) g afterwards, and g = buf (or g + momentum * buf with
/// nesterov); p = p - lr * g.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Parameter> parameters, SGDOptions options);
  const SGDOptions& options() const { return options_; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;

 protected:
  Tensor update(std::size_t i, const Tensor& value, const Tensor& grad,
                std::vector<Tensor>& state_out) override;
  void commit_state(std::size_t i, std::vector<Tensor> state) override;
  StateSlots state_slots() override { return {{{"momentum_buffer", &momentum_}}, {}}; }

 private:
  SGDOptions options_;
  std::vector<Tensor> momentum_;  ///< per parameter; undefined before its first step
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  ///< L2 (as torch.optim.Adam), not decoupled
};

/// Adam with bias correction (Kingma & Ba; PyTorch's formulation): with t the step number,
/// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
/// p = p - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Parameter> parameters, AdamOptions options = {});
  const AdamOptions& options() const { return options_; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;

 protected:
  Tensor update(std::size_t i, const Tensor& value, const Tensor& grad,
                std::vector<Tensor>& state_out) override;
  void commit_state(std::size_t i, std::vector<Tensor> state) override;
  StateSlots state_slots() override {
    return {{{"exp_avg", &m_}, {"exp_avg_sq", &v_}}, {{"t", &t_}}};
  }
  void begin_step() override { ++t_; }

 private:
  AdamOptions options_;
  std::int64_t t_ = 0;
  std::vector<Tensor> m_, v_;
};

/// AdamW: Adam with decoupled weight decay (the value shrinks by lr * weight_decay each step
/// before the Adam update; the decay does not enter the moments), as torch.optim.AdamW.
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Parameter> parameters, AdamWOptions options = {});
  const AdamWOptions& options() const { return options_; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;

 protected:
  Tensor update(std::size_t i, const Tensor& value, const Tensor& grad,
                std::vector<Tensor>& state_out) override;
  void commit_state(std::size_t i, std::vector<Tensor> state) override;
  StateSlots state_slots() override {
    return {{{"exp_avg", &m_}, {"exp_avg_sq", &v_}}, {{"t", &t_}}};
  }
  void begin_step() override { ++t_; }

 private:
  AdamWOptions options_;
  std::int64_t t_ = 0;
  std::vector<Tensor> m_, v_;
};

/// RMSprop as torch.optim.RMSprop: v = alpha v + (1 - alpha) g^2; the step divides g by
/// sqrt(v) + eps (centered: sqrt(v - mean(g)^2) + eps, with the running mean of g), through a
/// momentum buffer when momentum > 0.
struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;  ///< L2
  double momentum = 0.0;
  bool centered = false;
};

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Parameter> parameters, RMSpropOptions options = {});
  const RMSpropOptions& options() const { return options_; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;

 protected:
  Tensor update(std::size_t i, const Tensor& value, const Tensor& grad,
                std::vector<Tensor>& state_out) override;
  void commit_state(std::size_t i, std::vector<Tensor> state) override;
  StateSlots state_slots() override {
    return {{{"square_avg", &square_avg_},
             {"grad_avg", &grad_avg_},
             {"momentum_buffer", &momentum_}},
            {}};
  }

 private:
  RMSpropOptions options_;
  std::vector<Tensor> square_avg_, grad_avg_, momentum_;
};

/// Adagrad as torch.optim.Adagrad: the sum of squared gradients scales each step,
/// lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps).
struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double weight_decay = 0.0;  ///< L2
  double initial_accumulator_value = 0.0;
  double eps = 1e-10;
};

class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Parameter> parameters, AdagradOptions options = {});
  const AdagradOptions& options() const { return options_; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;

 protected:
  Tensor update(std::size_t i, const Tensor& value, const Tensor& grad,
                std::vector<Tensor>& state_out) override;
  void commit_state(std::size_t i, std::vector<Tensor> state) override;
  StateSlots state_slots() override { return {{{"sum", &sum_}}, {{"t", &t_}}}; }
  void begin_step() override { ++t_; }

 private:
  AdagradOptions options_;
  std::int64_t t_ = 0;
  std::vector<Tensor> sum_;
};

/// ---- saving and loading ---------------------------------------------------------------------------
/// File format (all integers little-endian):
///   magic    8 bytes  "KILNPARM"
///   version  u32      1
///   count    u32      number of parameters and buffers
///   per parameter, in named_parameters() order, then per buffer in named_buffers() order:
///     name_length u32, name (UTF-8, no terminator)
///     dtype u32 (kiln::DType: 0 i32, 1 i64, 2 f32, 3 f64), rank u32, dims i64[rank]
///     data (product of dims) * size of dtype bytes, row-major
///   crc32    u32      zlib's CRC-32 of every byte before it
/// load() checks the whole file before changing anything: a file that cannot be read, is
/// truncated or corrupted throws kiln::Error(io_error); one written for a model with other
/// parameters (count, names, types or shapes) throws kiln::Error(incompatible_shapes). The
/// message names the file and the first difference. Only regular files are read.
/// save() writes a temporary file beside `path`, flushes it to disk and renames it over `path`,
/// so a failed save (a full disk) throws kiln::Error(io_error) and leaves the old file intact.
void save(const Module& module, const std::string& path);
void load(Module& module, const std::string& path);
/// The same for a list of named parameters.
void save(const std::vector<std::pair<std::string, Parameter>>& parameters,
          const std::string& path);
void load(const std::vector<std::pair<std::string, Parameter>>& parameters,
          const std::string& path);

/// ---- safetensors ----------------------------------------------------------------------------------
/// A module's parameters then buffers as a safetensors file (kiln/safetensors.hpp), by the names
/// named_parameters() and named_buffers() give: PyTorch's state_dict names, with PyTorch's
/// layouts (Linear's weight is [out, in], convolutions' [out, in, kh, kw]), so a file written by
/// `safetensors.torch.save_file(model.state_dict(), path)` loads into the kiln model of the same
/// architecture, and the other way round. `floats` stores them in half precision (f16 or bf16,
/// rounded to nearest; see kiln/safetensors.hpp); loading widens them back to f32.
void save_safetensors(const Module& module, const std::string& path,
                      StoredFloats floats = StoredFloats::as_they_are);

struct SafetensorsLoadOptions {
  /// Every tensor of the file must be used (PyTorch's strict=True). Off, the file's other
  /// tensors are ignored (such as PyTorch's BatchNorm num_batches_tracked, which kiln does not
  /// keep); every parameter and buffer of the model must still be in the file.
  bool strict = true;
  /// The name in the file of the model's tensor `name` (to add or drop a prefix); unset: `name`.
  std::function<std::string(const std::string& name)> file_name;
};

/// Checks the whole file against the model before changing anything: a damaged file throws
/// io_error, a tensor the model needs that the file lacks (or, strict, one the file has that the
/// model does not) or of another shape throws incompatible_shapes, another dtype wrong_type;
/// each message names the file and the tensor, and the model is left as it was.
void load_safetensors(Module& module, const std::string& path,
                      const SafetensorsLoadOptions& options = {});

/// A training checkpoint in one safetensors file: the module's parameters and buffers as
/// "model.<name>", the optimiser's state_dict() as "optimizer.<name>", and any other named
/// tensors (a schedule's state_dict(), an epoch count) as "extra.<name>", given back by
/// load_checkpoint when `extra` is not null, and the global random generator's state
/// (kiln::random_state) as "random.state". Loading restores model, optimiser and generator
/// exactly, so training resumes as if it had not stopped: dropout draws the masks it would have
/// drawn. A data loader's position goes in `extra` (data::DataLoader::state_dict, given back to
/// its load_state_dict), so a run resumes mid-epoch. Everything is checked before anything
/// changes, with the errors of load_safetensors and Optimizer::load_state_dict.
void save_checkpoint(const Module& module, const Optimizer& optimizer, const std::string& path,
                     const std::vector<std::pair<std::string, Tensor>>& extra = {});
void load_checkpoint(Module& module, Optimizer& optimizer, const std::string& path,
                     std::vector<std::pair<std::string, Tensor>>* extra = nullptr);

/// libtorch's torch::nn::functional names for kiln's functions.
namespace functional {
using kiln::cosine_similarity;
using kiln::normalize;
}  // namespace functional

}  // namespace kiln::nn

#include "kiln/schedulers.hpp"
