// The method forms a libtorch user types (x.exp(), x.sum(1), x.softmax(-1), x.eq(y), ...): each
// gives the free function's values, and PyTorch's where it has a known value.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;
using F = std::vector<float>;

Tensor x23() { return Tensor::from(F{1, -2, 3, 4, 0.5f, -6}, {2, 3}); }

void expect_same(const Tensor& method, const Tensor& function) {
  EXPECT_EQ(method.shape(), function.shape());
  EXPECT_EQ(method.dtype(), function.dtype());
  EXPECT_EQ(method.to_vector<double>(), function.to_vector<double>());
}

TEST(TensorMethods, ElementwiseFormsAreTheFreeFunctions) {
  const Tensor x = x23(), p = kiln::abs(x23()) + 0.5f;
  expect_same(p.exp(), kiln::exp(p));
  expect_same(p.log(), kiln::log(p));
  expect_same(x.abs(), kiln::abs(x));
  expect_same(p.sqrt(), kiln::sqrt(p));
  expect_same(x.sin(), kiln::sin(x));
  expect_same(x.cos(), kiln::cos(x));
  expect_same(x.tanh(), kiln::tanh(x));
  expect_same(x.sigmoid(), kiln::sigmoid(x));
  expect_same(x.relu(), kiln::relu(x));
  expect_same(x.neg(), kiln::neg(x));
  expect_same(x.pow(2), kiln::pow(x, 2));
  expect_same(p.pow(x), kiln::pow(p, x));
  EXPECT_EQ(x.pow(2).to_vector<float>(), (F{1, 4, 9, 16, 0.25f, 36}));
  expect_same(x.matmul(x.t()), kiln::matmul(x, x.t()));
  EXPECT_EQ(x.masked_fill(x.lt(0), 0).to_vector<float>(), (F{1, 0, 3, 4, 0.5f, 0}));
}

TEST(TensorMethods, ComparisonsGiveBool) {
  const Tensor x = x23(), y = Tensor::from(F{1, 2, 3, 0, 0.5f, 0}, {2, 3});
  EXPECT_EQ(x.eq(y).dtype(), DType::boolean);
  EXPECT_EQ(x.eq(y).to_vector<int>(), (std::vector<int>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(x.ne(y).to_vector<int>(), (std::vector<int>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(x.lt(y).to_vector<int>(), (std::vector<int>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(x.le(y).to_vector<int>(), (std::vector<int>{1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(x.gt(0).to_vector<int>(), (std::vector<int>{1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(x.ge(3).to_vector<int>(), (std::vector<int>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(x.gt(0).all().item<bool>(), false);
  EXPECT_EQ(x.gt(0).any().item<bool>(), true);
}

TEST(TensorMethods, ReductionsByOneDimension) {
  const Tensor x = x23();
  // torch.tensor([[1, -2, 3], [4, 0.5, -6]]).sum(1) is [2, -1.5]; .mean(-1, keepdim=True) is
  // [[0.6667], [-0.5]].
  EXPECT_EQ(x.sum(1).to_vector<float>(), (F{2, -1.5f}));
  EXPECT_EQ(x.sum(0, true).shape(), (kiln::Shape{1, 3}));
  const Tensor m = x.mean(-1, true);
  EXPECT_EQ(m.shape(), (kiln::Shape{2, 1}));
  EXPECT_NEAR(m.to_vector<float>()[0], 2.0f / 3, 1e-6);
  EXPECT_NEAR(m.to_vector<float>()[1], -0.5f, 1e-6);
  // A braced list still names several dimensions.
  EXPECT_EQ(x.sum({0, 1}).item<float>(), 0.5f);
  EXPECT_EQ(x.argmax().item<std::int64_t>(), 3);
  EXPECT_EQ(x.argmax(1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 0}));
  EXPECT_EQ(x.argmin(1, true).shape(), (kiln::Shape{2, 1}));
  EXPECT_EQ(x.argmin().item<std::int64_t>(), 5);
  // torch.tensor([1., 2, 3, 4]).std() is 1.2910 (Bessel's correction), .var() 1.6667.
  const Tensor v = Tensor::from(F{1, 2, 3, 4});
  EXPECT_NEAR(v.std().item<float>(), std::sqrt(5.0f / 3), 1e-6);
  EXPECT_NEAR(v.var().item<float>(), 5.0f / 3, 1e-6);
}

TEST(TensorMethods, SoftmaxAndPieces) {
  const Tensor x = x23();
  expect_same(x.softmax(-1), kiln::softmax(x, -1));
  expect_same(x.log_softmax(1), kiln::log_softmax(x, 1));
  // torch.tensor([[1., 2, 3]]).softmax(-1) is [0.0900, 0.2447, 0.6652].
  const F s = Tensor::from(F{1, 2, 3}, {1, 3}).softmax(-1).to_vector<float>();
  EXPECT_NEAR(s[0], 0.09003057f, 1e-6);
  EXPECT_NEAR(s[2], 0.66524096f, 1e-6);
  const std::vector<Tensor> chunks = x.chunk(3, 1);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[2].to_vector<float>(), (F{3, -6}));
  const std::vector<Tensor> parts = x.split(1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].to_vector<float>(), (F{4, 0.5f, -6}));
}

}  // namespace
