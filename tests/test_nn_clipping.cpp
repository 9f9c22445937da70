// Gradient clipping: clip_grad_norm and clip_grad_value by hand values, and an optimiser that
// clips inside its fused step(loss) and its step() after backward().
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;
using kiln_test::code_of;

TEST(NnClipping, ClipGradNorm) {
  // Norm of all gradients together: sqrt(3^2 + 4^2 + 0 + 12^2) = 13.
  const std::vector<Tensor> g{kiln::tensor({3.f, 4.f}), kiln::tensor({0.f, 12.f}), Tensor()};
  const kiln::nn::ClippedGradients c = kiln::nn::clip_grad_norm(g, 6.5);
  EXPECT_FLOAT_EQ(c.total_norm.item<float>(), 13.f);
  const float s = 6.5f / (13.f + 1e-6f);
  EXPECT_EQ(c.gradients[0].to_vector<float>(), (std::vector<float>{3 * s, 4 * s}));
  EXPECT_EQ(c.gradients[1].to_vector<float>(), (std::vector<float>{0, 12 * s}));
  EXPECT_FALSE(c.gradients[2].defined());
  // Below the bound nothing changes.
  EXPECT_EQ(kiln::nn::clip_grad_norm(g, 20).gradients[1].to_vector<float>(),
            (std::vector<float>{0, 12}));
  // f64 gradients stay f64.
  EXPECT_EQ(kiln::nn::clip_grad_norm({kiln::tensor({3.0, 4.0}, kiln::DType::f64)}, 1).gradients[0].dtype(),
            DType::f64);
  EXPECT_EQ(code_of([&] { (void)kiln::nn::clip_grad_norm(g, 0); }), ErrorCode::invalid_select);
}

TEST(NnClipping, ClipGradValue) {
  const std::vector<Tensor> g{kiln::tensor({-3.f, 0.5f, 2.f})};
  EXPECT_EQ(kiln::nn::clip_grad_value(g, 1)[0].to_vector<float>(),
            (std::vector<float>{-1, 0.5f, 1}));
  EXPECT_EQ(code_of([&] { (void)kiln::nn::clip_grad_value(g, -1); }), ErrorCode::invalid_select);
}

TEST(NnClipping, OptimiserClipsInsideItsStep) {
  // loss = sum(w * c): the gradient is c = [30, 40], norm 50. SGD with lr 1 and max_norm 0.5
  // moves w by c * 0.5 / 50.
  const Tensor c = kiln::tensor({30.f, 40.f});
  kiln::nn::Parameter w("w", kiln::tensor({1.f, 1.f}));
  kiln::nn::SGD sgd({w}, {.lr = 1.0});
  sgd.set_gradient_clipping({.max_norm = 0.5});
  {
    kiln::GradientContext context;
    sgd.step(kiln::sum(w.value() * c));
  }
  const float s = 0.5f / (50.f + 1e-6f);
  const std::vector<float> after = w.value().to_vector<float>();
  EXPECT_FLOAT_EQ(after[0], 1 - 30 * s);
  EXPECT_FLOAT_EQ(after[1], 1 - 40 * s);
  // By value after backward(): each component clamped to 0.25 first.
  sgd.set_gradient_clipping({.max_value = 0.25});
  {
    kiln::GradientContext context;
    kiln::sum(w.value() * c).backward();
  }
  sgd.step();
  const std::vector<float> again = w.value().to_vector<float>();
  EXPECT_FLOAT_EQ(again[0], after[0] - 0.25f);
  EXPECT_FLOAT_EQ(again[1], after[1] - 0.25f);
  EXPECT_EQ(code_of([&] { sgd.set_gradient_clipping({.max_norm = -1}); }),
            ErrorCode::invalid_select);
}

}  // namespace
