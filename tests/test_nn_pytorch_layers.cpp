// The layers a libtorch user stacks: bidirectional LSTM and GRU, a TransformerEncoder of several
// layers with a final norm, and TransformerDecoderLayer, against PyTorch 2.15's values for the
// same weights (tests/data/make_torch_stack_values.py prints them: every parameter, by sorted
// name q, holds 0.5 sin(0.37 j + 1.3 q), inputs cos(0.5 j + phase)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::Shape;
using kiln::Tensor;
namespace nn = kiln::nn;

#include "test_nn_pytorch_layers_values.inc"

void fill(const nn::Module& m) {
  auto params = m.named_parameters();
  std::sort(params.begin(), params.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t q = 0; q < params.size(); ++q) {
    const nn::Parameter& p = params[q].second;
    std::vector<float> v(static_cast<std::size_t>(p.numel()));
    for (std::size_t j = 0; j < v.size(); ++j)
      v[j] = static_cast<float>(0.5 * std::sin(0.37 * static_cast<double>(j) + 1.3 * q));
    p.set(Tensor::from(v, p.shape()));
  }
}

Tensor input(const Shape& shape, double phase = 0.0) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t j = 0; j < v.size(); ++j)
    v[j] = static_cast<float>(std::cos(0.5 * static_cast<double>(j) + phase));
  return Tensor::from(v, shape);
}

void expect_values(const Tensor& t, const Shape& shape, const std::vector<float>& expected) {
  ASSERT_EQ(t.shape(), shape);
  const std::vector<float> got = t.to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 2e-5) << "element " << i;
}

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

TEST(NnPyTorchLayers, BidirectionalLstmOfTwoLayers) {
  nn::LSTM lstm(3, 2, {.num_layers = 2, .bidirectional = true});
  const std::vector<std::string> expected_names = {
      "weight_ih_l0",         "weight_hh_l0",         "bias_ih_l0",         "bias_hh_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
      "weight_ih_l1",         "weight_hh_l1",         "bias_ih_l1",         "bias_hh_l1",
      "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"};
  EXPECT_EQ(names(lstm), expected_names);
  EXPECT_EQ(lstm.named_parameters()[8].second.shape(), (Shape{8, 4}));  // both directions in
  fill(lstm);
  const nn::LSTMOutput out = lstm.forward(input({4, 2, 3}), {});
  expect_values(out.output, {4, 2, 4}, kLstmOutput);
  expect_values(out.state.h, {4, 2, 2}, kLstmH);
  expect_values(out.state.c, {4, 2, 2}, kLstmC);
  // The states it returns are the initial states it takes.
  const kiln::Error e = kiln_test::error_of(
      [&] { lstm.forward(input({4, 2, 3}), {kiln::zeros({2, 2, 2}), kiln::zeros({2, 2, 2})}); });
  EXPECT_NE(std::string(e.what()).find("[4,2,2]"), std::string::npos) << e.what();
  EXPECT_NE(lstm.describe().find("bidirectional"), std::string::npos);
}

TEST(NnPyTorchLayers, BidirectionalGruBatchFirst) {
  nn::GRU gru(3, 2, {.num_layers = 2, .batch_first = true, .bidirectional = true});
  fill(gru);
  const nn::GRUOutput out = gru.forward(input({2, 4, 3}), Tensor());
  expect_values(out.output, {2, 4, 4}, kGruOutput);
  expect_values(out.h, {4, 2, 2}, kGruH);
  // Unbatched input: the same first sequence.
  const nn::GRUOutput one = gru.forward(input({2, 4, 3})[0], Tensor());
  const std::vector<float> first(kGruOutput.begin(), kGruOutput.begin() + 16);
  expect_values(one.output, {4, 4}, first);
}

TEST(NnPyTorchLayers, TransformerEncoderStackWithAFinalNorm) {
  nn::TransformerEncoder encoder(4, 2, 2, {.dim_feedforward = 8, .dropout = 0.0}, true);
  EXPECT_EQ(encoder.num_layers(), 2);
  const std::vector<std::string> n = names(encoder);
  ASSERT_EQ(n.size(), 26u);
  EXPECT_EQ(n.front(), "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(n[12], "layers.1.self_attn.in_proj_weight");
  EXPECT_EQ(n.back(), "norm.bias");
  // Every layer starts as a copy of the first, as PyTorch's.
  const auto params = encoder.named_parameters();
  EXPECT_EQ(params[0].second.value().to_vector<float>(),
            params[12].second.value().to_vector<float>());
  EXPECT_FALSE(params[0].second.value().same_node(params[12].second.value()));  // copies
  params[0].second.set(kiln::zeros(params[0].second.shape()));
  EXPECT_NE(params[12].second.value().sum().item<float>(), 0.0f);
  fill(encoder);
  encoder.eval();
  expect_values(encoder(input({3, 2, 4})), {3, 2, 4}, kEncoderOutput);
  expect_values(encoder.forward(input({3, 2, 4}), {.is_causal = true}), {3, 2, 4},
                kEncoderCausalOutput);
}

TEST(NnPyTorchLayers, TransformerDecoderLayerWithMasks) {
  const Tensor padding = Tensor::from(std::vector<bool>{false, false, false, false, false, false,
                                                        false, false, true, true},
                                      {2, 5});
  for (const bool norm_first : {false, true}) {
    nn::TransformerDecoderLayer decoder(
        4, 2, {.dim_feedforward = 8, .dropout = 0.0, .activation = "gelu", .norm_first = norm_first});
    if (!norm_first) {
      const std::vector<std::string> n = names(decoder);
      ASSERT_EQ(n.size(), 18u);
      EXPECT_EQ(n[4], "multihead_attn.in_proj_weight");
      EXPECT_EQ(n.back(), "norm3.bias");
    }
    fill(decoder);
    decoder.eval();
    const Tensor out = decoder.forward(input({3, 2, 4}), input({5, 2, 4}, 0.3),
                                       {.is_causal = true}, {.key_padding_mask = padding});
    expect_values(out, {3, 2, 4}, norm_first ? kDecoderOutputNormFirst : kDecoderOutput);
  }
  nn::TransformerDecoderLayer decoder(4, 2);
  EXPECT_EQ(kiln_test::error_of([&] { decoder(input({3, 2, 4})); }).code(),
            kiln::ErrorCode::invalid_select);
}

TEST(NnPyTorchLayers, TransformerDecoderStack) {
  nn::TransformerDecoder decoder(4, 2, 2, {.dim_feedforward = 8, .dropout = 0.0}, true);
  const std::vector<std::string> n = names(decoder);
  ASSERT_EQ(n.size(), 38u);
  EXPECT_EQ(n[18], "layers.1.self_attn.in_proj_weight");
  EXPECT_EQ(n.back(), "norm.bias");
  fill(decoder);
  decoder.eval();
  expect_values(decoder.forward(input({3, 2, 4}), input({5, 2, 4}, 0.3)), {3, 2, 4},
                kDecoderStackOutput);
  EXPECT_EQ(kiln_test::error_of([&] { decoder(input({3, 2, 4})); }).code(),
            kiln::ErrorCode::invalid_select);
}

TEST(NnPyTorchLayers, TransformerOfAnEncoderAndADecoder) {
  nn::Transformer transformer(
      4, 2,
      {.num_encoder_layers = 2, .num_decoder_layers = 1,
       .layer = {.dim_feedforward = 8, .dropout = 0.0}});
  const std::vector<std::string> n = names(transformer);
  ASSERT_EQ(n.size(), 26u + 20u);
  EXPECT_EQ(n.front(), "encoder.layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(n[26], "decoder.layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(n.back(), "decoder.norm.bias");
  // Matrices start from Xavier's uniform bound, as PyTorch's _reset_parameters draws them.
  const nn::Parameter in_proj = transformer.named_parameters()[0].second;
  const double bound = std::sqrt(6.0 / (12 + 4));
  const std::vector<float> w = in_proj.value().to_vector<float>();
  EXPECT_LE(*std::max_element(w.begin(), w.end()), bound);
  EXPECT_GT(*std::max_element(w.begin(), w.end()), 0.8 * bound);
  fill(transformer);
  transformer.eval();
  expect_values(transformer.forward(input({5, 2, 4}, 0.3), input({3, 2, 4}), {},
                                    {.is_causal = true}),
                {3, 2, 4}, kTransformerOutput);
}

}  // namespace
