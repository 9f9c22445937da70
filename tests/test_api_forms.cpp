// libtorch's everyday forms: arange(start, end, step), cat, randn / rand_like / randn_like,
// isclose / allclose; values from PyTorch 2.15.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;

TEST(ApiForms, ArangeWithStartEndAndStep) {
  // torch.arange(2, 11, 3), torch.arange(5, 0, -2), torch.arange(3, 3), torch.arange(-3, 2)
  EXPECT_EQ(kiln::arange(2, 11, 3).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 5, 8}));
  EXPECT_EQ(kiln::arange(5, 0, -2).to_vector<std::int64_t>(), (std::vector<std::int64_t>{5, 3, 1}));
  EXPECT_EQ(kiln::arange(3, 3).numel(), 0);
  EXPECT_EQ(kiln::arange(-3, 2).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{-3, -2, -1, 0, 1}));
  EXPECT_EQ(kiln::arange(0, std::int64_t{4}).dtype(), DType::i64);  // mixed integer types
  // torch.arange(0, 1, 0.1): 10 float32 values; torch.arange(1.0, 2.5): [1.0, 2.0]
  const Tensor f = kiln::arange(0.0, 1.0, 0.1);
  EXPECT_EQ(f.dtype(), DType::f32);
  ASSERT_EQ(f.numel(), 10);
  const std::vector<float> v = f.to_vector<float>();
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(v[static_cast<std::size_t>(i)], static_cast<float>(i * 0.1));
  EXPECT_EQ(kiln::arange(1.0, 2.5).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_THROW(kiln::arange(0, 5, 0), kiln::Error);
  EXPECT_THROW(kiln::arange(0.0, std::numeric_limits<double>::infinity(), 1.0), kiln::Error);
}

TEST(ApiForms, CatIsConcat) {
  const Tensor a = kiln::ones({2, 2}), b = kiln::zeros({1, 2});
  EXPECT_EQ(kiln::cat({a, b}).shape(), (kiln::Shape{3, 2}));
  EXPECT_EQ(kiln::cat({a, a}, 1).shape(), (kiln::Shape{2, 4}));
}

TEST(ApiForms, RandomLikeForms) {
  kiln::manual_seed(3);
  const Tensor n = kiln::randn({20000});
  EXPECT_EQ(n.dtype(), DType::f32);
  EXPECT_NEAR(kiln::mean(n).item<double>(), 0.0, 0.03);
  EXPECT_NEAR(kiln::std(n).item<double>(), 1.0, 0.03);
  const Tensor like = kiln::zeros({3, 4}, DType::f64);
  const Tensor r = kiln::rand_like(like), g = kiln::randn_like(like);
  EXPECT_EQ(r.shape(), like.shape());
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_EQ(g.dtype(), DType::f64);
  EXPECT_TRUE(kiln::all(kiln::logical_and(r >= 0.0, r < 1.0)).item<bool>());
}

TEST(ApiForms, IscloseAsPyTorch) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tensor a = Tensor::from(std::vector<double>{1.0, 1.0 + 1e-6, 1.0, inf, inf, nan, 0.0});
  const Tensor b = Tensor::from(std::vector<double>{1.0, 1.0, 1.1, inf, -inf, nan, 1e-9});
  // torch.isclose(a, b): [True, True, False, True, False, False, True]
  EXPECT_EQ(kiln::isclose(a, b).to_vector<bool>(),
            (std::vector<bool>{true, true, false, true, false, false, true}));
  EXPECT_EQ(kiln::isclose(a, b, 1e-5, 1e-8, /*equal_nan=*/true).to_vector<bool>()[5], true);
  EXPECT_TRUE(kiln::allclose(kiln::ones({3}), kiln::ones({3}) + 1e-7f));
  EXPECT_FALSE(kiln::allclose(kiln::ones({3}), kiln::ones({3}) * 2.0f));
  EXPECT_THROW(kiln::isclose(kiln::ones({2}), kiln::ones({2}, DType::f64)), kiln::Error);
  EXPECT_TRUE(kiln::allclose(Tensor::from(std::vector<std::int64_t>{3}),
                             Tensor::from(std::vector<std::int64_t>{3})));
}

}  // namespace
