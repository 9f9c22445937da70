// Module bookkeeping and the layers.
#include <cmath>
#include <sstream>

#include "kiln/nn.hpp"
#include "exec/evaluate.hpp"
#include "graph/view.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"
#include "kiln/windows.hpp"
#include "nn/autocast.hpp"
#include "nn/checks.hpp"

namespace kiln::nn {

using checks::require;
using checks::require_positive;

namespace {

std::string count_string(std::int64_t n) {
  std::string s = std::to_string(n), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i != 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

}  // namespace

// ---- Module ---------------------------------------------------------------------------------------

Parameter Module::register_parameter(std::string name, const Tensor& value) {
  for (const auto& [n, p] : parameters_)
    require(n != name, ErrorCode::invalid_select, "nn::Module: parameter '" + name +
                                                      "' registered twice");
  Parameter p(name, value);
  parameters_.emplace_back(std::move(name), p);
  return p;
}

Parameter Module::register_buffer(std::string name, const Tensor& value) {
  for (const auto& [n, p] : buffers_)
    require(n != name, ErrorCode::invalid_select, "nn::Module: buffer '" + name +
                                                      "' registered twice");
  Parameter b = Parameter::buffer(name, value);
  buffers_.emplace_back(std::move(name), b);
  return b;
}

void Module::update_buffer(const Parameter& buffer, const Tensor& fresh) {
  const Tensor next = assign(buffer.value(), fresh);
  buffer.hold(next);
  detail::evaluate_later(next.node());
}

std::vector<std::pair<std::string, Parameter>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Parameter>> out = buffers_;
  for (const auto& [name, child] : children_)
    for (auto& [n, b] : child->named_buffers()) out.emplace_back(name + "." + n, b);
  return out;
}

void Module::register_module(std::string name, std::shared_ptr<Module> module) {
  require(module != nullptr, ErrorCode::invalid_select,
          "nn::Module: null module '" + name + "'");
  // Parameter names are paths of module names joined by '.': a name must keep them unique.
  require(!name.empty() && name.find('.') == std::string::npos, ErrorCode::invalid_select,
          "nn::Module: a child module's name must be non-empty and without '.', got '" + name +
              "'");
  for (const auto& [n, child] : children_)
    require(n != name, ErrorCode::invalid_select,
            "nn::Module: child module '" + name + "' registered twice");
  module->train(training_);
  children_.emplace_back(std::move(name), std::move(module));
}

std::vector<std::pair<std::string, Parameter>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Parameter>> out = parameters_;
  for (const auto& [name, child] : children_)
    for (auto& [n, p] : child->named_parameters()) out.emplace_back(name + "." + n, p);
  return out;
}

std::vector<Parameter> Module::parameters() const {
  std::vector<Parameter> out;
  for (auto& [n, p] : named_parameters()) out.push_back(p);
  return out;
}

std::int64_t Module::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() const {
  for (const auto& p : parameters()) p.zero_grad();
}

void Module::set_requires_grad(bool requires_grad) const {
  for (const auto& p : parameters()) p.set_requires_grad(requires_grad);
}

void Module::place_on(Executor& executor) const {
  for (const auto& [name, p] : named_parameters()) p.value().place_on(executor);
  for (const auto& [name, b] : named_buffers()) b.value().place_on(executor);
}

void Module::to(const Device& device) const {
  for (const auto& [name, p] : named_parameters()) p.to(device);
  for (const auto& [name, b] : named_buffers()) b.to(device);
}

void Module::to(DType dtype) const {
  for (const auto& [name, p] : named_parameters()) p.to(dtype);
  for (const auto& [name, b] : named_buffers()) b.to(dtype);
}

void Module::summary_lines(const std::string& prefix, std::string& out) const {
  std::int64_t own = 0;
  for (const auto& [n, p] : parameters_) own += p.numel();
  std::string line = (prefix.empty() ? std::string() : prefix + ": ") + describe();
  if (own > 0) {
    line.resize(std::max<std::size_t>(line.size() + 1, 48), ' ');
    line += count_string(own) + " parameters";
  }
  out += line + "\n";
  for (const auto& [name, child] : children_)
    child->summary_lines(prefix.empty() ? "  " + name : prefix + "." + name, out);
}

void Module::reset_all_parameters() {
  reset_parameters();
  for (const auto& [name, child] : children_) child->reset_all_parameters();
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (const auto& [name, child] : children_) child->apply(fn);
  fn(*this);
}

std::string Module::summary() const {
  std::string out;
  summary_lines("", out);
  out += "total: " + count_string(num_parameters()) + " parameters\n";
  return out;
}

// ---- Linear ---------------------------------------------------------------------------------------

namespace {
// PyTorch's default for Linear and Conv2d: kaiming_uniform with a = sqrt(5) is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias has the same bound.
Tensor default_weight(Shape shape, std::int64_t fan_in) {
  return kaiming_uniform(std::move(shape), fan_in, std::sqrt(5.0));
}
Tensor default_bias(std::int64_t out, std::int64_t fan_in) {
  const double b = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return uniform({out}, -b, b);
}
}  // namespace

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias)
    : in_(in_features), out_(out_features) {
  require_positive("Linear", "in_features", in_features);
  require_positive("Linear", "out_features", out_features);
  weight_ = register_parameter("weight", default_weight({out_, in_}, in_));
  if (bias) bias_ = register_parameter("bias", default_bias(out_, in_));
}

void Linear::reset_parameters() {
  weight_.copy_(default_weight({out_, in_}, in_));
  if (bias_.defined()) bias_.copy_(default_bias(out_, in_));
}

Tensor Linear::forward(const Tensor& x) {
  require(x.defined() && x.rank() >= 1 && x.size(-1) == in_, ErrorCode::incompatible_shapes,
          "nn::Linear(" + std::to_string(in_) + " -> " + std::to_string(out_) + "): input shape " +
              (x.defined() ? shape_to_string(x.shape()) : "<empty>") + " does not end in " +
              std::to_string(in_));
  // The transposed weight is a view: the matmul kernels read it as a column-major operand.
  const Tensor w = autocast_input(weight_.value()).transpose(0, 1);
  const Tensor in = layer_input(*this, x, weight_.value());
  const Tensor y = in.rank() == 1 ? matmul(in.unsqueeze(0), w).squeeze(0) : matmul(in, w);
  return bias_.defined() ? y + autocast_input(bias_.value()) : y;
}

std::string Linear::describe() const {
  return "Linear(" + std::to_string(in_) + " -> " + std::to_string(out_) +
         (bias_.defined() ? ", bias)" : ", no bias)");
}

// ---- Conv2d ---------------------------------------------------------------------------------------

namespace {
// Channels in and out must split into `groups` equal blocks.
void require_groups(const char* module, std::int64_t in, std::int64_t out, std::int64_t groups) {
  require_positive(module, "groups", groups);
  require(in % groups == 0 && out % groups == 0, ErrorCode::illegal_dimension,
          std::string("nn::") + module + ": in_channels " + std::to_string(in) +
              " and out_channels " + std::to_string(out) + " must be multiples of groups " +
              std::to_string(groups));
}

// The arguments every convolution module checks the same way.
void require_conv(const char* module, std::int64_t in, std::int64_t out, std::int64_t kernel,
                  std::int64_t stride, std::int64_t dilation, std::int64_t groups) {
  require_positive(module, "in_channels", in);
  require_positive(module, "out_channels", out);
  require_positive(module, "kernel_size", kernel);
  require_positive(module, "stride", stride);
  require_positive(module, "dilation", dilation);
  require_groups(module, in, out, groups);
}

std::string conv_description(const char* module, std::int64_t in, std::int64_t out,
                             const std::string& kernel, std::int64_t stride, std::int64_t padding,
                             std::int64_t dilation, std::int64_t groups, bool bias) {
  return std::string(module) + "(" + std::to_string(in) + " -> " + std::to_string(out) + ", " +
         kernel + ", stride " + std::to_string(stride) + ", padding " + std::to_string(padding) +
         (dilation != 1 ? ", dilation " + std::to_string(dilation) : "") +
         (groups != 1 ? ", groups " + std::to_string(groups) : "") +
         (bias ? ", bias)" : ", no bias)");
}
}  // namespace

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
               std::int64_t stride, std::int64_t padding, bool bias, std::int64_t dilation,
               std::int64_t groups)
    : in_(in_channels), out_(out_channels), kernel_(kernel_size), stride_(stride),
      padding_(padding), dilation_(dilation), groups_(groups) {
  require_conv("Conv2d", in_channels, out_channels, kernel_size, stride, dilation, groups);
  if (padding_ == same_padding) {
    require(kernel_ % 2 == 1, ErrorCode::illegal_dimension,
            "nn::Conv2d: same padding needs an odd kernel size, got " + std::to_string(kernel_));
    padding_ = dilation_ * (kernel_ / 2);
  }
  require(padding_ >= 0, ErrorCode::illegal_dimension,
          "nn::Conv2d: padding must be >= 0 or same_padding, got " + std::to_string(padding));
  const std::int64_t fan_in = in_ / groups_ * kernel_ * kernel_;
  weight_ = register_parameter("weight",
                               default_weight({out_, in_ / groups_, kernel_, kernel_}, fan_in));
  if (bias) bias_ = register_parameter("bias", default_bias(out_, fan_in));
}

void Conv2d::reset_parameters() {
  const std::int64_t fan_in = in_ / groups_ * kernel_ * kernel_;
  weight_.copy_(default_weight({out_, in_ / groups_, kernel_, kernel_}, fan_in));
  if (bias_.defined()) bias_.copy_(default_bias(out_, fan_in));
}

Tensor Conv2d::forward(const Tensor& x) {
  Conv2dOptions o;
  o.stride = {stride_, stride_};
  o.padding = {padding_, padding_};
  o.dilation = {dilation_, dilation_};
  o.groups = groups_;
  return conv2d(layer_input(*this, x, weight_.value()), autocast_input(weight_.value()),
                bias_.defined() ? autocast_input(bias_.value()) : Tensor(), o);
}

std::string Conv2d::describe() const {
  const std::string k = std::to_string(kernel_) + "x" + std::to_string(kernel_);
  return conv_description("Conv2d", in_, out_, k, stride_, padding_, dilation_, groups_,
                          bias_.defined());
}

// ---- Conv1d, ConvTranspose2d ----------------------------------------------------------------------

Conv1d::Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
               std::int64_t stride, std::int64_t padding, bool bias, std::int64_t dilation,
               std::int64_t groups)
    : in_(in_channels), out_(out_channels), kernel_(kernel_size), stride_(stride),
      padding_(padding), dilation_(dilation), groups_(groups) {
  require_conv("Conv1d", in_channels, out_channels, kernel_size, stride, dilation, groups);
  require(padding >= 0, ErrorCode::illegal_dimension,
          "nn::Conv1d: padding must be >= 0, got " + std::to_string(padding));
  const std::int64_t fan_in = in_ / groups_ * kernel_;
  weight_ = register_parameter("weight", default_weight({out_, in_ / groups_, kernel_}, fan_in));
  if (bias) bias_ = register_parameter("bias", default_bias(out_, fan_in));
}

void Conv1d::reset_parameters() {
  const std::int64_t fan_in = in_ / groups_ * kernel_;
  weight_.copy_(default_weight({out_, in_ / groups_, kernel_}, fan_in));
  if (bias_.defined()) bias_.copy_(default_bias(out_, fan_in));
}

Tensor Conv1d::forward(const Tensor& x) {
  return conv1d(layer_input(*this, x, weight_.value()), autocast_input(weight_.value()),
                bias_.defined() ? autocast_input(bias_.value()) : Tensor(),
                {.stride = stride_, .padding = padding_, .dilation = dilation_, .groups = groups_});
}

std::string Conv1d::describe() const {
  return conv_description("Conv1d", in_, out_, std::to_string(kernel_), stride_, padding_,
                          dilation_, groups_, bias_.defined());
}

ConvTranspose2d::ConvTranspose2d(std::int64_t in_channels, std::int64_t out_channels,
                                 std::int64_t kernel_size, std::int64_t stride,
                                 std::int64_t padding, std::int64_t output_padding, bool bias,
                                 std::int64_t dilation, std::int64_t groups)
    : in_(in_channels), out_(out_channels), kernel_(kernel_size), stride_(stride),
      padding_(padding), output_padding_(output_padding), dilation_(dilation), groups_(groups) {
  require_conv("ConvTranspose2d", in_channels, out_channels, kernel_size, stride, dilation,
               groups);
  require(padding >= 0 && output_padding >= 0 && output_padding < stride,
          ErrorCode::illegal_dimension,
          "nn::ConvTranspose2d: padding must be >= 0 and output_padding in [0, stride), got " +
              std::to_string(padding) + " and " + std::to_string(output_padding));
  const std::int64_t fan_in = out_ / groups_ * kernel_ * kernel_;
  weight_ = register_parameter("weight",
                               default_weight({in_, out_ / groups_, kernel_, kernel_}, fan_in));
  if (bias) bias_ = register_parameter("bias", default_bias(out_, fan_in));
}

void ConvTranspose2d::reset_parameters() {
  const std::int64_t fan_in = out_ / groups_ * kernel_ * kernel_;
  weight_.copy_(default_weight({in_, out_ / groups_, kernel_, kernel_}, fan_in));
  if (bias_.defined()) bias_.copy_(default_bias(out_, fan_in));
}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  ConvTranspose2dOptions o;
  o.stride = {stride_, stride_};
  o.padding = {padding_, padding_};
  o.output_padding = {output_padding_, output_padding_};
  o.dilation = {dilation_, dilation_};
  o.groups = groups_;
  return conv_transpose2d(layer_input(*this, x, weight_.value()), autocast_input(weight_.value()),
                          bias_.defined() ? autocast_input(bias_.value()) : Tensor(), o);
}

std::string ConvTranspose2d::describe() const {
  const std::string k = std::to_string(kernel_) + "x" + std::to_string(kernel_) +
                        (output_padding_ != 0 ? ", output_padding " +
                                                    std::to_string(output_padding_)
                                              : "");
  return conv_description("ConvTranspose2d", in_, out_, k, stride_, padding_, dilation_, groups_,
                          bias_.defined());
}

// ---- MaxPool2d, ReLU, Flatten, Dropout ------------------------------------------------------------

MaxPool2d::MaxPool2d(std::int64_t kernel_size, std::int64_t stride)
    : kernel_(kernel_size), stride_(stride == 0 ? kernel_size : stride) {
  require_positive("MaxPool2d", "kernel_size", kernel_size);
  require_positive("MaxPool2d", "stride", stride_);
}

Tensor MaxPool2d::forward(const Tensor& x) {
  Pool2dOptions o;
  o.stride = {stride_, stride_};
  return max_pool2d(x, {kernel_, kernel_}, o);
}

std::string MaxPool2d::describe() const {
  return "MaxPool2d(" + std::to_string(kernel_) + "x" + std::to_string(kernel_) + ", stride " +
         std::to_string(stride_) + ")";
}

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

Tensor Flatten::forward(const Tensor& x) {
  require(x.defined() && x.rank() >= 1, ErrorCode::illegal_dimensionality,
          "nn::Flatten: needs a tensor with a batch dimension");
  if (x.rank() == 2) return x;
  // The features' count is given, not inferred: -1 cannot be inferred for a batch of 0.
  const Shape features(x.shape().begin() + 1, x.shape().end());
  return x.reshape({x.size(0), detail::shape_numel(features)});
}

Dropout::Dropout(double p) : p_(p) {
  require(p >= 0.0 && p <= 1.0, ErrorCode::invalid_select,
          "nn::Dropout: probability " + std::to_string(p) + " outside [0, 1]");
}

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p_ == 0.0) return x;
  if (p_ == 1.0) return x * scalar(0).convert(x.dtype());
  return dropout(x, p_, next_seed());  // scaled by 1 / (1 - p)
}

std::string Dropout::describe() const {
  std::ostringstream s;
  s << "Dropout(p = " << p_ << ")";
  return s.str();
}

// ---- Sequential -----------------------------------------------------------------------------------

Sequential& Sequential::add(std::shared_ptr<Module> module) {
  register_module(std::to_string(size()), std::move(module));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, child] : children()) y = (*child)(y);
  return y;
}

// ---- ModuleList -----------------------------------------------------------------------------------

ModuleList& ModuleList::push_back(std::shared_ptr<Module> module) {
  require(module != nullptr, ErrorCode::illegal_dimension, "nn::ModuleList: null module");
  register_module(std::to_string(size()), std::move(module));
  return *this;
}

Module& ModuleList::operator[](std::size_t i) const {
  require(i < size(), ErrorCode::invalid_select,
          "nn::ModuleList: index " + std::to_string(i) + " of " + std::to_string(size()) +
              " modules");
  return *children()[i].second;
}

Tensor ModuleList::forward(const Tensor&) {
  throw Error(ErrorCode::invalid_select,
              "nn::ModuleList has no forward of its own: call its modules from the owner's");
}

ModuleDict& ModuleDict::insert(std::string name, std::shared_ptr<Module> module) {
  require(module != nullptr, ErrorCode::invalid_select,
          "nn::ModuleDict: null module '" + name + "'");
  register_module(std::move(name), std::move(module));
  return *this;
}

bool ModuleDict::contains(const std::string& name) const {
  for (const auto& [n, child] : children())
    if (n == name) return true;
  return false;
}

Module& ModuleDict::operator[](const std::string& name) const {
  for (const auto& [n, child] : children())
    if (n == name) return *child;
  std::string names;
  for (const auto& [n, child] : children()) names += (names.empty() ? "'" : ", '") + n + "'";
  throw Error(ErrorCode::invalid_select, "nn::ModuleDict: no module named '" + name + "' (it has " +
                                             (names.empty() ? "none" : names) + ")");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [n, child] : children()) out.push_back(n);
  return out;
}

Tensor ModuleDict::forward(const Tensor&) {
  throw Error(ErrorCode::invalid_select,
              "nn::ModuleDict has no forward of its own: call its modules from the owner's");
}

}  // namespace kiln::nn
