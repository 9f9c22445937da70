// LSTM and GRU with PyTorch's parameter names, gate order and initialisation. The input
// projections of every step are one matmul per layer; each step adds the recurrent product and
// its gates, which fuse into a few elementwise kernels.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "kiln/composite_ops.hpp"
#include "kiln/nn.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"
#include "nn/checks.hpp"

namespace kiln::nn {

using checks::require;
using checks::require_positive;

RecurrentBase::RecurrentBase(const char* kind, std::int64_t gates, std::int64_t input_size,
                             std::int64_t hidden_size, RecurrentOptions options)
    : kind_(kind), gates_(gates), input_(input_size), hidden_(hidden_size), options_(options) {
  require_positive(kind, "input_size", input_size);
  require_positive(kind, "hidden_size", hidden_size);
  require_positive(kind, "num_layers", options.num_layers);
  require(options.dropout >= 0.0 && options.dropout < 1.0, ErrorCode::invalid_select,
          std::string("nn::") + kind + ": dropout must be in [0, 1)");
  for (std::int64_t i = 0; i < options.num_layers * directions(); ++i) {
    const std::int64_t k = i / directions();
    const std::string l = "_l" + std::to_string(k) + (i % directions() == 1 ? "_reverse" : "");
    const std::int64_t in = k == 0 ? input_size : directions() * hidden_size;
    Layer layer;
    layer.w_ih = register_parameter("weight_ih" + l, zeros({gates * hidden_size, in}));
    layer.w_hh = register_parameter("weight_hh" + l, zeros({gates * hidden_size, hidden_size}));
    if (options.bias) {
      layer.b_ih = register_parameter("bias_ih" + l, zeros({gates * hidden_size}));
      layer.b_hh = register_parameter("bias_hh" + l, zeros({gates * hidden_size}));
    }
    layers_.push_back(layer);
  }
  RecurrentBase::reset_parameters();
}

// Every weight and bias from U(-1/sqrt(H), 1/sqrt(H)), as PyTorch.
void RecurrentBase::reset_parameters() {
  const double b = 1.0 / std::sqrt(static_cast<double>(hidden_));
  for (const Layer& layer : layers_)
    for (const Parameter* p : {&layer.w_ih, &layer.w_hh, &layer.b_ih, &layer.b_hh})
      if (p->defined()) p->set(uniform(p->shape(), -b, b));
}

Tensor RecurrentBase::sequence_first(const Tensor& x, bool& unbatched) const {
  require(x.defined() && (x.rank() == 2 || x.rank() == 3) && x.size(-1) == input_ &&
              x.size(options_.batch_first && x.rank() == 3 ? 1 : 0) > 0,
          ErrorCode::incompatible_shapes,
          std::string("nn::") + kind_ + "(" + std::to_string(input_) + " -> " +
              std::to_string(hidden_) + "): input must be [L, N, " + std::to_string(input_) +
              "] ([N, L, " + std::to_string(input_) + "] batch_first, [L, " +
              std::to_string(input_) + "] unbatched) with L > 0, got " +
              (x.defined() ? shape_to_string(x.shape()) : "<empty>"));
  unbatched = x.rank() == 2;
  if (unbatched) return x.unsqueeze(1);
  return options_.batch_first ? x.transpose(0, 1) : x;
}

Tensor RecurrentBase::initial_state(const Tensor& given, const char* what, std::int64_t batch,
                                    bool unbatched, DType dtype) const {
  const std::int64_t states = options_.num_layers * directions();
  const Shape want = unbatched ? Shape{states, hidden_} : Shape{states, batch, hidden_};
  if (!given.defined()) return zeros({states, batch, hidden_}, dtype);
  require(given.shape() == want, ErrorCode::incompatible_shapes,
          std::string("nn::") + kind_ + ": the initial " + what + " must be " +
              shape_to_string(want) + ", got " + shape_to_string(given.shape()));
  return unbatched ? given.unsqueeze(1) : given;
}

Tensor RecurrentBase::restore_layout(const Tensor& output, bool unbatched) const {
  if (unbatched) return output.squeeze(1);
  return options_.batch_first ? output.transpose(0, 1) : output;
}

Tensor RecurrentBase::dropped_between_layers(const Tensor& y, std::int64_t layer) {
  if (!is_training() || options_.dropout == 0.0 || layer + 1 == options_.num_layers) return y;
  return dropout(y, options_.dropout, next_seed());  // scaled by 1 / (1 - p)
}

std::string RecurrentBase::describe_as(const char* kind) const {
  std::ostringstream s;
  s << kind << "(" << input_ << " -> " << hidden_ << ", " << options_.num_layers
    << (options_.num_layers == 1 ? " layer" : " layers") << (options_.bias ? "" : ", no bias")
    << (options_.batch_first ? ", batch_first" : "")
    << (options_.bidirectional ? ", bidirectional" : "");
  if (options_.dropout > 0) s << ", dropout " << options_.dropout;
  s << ")";
  return s.str();
}

namespace {

// The input projections of every step at once: [L, N, in] -> [L, N, G * H], with the biases
// that are added at every step.
Tensor input_projection(const Tensor& x, const Parameter& w, const Parameter& b) {
  const Tensor p = matmul(x, w.value().transpose(0, 1));
  return b.defined() ? p + b.value() : p;
}

Tensor recurrent_product(const Tensor& h, const Parameter& w, const Parameter& b) {
  const Tensor p = matmul(h, w.value().transpose(0, 1));
  return b.defined() ? p + b.value() : p;
}

Tensor unbatched_state(const Tensor& s, bool unbatched) { return unbatched ? s.squeeze(1) : s; }

}  // namespace

std::pair<Tensor, std::vector<Tensor>> RecurrentBase::run_layers(
    Tensor input, const std::vector<Tensor>& initial, const Step& step) {
  std::vector<std::vector<Tensor>> starts;  // per state, per layer and direction
  for (const Tensor& s : initial) starts.push_back(unbind(s, 0));
  std::vector<std::vector<Tensor>> finals(initial.size());
  for (std::int64_t k = 0; k < options_.num_layers; ++k) {
    std::vector<Tensor> directions_out;
    for (std::int64_t d = 0; d < directions(); ++d) {
      const std::size_t i = static_cast<std::size_t>(k * directions() + d);
      const Layer& layer = layers_[i];
      std::vector<Tensor> states;
      for (const std::vector<Tensor>& s : starts) states.push_back(s[i]);
      // The reverse direction visits the steps from the last; its outputs go back in time order.
      std::vector<Tensor> steps = unbind(input_projection(input, layer.w_ih, layer.b_ih), 0);
      if (d == 1) std::reverse(steps.begin(), steps.end());
      std::vector<Tensor> outputs;
      for (const Tensor& xt : steps) {
        step(layer, xt, states);
        outputs.push_back(states[0]);
      }
      if (d == 1) std::reverse(outputs.begin(), outputs.end());
      directions_out.push_back(stack(outputs, 0));
      for (std::size_t s = 0; s < states.size(); ++s) finals[s].push_back(states[s]);
    }
    const Tensor y = directions_out.size() == 1 ? directions_out[0] : concat(directions_out, 2);
    input = dropped_between_layers(y, k);
  }
  std::vector<Tensor> stacked;
  for (const std::vector<Tensor>& f : finals) stacked.push_back(stack(f, 0));
  return {input, stacked};
}

// ---- LSTM
// -------------------------------------------------------------------------------------------

LSTM::LSTM(std::int64_t input_size, std::int64_t hidden_size, RecurrentOptions options)
    : RecurrentBase("LSTM", 4, input_size, hidden_size, options) {}

Tensor LSTM::forward(const Tensor& x) { return forward(x, LSTMState{}).output; }

LSTMOutput LSTM::forward(const Tensor& x, const LSTMState& state) {
  bool unbatched = false;
  const Tensor input = sequence_first(x, unbatched);
  const std::int64_t batch = input.size(1);
  const DType dtype = is_float(x.dtype()) ? x.dtype() : DType::f32;
  const auto [output, states] = run_layers(
      input,
      {initial_state(state.h, "h", batch, unbatched, dtype),
       initial_state(state.c, "c", batch, unbatched, dtype)},
      [](const Layer& layer, const Tensor& xt, std::vector<Tensor>& hc) {
        const std::vector<Tensor> g =
            chunk(xt + recurrent_product(hc[0], layer.w_hh, layer.b_hh), 4, 1);
        hc[1] = sigmoid(g[1]) * hc[1] + sigmoid(g[0]) * tanh(g[2]);
        hc[0] = sigmoid(g[3]) * tanh(hc[1]);
      });
  return {restore_layout(output, unbatched),
          {unbatched_state(states[0], unbatched), unbatched_state(states[1], unbatched)}};
}

std::string LSTM::describe() const { return describe_as("LSTM"); }

// ---- GRU
// --------------------------------------------------------------------------------------------

GRU::GRU(std::int64_t input_size, std::int64_t hidden_size, RecurrentOptions options)
    : RecurrentBase("GRU", 3, input_size, hidden_size, options) {}

Tensor GRU::forward(const Tensor& x) { return forward(x, Tensor()).output; }

GRUOutput GRU::forward(const Tensor& x, const Tensor& h0_given) {
  bool unbatched = false;
  const Tensor input = sequence_first(x, unbatched);
  const DType dtype = is_float(x.dtype()) ? x.dtype() : DType::f32;
  const auto [output, states] = run_layers(
      input, {initial_state(h0_given, "h", input.size(1), unbatched, dtype)},
      [](const Layer& layer, const Tensor& xt, std::vector<Tensor>& h) {
        const std::vector<Tensor> gx = chunk(xt, 3, 1);
        const std::vector<Tensor> gh = chunk(recurrent_product(h[0], layer.w_hh, layer.b_hh), 3, 1);
        const Tensor r = sigmoid(gx[0] + gh[0]);
        const Tensor z = sigmoid(gx[1] + gh[1]);
        const Tensor n = tanh(gx[2] + r * gh[2]);
        h[0] = (1.0f - z) * n + z * h[0];
      });
  return {restore_layout(output, unbatched), unbatched_state(states[0], unbatched)};
}

std::string GRU::describe() const { return describe_as("GRU"); }

}  // namespace kiln::nn
