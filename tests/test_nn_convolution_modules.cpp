// kiln::nn's convolution modules: parameter shapes and names, PyTorch's initialisation bounds,
// forward equal to the functional form with the module's parameters, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using kiln_test::code_of;

// Every value of t lies within [-bound, bound].
void expect_within(const Tensor& t, double bound) {
  for (float v : t.to_vector<float>()) EXPECT_LE(std::abs(v), bound + 1e-7);
}

TEST(NnConvolutionModules, Conv2dWithGroupsAndDilation) {
  kiln::nn::Conv2d conv(4, 6, 3, 1, kiln::nn::Conv2d::same_padding, true, 2, 2);
  EXPECT_EQ(conv.weight().value().shape(), (Shape{6, 2, 3, 3}));
  expect_within(conv.weight().value(), 1 / std::sqrt(2.0 * 9));
  expect_within(conv.bias().value(), 1 / std::sqrt(2.0 * 9));
  const Tensor x = kiln::uniform({2, 4, 9, 9}, 5);
  const Tensor y = conv(x);
  EXPECT_EQ(y.shape(), (Shape{2, 6, 9, 9}));  // same padding with dilation 2 pads 2
  const Tensor want = kiln::conv2d(x, conv.weight().value(), conv.bias().value(),
                                   {.padding = {2, 2}, .dilation = {2, 2}, .groups = 2});
  EXPECT_EQ(y.to_vector<float>(), want.to_vector<float>());
  EXPECT_EQ(conv.describe(), "Conv2d(4 -> 6, 3x3, stride 1, padding 2, dilation 2, groups 2, bias)");
  EXPECT_EQ(code_of([] { kiln::nn::Conv2d(4, 6, 3, 1, 0, true, 1, 3); }),
            ErrorCode::illegal_dimension);  // 4 channels in 3 groups
}

TEST(NnConvolutionModules, Conv1d) {
  kiln::nn::Conv1d conv(3, 4, 5, 2, 1, false);
  EXPECT_EQ(conv.weight().value().shape(), (Shape{4, 3, 5}));
  EXPECT_FALSE(conv.bias().defined());
  expect_within(conv.weight().value(), 1 / std::sqrt(3.0 * 5));
  const auto named = conv.named_parameters();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].first, "weight");
  const Tensor x = kiln::uniform({2, 3, 11}, 6);
  const Tensor y = conv(x);
  EXPECT_EQ(y.shape(), (Shape{2, 4, 5}));  // (11 + 2 - 5) / 2 + 1
  EXPECT_EQ(y.to_vector<float>(),
            kiln::conv1d(x, conv.weight().value(), Tensor(), {.stride = 2, .padding = 1})
                .to_vector<float>());
  EXPECT_EQ(code_of([] { kiln::nn::Conv1d(3, 4, 0); }), ErrorCode::illegal_dimension);
}

TEST(NnConvolutionModules, ConvTranspose2dUndoesConv2dsShape) {
  // The decoder's usual k3 s2 p1 op1 doubles H and W.
  kiln::nn::ConvTranspose2d up(4, 2, 3, 2, 1, 1);
  EXPECT_EQ(up.weight().value().shape(), (Shape{4, 2, 3, 3}));
  expect_within(up.weight().value(), 1 / std::sqrt(2.0 * 9));  // fan_in = out * k * k
  const Tensor x = kiln::uniform({1, 4, 5, 6}, 7);
  const Tensor y = up(x);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 10, 12}));
  kiln::ConvTranspose2dOptions o;
  o.stride = {2, 2};
  o.padding = {1, 1};
  o.output_padding = {1, 1};
  EXPECT_EQ(y.to_vector<float>(),
            kiln::conv_transpose2d(x, up.weight().value(), up.bias().value(), o)
                .to_vector<float>());
  EXPECT_EQ(up.describe(),
            "ConvTranspose2d(4 -> 2, 3x3, output_padding 1, stride 2, padding 1, bias)");
  EXPECT_EQ(code_of([] { kiln::nn::ConvTranspose2d(4, 2, 3, 2, 1, 2); }),
            ErrorCode::illegal_dimension);  // output_padding not below the stride
}

TEST(NnConvolutionModules, ATransposedConvolutionTrains) {
  // A few Adam steps on a tiny decoder lower its loss: parameters and gradients are wired.
  kiln::manual_seed(3);
  kiln::nn::ConvTranspose2d up(2, 3, 2, 2);
  kiln::nn::Adam opt(up.parameters(), {.lr = 0.05});
  const Tensor x = kiln::uniform({4, 2, 3, 3}, 8);
  const Tensor target = kiln::zeros({4, 3, 6, 6});
  const float before = kiln::nn::mse_loss(up(x), target).item<float>();
  for (int i = 0; i < 5; ++i) {
    kiln::GradientContext context;
    opt.step(kiln::nn::mse_loss(up(x), target));
  }
  EXPECT_LT(kiln::nn::mse_loss(up(x), target).item<float>(), before);
}

}  // namespace
