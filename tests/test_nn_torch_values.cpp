// Every layer, loss and optimiser of kiln::nn against PyTorch's values: the fixture
// (tests/data/make_torch_layer_fixtures.py, written with PyTorch 1.13) holds each case's
// parameters, inputs, outputs, and the gradients of a weighted sum of the outputs with respect to
// every input and parameter. kiln loads the parameters by PyTorch's names, computes the same
// outputs and gradients, and must agree within float rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::Tensor;
namespace nn = kiln::nn;

const kiln::Safetensors& fixture() {
  static const kiln::Safetensors file =
      kiln::load_safetensors(std::string(KILN_TEST_DATA_DIR) + "/torch_layers.safetensors");
  return file;
}

Tensor get(const std::string& name) { return fixture().at(name); }

// Within float rounding of a few hundred operations: relative to the reference's largest value.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  float largest = 0, worst = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    largest = std::max(largest, std::abs(w[i]));
    worst = std::max(worst, std::abs(g[i] - w[i]));
  }
  EXPECT_LE(worst, 2e-5f * std::max(1.0f, largest)) << what << ": largest difference " << worst;
}

// Copies the case's parameters into the module by name; every parameter must be in the file.
void load_case(nn::Module& module, const std::string& c) {
  for (const auto& [name, p] : module.named_parameters()) p.set(get(c + ".param." + name));
}

// Checks the outputs and the gradients of sum(output * r) against the fixture. `inputs` are
// the differentiable inputs by name (watched here), `run` computes the named outputs.
void check_case(
    const std::string& c, nn::Module* module, const std::vector<std::string>& inputs,
    const std::function<std::map<std::string, Tensor>(std::map<std::string, Tensor>&)>& run) {
  std::map<std::string, Tensor> in;
  for (const std::string& name : inputs) in[name] = get(c + ".in." + name).clone().eval().watch();
  std::map<std::string, Tensor> out;
  Tensor loss;
  {
    kiln::GradientContext context;
    out = run(in);
    for (const auto& [name, t] : out) {
      const Tensor term = kiln::sum(t * get(c + ".in.r_" + name));
      loss = loss.defined() ? loss + term : term;
    }
  }
  for (const auto& [name, t] : out) expect_close(t, get(c + ".out." + name), c + " " + name);
  std::vector<std::string> names;
  std::vector<Tensor> wrt;
  for (const auto& [name, t] : in) {
    names.push_back(name);
    wrt.push_back(t);
  }
  if (module != nullptr)
    for (const auto& [name, p] : module->named_parameters()) {
      names.push_back(name);
      wrt.push_back(p.value());
    }
  const std::vector<Tensor> grads = kiln::gradients(loss, wrt);
  for (std::size_t i = 0; i < grads.size(); ++i)
    expect_close(grads[i], get(c + ".grad." + names[i]), c + " gradient of " + names[i]);
}

TEST(TorchValues, ScaledDotProductAttention) {
  check_case("sdpa", nullptr, {"q", "k", "v"}, [](std::map<std::string, Tensor>& in) {
    kiln::AttentionOptions masked;
    masked.mask = get("sdpa.in.mask");
    kiln::AttentionOptions causal;
    causal.is_causal = true;
    return std::map<std::string, Tensor>{
        {"masked", kiln::scaled_dot_product_attention(in["q"], in["k"], in["v"], masked)},
        {"causal", kiln::scaled_dot_product_attention(in["q"], in["k"], in["v"], causal)}};
  });
}

TEST(TorchValues, MultiheadSelfAttentionWithMasks) {
  nn::MultiheadAttention mha(8, 2, 0.0, true, /*batch_first=*/true);
  load_case(mha, "mha_self");
  check_case("mha_self", &mha, {"x"}, [&](std::map<std::string, Tensor>& in) {
    nn::AttentionMasks masks;
    masks.attn_mask = get("mha_self.in.attn_mask");
    masks.key_padding_mask = get("mha_self.in.key_padding_mask");
    const nn::AttentionOutput o = mha.forward(in["x"], in["x"], in["x"], masks);
    return std::map<std::string, Tensor>{{"output", o.output}, {"weights", o.weights}};
  });
}

TEST(TorchValues, MultiheadCrossAttentionSequenceFirst) {
  nn::MultiheadAttention mha(8, 4);
  load_case(mha, "mha_cross");
  check_case("mha_cross", &mha, {"query", "key", "value"}, [&](std::map<std::string, Tensor>& in) {
    nn::AttentionMasks masks;
    masks.attn_mask = get("mha_cross.in.attn_mask");
    const nn::AttentionOutput o = mha.forward(in["query"], in["key"], in["value"], masks);
    return std::map<std::string, Tensor>{{"output", o.output}, {"weights", o.weights}};
  });
}

TEST(TorchValues, TransformerEncoderLayers) {
  nn::TransformerEncoderLayerOptions post;
  post.dim_feedforward = 16;
  post.dropout = 0.0;
  post.batch_first = true;
  nn::TransformerEncoderLayer a(8, 2, post);
  load_case(a, "encoder_post");
  check_case("encoder_post", &a, {"x"}, [&](std::map<std::string, Tensor>& in) {
    return std::map<std::string, Tensor>{{"output", a(in["x"])}};
  });
  nn::TransformerEncoderLayerOptions pre;
  pre.dim_feedforward = 16;
  pre.dropout = 0.0;
  pre.activation = "gelu";
  pre.norm_first = true;
  nn::TransformerEncoderLayer b(8, 2, pre);
  load_case(b, "encoder_pre_gelu");
  check_case("encoder_pre_gelu", &b, {"x"}, [&](std::map<std::string, Tensor>& in) {
    return std::map<std::string, Tensor>{{"output", b(in["x"])}};
  });
}

TEST(TorchValues, LstmTwoLayersBatchFirst) {
  nn::LSTM lstm(4, 6, {.num_layers = 2, .batch_first = true});
  load_case(lstm, "lstm");
  check_case("lstm", &lstm, {"x", "h0", "c0"}, [&](std::map<std::string, Tensor>& in) {
    const nn::LSTMOutput o = lstm.forward(in["x"], {in["h0"], in["c0"]});
    return std::map<std::string, Tensor>{{"output", o.output}, {"h", o.state.h}, {"c", o.state.c}};
  });
}

TEST(TorchValues, GruTwoLayersSequenceFirst) {
  nn::GRU gru(4, 6, {.num_layers = 2});
  load_case(gru, "gru");
  check_case("gru", &gru, {"x", "h0"}, [&](std::map<std::string, Tensor>& in) {
    const nn::GRUOutput o = gru.forward(in["x"], in["h0"]);
    return std::map<std::string, Tensor>{{"output", o.output}, {"h", o.h}};
  });
}

// Every other layer, with weights drawn by PyTorch, in training mode.
TEST(TorchValues, Layers) {
  struct Case {
    std::string name;
    std::function<std::shared_ptr<nn::Module>()> make;
  };
  using nn::UpsampleOptions;
  const std::vector<Case> cases = {
      {"linear", [] { return std::make_shared<nn::Linear>(5, 3); }},
      {"conv2d", [] { return std::make_shared<nn::Conv2d>(4, 6, 3, 2, 1, true, 1, 2); }},
      {"conv2d_dilated", [] { return std::make_shared<nn::Conv2d>(3, 2, 3, 1, 2, true, 2); }},
      {"conv1d", [] { return std::make_shared<nn::Conv1d>(3, 4, 3, 2, 1); }},
      {"conv_transpose2d",
       [] { return std::make_shared<nn::ConvTranspose2d>(4, 6, 3, 2, 1, 1, true, 1, 2); }},
      {"batch_norm2d", [] { return std::make_shared<nn::BatchNorm2d>(3); }},
      {"batch_norm1d", [] { return std::make_shared<nn::BatchNorm1d>(6); }},
      {"layer_norm",
       [] {
         return std::make_shared<nn::LayerNorm>(kiln::Shape{4, 5});
       }},
      {"group_norm", [] { return std::make_shared<nn::GroupNorm>(2, 6); }},
      {"max_pool2d", [] { return std::make_shared<nn::MaxPool2d>(2); }},
      {"avg_pool2d", [] { return std::make_shared<nn::AvgPool2d>(3, 2, 1); }},
      {"adaptive_avg_pool2d",
       [] {
         return std::make_shared<nn::AdaptiveAvgPool2d>(std::array<std::int64_t, 2>{3, 2});
       }},
      {"upsample_nearest",
       [] {
         return std::make_shared<nn::Upsample>(UpsampleOptions{.size = {7, 5}});
       }},
      {"upsample_bilinear",
       [] {
         return std::make_shared<nn::Upsample>(
             UpsampleOptions{.scale_factor = 2, .mode = kiln::InterpolateMode::bilinear});
       }},
      {"upsample_bilinear_corners",
       [] {
         return std::make_shared<nn::Upsample>(UpsampleOptions{
             .size = {7, 5}, .mode = kiln::InterpolateMode::bilinear, .align_corners = true});
       }},
      {"gelu", [] { return std::make_shared<nn::GELU>(); }},
      {"silu", [] { return std::make_shared<nn::SiLU>(); }},
      {"tanh", [] { return std::make_shared<nn::Tanh>(); }},
      {"sigmoid", [] { return std::make_shared<nn::Sigmoid>(); }},
      {"leaky_relu", [] { return std::make_shared<nn::LeakyReLU>(0.2); }},
      {"softmax", [] { return std::make_shared<nn::Softmax>(1); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::shared_ptr<nn::Module> m = c.make();
    load_case(*m, c.name);
    check_case(c.name, m.get(), {"x"}, [&](std::map<std::string, Tensor>& in) {
      return std::map<std::string, Tensor>{{"output", (*m)(in["x"])}};
    });
    for (const auto& [name, buffer] : m->named_buffers())
      if (fixture().contains(c.name + ".out." + name))
        expect_close(buffer.value(), get(c.name + ".out." + name), c.name + " " + name);
  }
  nn::Embedding embedding(10, 4);
  load_case(embedding, "embedding");
  check_case("embedding", &embedding, {}, [&](std::map<std::string, Tensor>&) {
    return std::map<std::string, Tensor>{{"output", embedding(get("embedding.in.indices"))}};
  });
}

TEST(TorchValues, Losses) {
  using nn::Reduction;
  const Tensor t = get("loss.t"), b = get("loss.b"), labels = get("loss.labels");
  const Tensor weight = get("loss.weight"), target_p = get("loss.target_p");
  struct Case {
    std::string name, wrt;
    std::function<Tensor(const Tensor&)> loss;
  };
  const std::vector<Case> cases = {
      {"mse", "x", [&](const Tensor& x) { return nn::mse_loss(x, t); }},
      {"mse_sum", "x", [&](const Tensor& x) { return nn::mse_loss(x, t, Reduction::sum); }},
      {"l1", "x", [&](const Tensor& x) { return nn::l1_loss(x, t); }},
      {"smooth_l1", "x",
       [&](const Tensor& x) { return nn::smooth_l1_loss(x, t, Reduction::mean, 0.5); }},
      {"huber", "x", [&](const Tensor& x) { return nn::huber_loss(x, t, Reduction::mean, 0.3); }},
      {"bce", "p", [&](const Tensor& p) { return nn::binary_cross_entropy(p, b); }},
      {"bce_logits", "x",
       [&](const Tensor& x) {
         return nn::binary_cross_entropy_with_logits(
             x, b, Reduction::mean, Tensor::from(std::vector<float>{1, 2, 0.5f, 1, 3}));
       }},
      {"nll", "log_p",
       [&](const Tensor& lp) {
         return nn::nll_loss(lp, Tensor::from(std::vector<std::int64_t>{0, 4, 2, 1}),
                             {.weight = weight});
       }},
      {"cross_entropy", "logits",
       [&](const Tensor& z) {
         return nn::cross_entropy(z, labels, {.weight = weight, .label_smoothing = 0.1});
       }},
      {"cross_entropy_none", "logits",
       [&](const Tensor& z) {
         return kiln::sum(nn::cross_entropy(z, kiln::maximum(labels, kiln::zeros_like(labels)),
                                            {.reduction = Reduction::none}));
       }},
      {"kl_div", "log_p",
       [&](const Tensor& lp) { return nn::kl_div(lp, target_p, Reduction::batchmean); }},
  };
  for (const Case& c : cases) {
    const Tensor x = get("loss." + c.wrt).clone().eval().watch();
    Tensor value;
    {
      kiln::GradientContext context;
      value = c.loss(x);
    }
    expect_close(value.reshape({1}), get("loss." + c.name + ".value"), c.name);
    expect_close(kiln::gradient(value, x), get("loss." + c.name + ".grad"), c.name + " gradient");
  }
}

// Three steps of each optimiser on the gradients PyTorch's took (fed as loss = sum(p * g)).
TEST(TorchValues, Optimisers) {
  struct Case {
    std::string name;
    std::function<std::unique_ptr<nn::Optimizer>(nn::Parameter)> make;
  };
  const std::vector<Case> cases = {
      {"sgd",
       [](nn::Parameter p) {
         return std::make_unique<nn::SGD>(std::vector{p}, nn::SGDOptions{.lr = 0.1});
       }},
      {"sgd_momentum",
       [](nn::Parameter p) {
         return std::make_unique<nn::SGD>(
             std::vector{p},
             nn::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .dampening = 0.1});
       }},
      {"sgd_nesterov",
       [](nn::Parameter p) {
         return std::make_unique<nn::SGD>(
             std::vector{p}, nn::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
       }},
      {"adam",
       [](nn::Parameter p) {
         return std::make_unique<nn::Adam>(std::vector{p},
                                           nn::AdamOptions{.lr = 0.01, .weight_decay = 0.01});
       }},
      {"adamw",
       [](nn::Parameter p) {
         return std::make_unique<nn::AdamW>(std::vector{p},
                                            nn::AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
       }},
      {"rmsprop",
       [](nn::Parameter p) {
         return std::make_unique<nn::RMSprop>(
             std::vector{p},
             nn::RMSpropOptions{
                 .lr = 0.01, .weight_decay = 0.01, .momentum = 0.5, .centered = true});
       }},
      {"adagrad",
       [](nn::Parameter p) {
         return std::make_unique<nn::Adagrad>(std::vector{p},
                                              nn::AdagradOptions{.lr = 0.1,
                                                                 .lr_decay = 0.01,
                                                                 .weight_decay = 0.01,
                                                                 .initial_accumulator_value = 0.1});
       }},
  };
  for (const Case& c : cases) {
    const nn::Parameter p("p", get("optim.start").clone());
    const std::unique_ptr<nn::Optimizer> optimizer = c.make(p);
    for (int i = 0; i < 3; ++i) {
      Tensor loss;
      {
        kiln::GradientContext context;
        loss = kiln::sum(p.value() * get("optim.grad" + std::to_string(i)));
      }
      optimizer->step(loss);
      expect_close(p.value(), get("optim." + c.name + ".step" + std::to_string(i)),
                   c.name + " step " + std::to_string(i));
    }
  }
}

// The parameter names and shapes are PyTorch's, in its order.
TEST(TorchValues, ParameterNamesAreTorchs) {
  std::vector<std::string> names;
  for (const auto& [name, p] : nn::TransformerEncoderLayer(8, 2).named_parameters())
    names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}));
  names.clear();
  for (const auto& [name, p] : nn::GRU(3, 5, {.num_layers = 2}).named_parameters())
    names.push_back(name + kiln::shape_to_string(p.shape()));
  EXPECT_EQ(names,
            (std::vector<std::string>{"weight_ih_l0[15,3]", "weight_hh_l0[15,5]", "bias_ih_l0[15]",
                                      "bias_hh_l0[15]", "weight_ih_l1[15,5]", "weight_hh_l1[15,5]",
                                      "bias_ih_l1[15]", "bias_hh_l1[15]"}));
}

// Layouts other than the fixture's: unbatched inputs, zero initial states, and bad shapes.
TEST(TorchValues, UnbatchedInputsAndErrors) {
  nn::LSTM lstm(4, 6);
  const Tensor x = kiln::random_normal({5, 4}, 3);
  const nn::LSTMOutput one = lstm.forward(x, {});
  EXPECT_EQ(one.output.shape(), (kiln::Shape{5, 6}));
  EXPECT_EQ(one.state.h.shape(), (kiln::Shape{1, 6}));
  // The same sequence as a batch of one gives the same values.
  const nn::LSTMOutput batched = lstm.forward(x.unsqueeze(1), {});
  expect_close(one.output, batched.output.squeeze(1), "unbatched LSTM");
  nn::MultiheadAttention mha(8, 2);
  const Tensor q = kiln::random_normal({3, 8}, 4);
  expect_close(mha.forward(q), mha.forward(q.unsqueeze(1)).squeeze(1), "unbatched attention");
  EXPECT_EQ(kiln_test::code_of([&] {
              (void)mha.forward(kiln::zeros({3, 2, 7}));
            }),
            kiln::ErrorCode::incompatible_shapes);
  EXPECT_EQ(kiln_test::code_of([] { nn::MultiheadAttention(8, 3); }),
            kiln::ErrorCode::illegal_dimension);
  EXPECT_EQ(kiln_test::code_of([&] {
              (void)lstm.forward(kiln::zeros({5, 2, 3}));
            }),
            kiln::ErrorCode::incompatible_shapes);
  EXPECT_EQ(kiln_test::code_of([&] {
              (void)lstm.forward(kiln::zeros({5, 2, 4}), {kiln::zeros({2, 2, 6}), Tensor()});
            }),
            kiln::ErrorCode::incompatible_shapes);
  kiln::AttentionOptions both;
  both.is_causal = true;
  both.mask = kiln::ones({3, 3});
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::scaled_dot_product_attention(q, q, q, both); }),
            kiln::ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([&] {
              (void)kiln::scaled_dot_product_attention(q, kiln::zeros({3, 4}), q);
            }),
            kiln::ErrorCode::incompatible_shapes);
}

}  // namespace
