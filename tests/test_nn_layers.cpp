// silu, leaky_relu, layer_norm and group_norm against direct loops; the activation,
// normalisation, Embedding and AvgPool2d modules against their functional forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using kiln_test::code_of;
using F64 = std::vector<double>;

F64 values(const Tensor& t) { return kiln::convert(t, DType::f64).to_vector<double>(); }

F64 random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  F64 v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

void expect_near(const F64& got, const F64& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// Each consecutive block of `block` values standardised with its mean and biased variance.
F64 standardised_blocks(const F64& v, std::size_t block, double eps) {
  F64 out(v.size());
  for (std::size_t b = 0; b < v.size(); b += block) {
    double m = 0, s = 0;
    for (std::size_t i = b; i < b + block; ++i) m += v[i];
    m /= static_cast<double>(block);
    for (std::size_t i = b; i < b + block; ++i) s += (v[i] - m) * (v[i] - m);
    s /= static_cast<double>(block);
    for (std::size_t i = b; i < b + block; ++i) out[i] = (v[i] - m) / std::sqrt(s + eps);
  }
  return out;
}

TEST(NnLayers, SiluAndLeakyRelu) {
  const Tensor x = kiln::tensor({-2.0, -0.5, 0.0, 1.5}, kiln::DType::f64);
  F64 silu, leaky;
  for (double v : F64{-2, -0.5, 0, 1.5}) {
    silu.push_back(v / (1 + std::exp(-v)));
    leaky.push_back(v >= 0 ? v : 0.2 * v);
  }
  expect_near(values(kiln::silu(x)), silu, 1e-12);
  expect_near(values(kiln::leaky_relu(x, 0.2)), leaky, 0);
  EXPECT_EQ(kiln::leaky_relu(kiln::tensor({-1.f})).item<float>(), -0.01f);
  // The modules are the functions.
  EXPECT_EQ(values(kiln::nn::SiLU()(x)), values(kiln::silu(x)));
  EXPECT_EQ(values(kiln::nn::LeakyReLU(0.2)(x)), leaky);
  EXPECT_EQ(values(kiln::nn::GELU()(x)), values(kiln::gelu(x)));
  EXPECT_EQ(values(kiln::nn::Tanh()(x)), values(kiln::tanh(x)));
  EXPECT_EQ(values(kiln::nn::Sigmoid()(x)), values(kiln::sigmoid(x)));
  EXPECT_EQ(values(kiln::nn::Softmax(0)(x)), values(kiln::softmax(x, 0)));
  EXPECT_EQ(kiln::nn::LeakyReLU(0.2).describe(), "LeakyReLU(0.2)");
}

TEST(NnLayers, LayerNormMatchesTheDefinition) {
  const F64 v = random_values(2 * 3 * 4, 1);
  const Tensor x = Tensor::from(v, {2, 3, 4});
  // Over the last dimension, and over the last two.
  expect_near(values(kiln::layer_norm(x, {4})), standardised_blocks(v, 4, 1e-5), 1e-12);
  expect_near(values(kiln::layer_norm(x, {3, 4}, Tensor(), Tensor(), 0.1)),
              standardised_blocks(v, 12, 0.1), 1e-12);
  // The affine map, element by element over the normalised shape.
  const F64 w = random_values(4, 2), b = random_values(4, 3);
  F64 want = standardised_blocks(v, 4, 1e-5);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = want[i] * w[i % 4] + b[i % 4];
  expect_near(values(kiln::layer_norm(x, {4}, Tensor::from(w), Tensor::from(b))), want, 1e-12);
  EXPECT_EQ(code_of([&] { (void)kiln::layer_norm(x, {3}); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { (void)kiln::layer_norm(x, {4}, kiln::ones({3}, DType::f64)); }),
            ErrorCode::incompatible_shapes);
  // The module: ones and zeros to start with, so it is the plain normalisation.
  kiln::nn::LayerNorm ln({4});
  EXPECT_EQ(ln.weight().value().shape(), (Shape{4}));
  const Tensor xf = kiln::convert(x, DType::f32);
  EXPECT_EQ(ln(xf).to_vector<float>(), kiln::layer_norm(xf, {4}).to_vector<float>());
  EXPECT_EQ(kiln::nn::LayerNorm({4}, 1e-5, false).named_parameters().size(), 0u);
}

TEST(NnLayers, GroupNormMatchesTheDefinition) {
  const F64 v = random_values(2 * 6 * 3 * 2, 4);
  const Tensor x = Tensor::from(v, {2, 6, 3, 2});
  // 3 groups of 2 channels: each block of 2 * 3 * 2 = 12 consecutive values.
  expect_near(values(kiln::group_norm(x, 3)), standardised_blocks(v, 12, 1e-5), 1e-12);
  // groups = C normalises each channel of each sample (instance norm); groups 1 is layer_norm
  // over [C, H, W].
  expect_near(values(kiln::group_norm(x, 6)), standardised_blocks(v, 6, 1e-5), 1e-12);
  expect_near(values(kiln::group_norm(x, 1)), values(kiln::layer_norm(x, {6, 3, 2})), 1e-12);
  // Per-channel affine.
  const F64 w = random_values(6, 5), b = random_values(6, 6);
  F64 want = standardised_blocks(v, 12, 1e-5);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::size_t c = (i / 6) % 6;
    want[i] = want[i] * w[c] + b[c];
  }
  expect_near(values(kiln::group_norm(x, 3, Tensor::from(w), Tensor::from(b))), want, 1e-12);
  EXPECT_EQ(code_of([&] { (void)kiln::group_norm(x, 4); }), ErrorCode::incompatible_shapes);
  kiln::nn::GroupNorm gn(3, 6);
  const Tensor xf = kiln::convert(x, DType::f32);
  EXPECT_EQ(gn(xf).to_vector<float>(), kiln::group_norm(xf, 3).to_vector<float>());
  EXPECT_EQ(code_of([&] { (void)gn(kiln::zeros({2, 4, 3})); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([] { kiln::nn::GroupNorm(4, 6); }), ErrorCode::illegal_dimension);
}

TEST(NnLayers, EmbeddingLooksUpRowsAndLearns) {
  kiln::manual_seed(9);
  kiln::nn::Embedding emb(5, 3);
  const Tensor w = emb.weight().value();
  EXPECT_EQ(w.shape(), (Shape{5, 3}));
  const Tensor idx = Tensor::from(std::vector<std::int64_t>{4, 0, 4, 2}, {2, 2});
  const Tensor y = emb(idx);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  const std::vector<float> rows = w.to_vector<float>(), got = y.to_vector<float>();
  const std::int64_t picked[] = {4, 0, 4, 2};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(got[3 * i + j], rows[3 * picked[i] + j]);
  // The weight's gradient sums over repeated indices: row 4 twice, rows 1 and 3 none.
  w.watch();
  Tensor g;
  {
    kiln::GradientContext context;
    g = kiln::gradient(kiln::sum(emb(idx)), w);
  }
  w.unwatch();
  EXPECT_EQ(g.to_vector<float>(),
            (std::vector<float>{1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 2, 2, 2}));
  EXPECT_EQ(code_of([&] { (void)emb(kiln::zeros({2})); }), ErrorCode::wrong_type);
  EXPECT_NE(code_of([&] {
              (void)emb(Tensor::from(std::vector<std::int64_t>{5})).to_vector<float>();
            }),
            ErrorCode::none);  // index 5 of 5 rows
}

TEST(NnLayers, AvgPool2d) {
  const Tensor x = kiln::uniform({1, 2, 6, 6}, 10);
  kiln::nn::AvgPool2d pool(3, 2, 1);
  kiln::Pool2dOptions o;
  o.stride = {2, 2};
  o.padding = {1, 1};
  EXPECT_EQ(pool(x).to_vector<float>(), kiln::avg_pool2d(x, {3, 3}, o).to_vector<float>());
  EXPECT_EQ(pool(x).shape(), (Shape{1, 2, 3, 3}));
  EXPECT_EQ(kiln::nn::AvgPool2d(2)(x).shape(), (Shape{1, 2, 3, 3}));
}

}  // namespace
