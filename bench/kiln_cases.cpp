// The kiln side of every workload. Each run() builds a new expression and calls eval() on it:
// results are kept per graph node, so evaluating the same node again would compute nothing.
#include <kiln/kiln.hpp>

#include <vector>

#include "bench.hpp"

namespace bench {

namespace {

kiln::Tensor leaf(const std::vector<float>& data, const Dims& dims) {
  kiln::Tensor t = kiln::Tensor::from(data.data(), kiln::Shape(dims.begin(), dims.end()));
  t.eval();
  return t;
}

class KilnCase : public Case {
 public:
  KilnCase(const Workload& w, const Inputs& inputs) : w_(w) {
    for (std::size_t i = 0; i < inputs.size(); ++i) in_.push_back(leaf(inputs[i], w.inputs[i]));
    if (is_mlp_step(w_.kind)) {
      for (std::size_t i = 1; i < in_.size(); ++i) in_[i].watch();
      std::vector<std::int64_t> labels(32);
      for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
      labels_ = kiln::Tensor::from(labels, {32});
    }
    if (w_.kind == Kind::mlp_step_compiled) compile_mlp_step();
  }

  void run() override {
    out_ = kiln::Tensor();  // drop the previous graph before building the next one
    if (w_.kind == Kind::mlp_step) return mlp_step();
    if (w_.kind == Kind::mlp_step_compiled) {
      const std::vector<kiln::Tensor> out = step_(in_[0]);
      kiln::current_executor()->synchronize();
      out_ = out[0];
      updated_.assign(out.begin() + 1, out.end());
      return;
    }
    out_ = build();
    out_.eval();
    kiln::current_executor()->synchronize();  // a device's queued kernels count too
  }

  // Complex results as their parts, interleaved.
  std::vector<float> result() override {
    if (!kiln::is_complex(out_.dtype())) return out_.to_vector<float>();
    std::vector<float> parts;
    for (const auto& z : out_.to_vector<std::complex<float>>()) {
      parts.push_back(z.real());
      parts.push_back(z.imag());
    }
    return parts;
  }

 private:
  kiln::Tensor build() const {
    const auto& a = in_[0];
    switch (w_.kind) {
      case Kind::expression: return kiln::exp(kiln::sin(a) * in_[1] + in_[2]) / 2.0f;
      case Kind::row_add: return a + in_[1];
      case Kind::sum_axis0: return kiln::sum(a, {0});
      case Kind::sum_axis1: return kiln::sum(a, {1});
      case Kind::sum_all: return kiln::sum(a);
      case Kind::matmul: return kiln::matmul(a, in_[1]);
      case Kind::complex_expression: {
        const kiln::Tensor z = kiln::complex(a, in_[1]);
        return kiln::exp(z) * z + z;
      }
      case Kind::complex_matmul:
        return kiln::matmul(kiln::complex(a, in_[1]), kiln::complex(in_[2], in_[3]));
      case Kind::fft: return kiln::fft(kiln::complex(a, in_[1]));
      case Kind::conv2d: {
        kiln::Conv2dOptions options;
        options.padding = {1, 1};
        return kiln::conv2d(a, in_[1], kiln::Tensor(), options);
      }
      case Kind::softmax: return kiln::softmax(a, -1);
      case Kind::log_softmax: return kiln::log_softmax(a, -1);
      case Kind::max_pool2d: return kiln::max_pool2d(a, {2, 2});
      case Kind::op_chain_lazy:
      case Kind::op_chain_eager: {
        const bool each = w_.kind == Kind::op_chain_eager;
        kiln::Tensor x = a;
        for (int i = 0; i < w_.ops; ++i) {
          x = x + 1.0f;
          if (each) x.eval();
        }
        return x;
      }
      case Kind::mlp_step:
      case Kind::mlp_step_compiled: break;  // run() calls them
    }
    throw std::logic_error("kiln_bench: unknown workload kind");
  }

  // The loss and the updated parameters of one SGD step on the batch x.
  std::vector<kiln::Tensor> mlp_step_graph(const kiln::Tensor& x) const {
    std::vector<kiln::Tensor> params(in_.begin() + 1, in_.end());
    kiln::Tensor loss;
    {
      kiln::GradientContext context;
      const kiln::Tensor hidden = kiln::relu(kiln::matmul(x, params[0]) + params[1]);
      loss = kiln::cross_entropy(kiln::matmul(hidden, params[2]) + params[3], labels_);
    }
    const std::vector<kiln::Tensor> grads = kiln::gradients(loss, params);
    std::vector<kiln::Tensor> targets{loss};
    for (std::size_t i = 0; i < params.size(); ++i) targets.push_back(params[i] - grads[i] * 0.01f);
    return targets;
  }

  // Every step starts from the same parameters, so that each run does the same work and the
  // loss can be checked against libtorch's.
  void mlp_step() {
    const std::vector<kiln::Tensor> targets = mlp_step_graph(in_[0]);
    kiln::eval_all(targets);
    kiln::current_executor()->synchronize();
    out_ = targets[0];
    updated_.assign(targets.begin() + 1, targets.end());
  }

  // The step over a placeholder batch, compiled once: a call binds the batch and runs the
  // prepared kernels (the parameters stay as they are, as in mlp_step).
  void compile_mlp_step() {
    const kiln::Tensor x = kiln::placeholder(in_[0].shape(), kiln::DType::f32, "x");
    step_ = kiln::compile({x}, mlp_step_graph(x));
  }

  const Workload& w_;
  kiln::Function step_;
  std::vector<kiln::Tensor> in_;
  kiln::Tensor labels_;
  kiln::Tensor out_;
  std::vector<kiln::Tensor> updated_;
};

}  // namespace

std::unique_ptr<Case> make_kiln_case(const Workload& w, const Inputs& inputs) {
  return std::make_unique<KilnCase>(w, inputs);
}

}  // namespace bench
