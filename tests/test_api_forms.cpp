// libtorch's everyday forms: arange(start, end, step), cat, randn / rand_like / randn_like,
// isclose / allclose; values from PyTorch 2.15.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

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

// Values from PyTorch 2.15 (torch.floor, ceil, round, trunc, fmod, remainder, atan2 and their
// gradients), on every executor.
TEST(ApiForms, RoundingAsPyTorch) {
  const Tensor x = Tensor::from(std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, -1.7f, 3.2f});
  for (const auto& e : kiln::executors()) {
    const auto values = [&](const Tensor& t) { return t.eval(*e).to_vector<float>(); };
    EXPECT_EQ(values(x.floor()), (std::vector<float>{-3, -2, -1, 0, 1, 2, -2, 3})) << e->name();
    EXPECT_EQ(values(x.ceil()), (std::vector<float>{-2, -1, -0.f, 1, 2, 3, -1, 4})) << e->name();
    // Halves to even.
    EXPECT_EQ(values(kiln::round(x)), (std::vector<float>{-2, -2, -0.f, 0, 2, 2, -2, 3}))
        << e->name();
    EXPECT_EQ(values(kiln::trunc(x)), (std::vector<float>{-2, -1, -0.f, 0, 1, 2, -1, 3}))
        << e->name();
    EXPECT_TRUE(std::signbit(values(x.ceil())[2])) << "ceil(-0.5) is -0, " << e->name();
  }
  // Integers are their own floor (and keep their type), as in libtorch.
  const Tensor i = Tensor::from(std::vector<std::int64_t>{-3, 4});
  EXPECT_EQ(kiln::floor(i).dtype(), DType::i64);
  EXPECT_EQ(kiln::round(i).to_vector<std::int64_t>(), (std::vector<std::int64_t>{-3, 4}));
}

TEST(ApiForms, FmodAndRemainderAsPyTorch) {
  const Tensor a = Tensor::from(std::vector<float>{5.5f, -5.5f, 5.5f, -5.5f, 7, -7});
  const Tensor b = Tensor::from(std::vector<float>{2, 2, -2, -2, 3, 3});
  const Tensor ai = Tensor::from(std::vector<std::int64_t>{7, -7, 7, -7, 5});
  const Tensor bi = Tensor::from(std::vector<std::int64_t>{3, 3, -3, -3, 5});
  for (const auto& e : kiln::executors()) {
    EXPECT_EQ(kiln::fmod(a, b).eval(*e).to_vector<float>(),
              (std::vector<float>{1.5f, -1.5f, 1.5f, -1.5f, 1, -1}))
        << e->name();
    EXPECT_EQ(a.remainder(b).eval(*e).to_vector<float>(),
              (std::vector<float>{1.5f, 0.5f, -0.5f, -1.5f, 1, 2}))
        << e->name();
    EXPECT_EQ(ai.fmod(bi).eval(*e).to_vector<std::int64_t>(),
              (std::vector<std::int64_t>{1, -1, 1, -1, 0}))
        << e->name();
    EXPECT_EQ(kiln::remainder(ai, bi).eval(*e).to_vector<std::int64_t>(),
              (std::vector<std::int64_t>{1, 2, -2, -1, 0}))
        << e->name();
    // Scalar forms, and kiln's integer rule for a zero divisor (libtorch raises).
    EXPECT_EQ(kiln::remainder(ai, 0).eval(*e).to_vector<std::int64_t>(),
              (std::vector<std::int64_t>{0, 0, 0, 0, 0}))
        << e->name();
  }
  // Gradients: 1 for a; -trunc(a/b) (fmod) and -floor(a/b) (remainder) for b.
  const Tensor a64 = kiln::convert(a, DType::f64), b64 = kiln::convert(b, DType::f64);
  const auto grads = [&](auto op) {
    const Tensor va = kiln::convert(a64, DType::f64), vb = kiln::convert(b64, DType::f64);
    va.eval();
    vb.eval();
    va.watch();
    vb.watch();
    std::vector<Tensor> g;
    {
      kiln::GradientContext context;
      g = kiln::gradients(kiln::sum(op(va, vb)), {va, vb});
    }
    return std::pair{g[0].to_vector<double>(), g[1].to_vector<double>()};
  };
  const auto [fa, fb] = grads([](const Tensor& p, const Tensor& q) { return kiln::fmod(p, q); });
  EXPECT_EQ(fa, std::vector<double>(6, 1.0));
  EXPECT_EQ(fb, (std::vector<double>{-2, 2, 2, -2, -2, 2}));
  const auto [ra, rb] =
      grads([](const Tensor& p, const Tensor& q) { return kiln::remainder(p, q); });
  EXPECT_EQ(ra, std::vector<double>(6, 1.0));
  EXPECT_EQ(rb, (std::vector<double>{-2, 3, 3, -2, -2, 3}));
}

TEST(ApiForms, Atan2AsPyTorch) {
  const Tensor y = Tensor::from(std::vector<double>{1.0, -1.0, 0.5, -2.0});
  const Tensor x = Tensor::from(std::vector<double>{2.0, -3.0, -0.25, 1.0});
  const std::vector<double> want{0x1.dac670561bb4fp-2, -0x1.68f095fdf593cp+1,
                                 0x1.0468a8ace4df6p+1, -0x1.1b6e192ebbe44p+0};
  for (const auto& e : kiln::executors()) {
    const auto got = y.atan2(x).eval(*e).to_vector<double>();
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 4e-16 * std::abs(want[i])) << e->name() << " " << i;
  }
  y.watch();
  x.watch();
  std::vector<Tensor> g;
  {
    kiln::GradientContext context;
    g = kiln::gradients(kiln::sum(kiln::atan2(y, x)), {y, x});
  }
  const std::vector<double> gy{0.4, -0.3, -0.8, 0.2}, gx{-0.2, 0.1, -1.6, 0.4};
  for (std::size_t i = 0; i < gy.size(); ++i) {
    EXPECT_NEAR(g[0].to_vector<double>()[i], gy[i], 1e-15);
    EXPECT_NEAR(g[1].to_vector<double>()[i], gx[i], 1e-15);
  }
  // Of integers: float-valued, as libtorch's (f32 by default).
  const Tensor ints = kiln::atan2(Tensor::from(std::vector<std::int32_t>{1, 2}),
                                  Tensor::from(std::vector<std::int32_t>{1, 1}));
  EXPECT_EQ(ints.dtype(), DType::f32);
  EXPECT_FLOAT_EQ(ints.to_vector<float>()[0], static_cast<float>(std::atan2(1.0, 1.0)));
}

TEST(ApiForms, SizesPrintLikeLibtorchAndActAsAShape) {
  const Tensor x = kiln::zeros({2, 3, 4});
  std::ostringstream out;
  out << x.sizes();
  EXPECT_EQ(out.str(), "[2, 3, 4]");  // libtorch's IntArrayRef prints so
  std::ostringstream scalar;
  scalar << kiln::zeros({}).sizes();
  EXPECT_EQ(scalar.str(), "[]");
  const kiln::Shape& shape = x.sizes();
  EXPECT_EQ(shape, (kiln::Shape{2, 3, 4}));
  EXPECT_EQ(x.sizes()[1], 3);
  EXPECT_EQ(x.sizes().size(), 3u);
  EXPECT_EQ(x.sizes().vec(), (kiln::Shape{2, 3, 4}));
  EXPECT_TRUE(x.sizes() == kiln::zeros({2, 3, 4}).sizes());
  std::int64_t product = 1;
  for (std::int64_t d : x.sizes()) product *= d;
  EXPECT_EQ(product, 24);
  EXPECT_EQ(kiln::reshape(x, x.sizes()).shape(), shape);  // where a Shape is asked for
}

}  // namespace
