// The libtorch side of every workload: eager functional ops, as a libtorch user writes them.
// Every op of an eager call computes its result at once, so run() materialises the result.
// Runs under c10::InferenceMode (no autograd bookkeeping), libtorch's fastest eager setting.
#include <torch/torch.h>

#include "bench.hpp"

namespace bench {

namespace {

torch::Tensor leaf(const std::vector<float>& data, const Dims& dims) {
  return torch::from_blob(const_cast<float*>(data.data()), torch::IntArrayRef(dims),
                          torch::kFloat)
      .clone();
}

class TorchCase : public Case {
 public:
  TorchCase(const Workload& w, const Inputs& inputs) : w_(w) {
    for (std::size_t i = 0; i < inputs.size(); ++i) in_.push_back(leaf(inputs[i], w.inputs[i]));
    if (is_mlp_step(w_.kind)) {
      for (std::size_t i = 1; i < in_.size(); ++i) in_[i].requires_grad_(true);
      labels_ = torch::arange(32, torch::kLong) % 10;
    }
  }

  void run() override {
    if (is_mlp_step(w_.kind)) return mlp_step();  // needs autograd
    c10::InferenceMode inference;
    out_ = torch::Tensor();
    out_ = compute();
  }

  std::vector<float> result() override {
    // Complex results as their parts, interleaved.
    const torch::Tensor real = out_.is_complex() ? torch::view_as_real(out_.contiguous()) : out_;
    const torch::Tensor t = real.contiguous().to(torch::kFloat);
    const float* p = t.data_ptr<float>();
    return std::vector<float>(p, p + t.numel());
  }

 private:
  torch::Tensor compute() const {
    const auto& a = in_[0];
    switch (w_.kind) {
      case Kind::expression: return torch::exp(torch::sin(a) * in_[1] + in_[2]) / 2;
      case Kind::row_add: return a + in_[1];
      case Kind::sum_axis0: return a.sum(0);
      case Kind::sum_axis1: return a.sum(1);
      case Kind::sum_all: return a.sum();
      case Kind::matmul: return torch::matmul(a, in_[1]);
      case Kind::complex_expression: {
        const torch::Tensor z = torch::complex(a, in_[1]);
        return torch::exp(z) * z + z;
      }
      case Kind::complex_matmul:
        return torch::matmul(torch::complex(a, in_[1]), torch::complex(in_[2], in_[3]));
      case Kind::fft: return torch::fft::fft(torch::complex(a, in_[1]));
      case Kind::conv2d: return torch::conv2d(a, in_[1], {}, /*stride=*/1, /*padding=*/1);
      case Kind::softmax: return torch::softmax(a, -1);
      case Kind::log_softmax: return torch::log_softmax(a, -1);
      case Kind::max_pool2d: return torch::max_pool2d(a, {2, 2});
      case Kind::op_chain_lazy:
      case Kind::op_chain_eager: {
        // Eager: each op is evaluated when it is called, so both rows run the same loop.
        torch::Tensor x = a;
        for (int i = 0; i < w_.ops; ++i) x = x + 1;
        return x;
      }
      case Kind::mlp_step:
      case Kind::mlp_step_compiled: break;  // run() calls mlp_step()
    }
    throw std::logic_error("kiln_bench: unknown workload kind");
  }

  // The same step as kiln's: from the same parameters every time, gradients without
  // accumulation (autograd::grad), and the SGD update outside autograd.
  void mlp_step() {
    out_ = torch::Tensor();
    const std::vector<torch::Tensor> params(in_.begin() + 1, in_.end());
    const torch::Tensor hidden = torch::relu(torch::matmul(in_[0], params[0]) + params[1]);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        torch::matmul(hidden, params[2]) + params[3], labels_);
    const std::vector<torch::Tensor> grads = torch::autograd::grad({loss}, params);
    torch::NoGradGuard no_grad;
    updated_.clear();
    for (std::size_t i = 0; i < params.size(); ++i) updated_.push_back(params[i] - grads[i] * 0.01f);
    out_ = loss.detach();
  }

  const Workload& w_;
  std::vector<torch::Tensor> in_;
  torch::Tensor labels_;
  torch::Tensor out_;
  std::vector<torch::Tensor> updated_;
};

}  // namespace

std::unique_ptr<Case> make_torch_case(const Workload& w, const Inputs& inputs) {
  return std::make_unique<TorchCase>(w, inputs);
}

std::string torch_version() { return TORCH_VERSION; }

}  // namespace bench
