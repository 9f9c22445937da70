// The data-shaped forms a libtorch user reaches for: max/min along a dimension with indices,
// scatter, multinomial and unique, against PyTorch 2.15's values where they are not random.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln_test::error_of;

TEST(LibtorchDataOps, MaxAndMinAlongADimensionGiveValuesAndIndices) {
  const Tensor x = Tensor::from<float>({1, 5, 3, 7, 2, 7}, {2, 3});
  auto [values, indices] = kiln::max(x, 1);  // torch.max(x, 1)
  EXPECT_EQ(values.to_vector<float>(), (std::vector<float>{5, 7}));
  EXPECT_EQ(indices.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(indices.dtype(), DType::i64);
  const kiln::ValuesIndices m = x.min(0, /*keepdim=*/true);
  EXPECT_EQ(m.values.shape(), (kiln::Shape{1, 3}));
  EXPECT_EQ(m.values.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(m.indices.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 0}));
  // Braced axes still reduce without indices: {} is every axis.
  EXPECT_EQ(kiln::max(x, {}).item<float>(), 7.0f);
  EXPECT_EQ(kiln::max(x, {1}).to_vector<float>(), (std::vector<float>{5, 7}));
  EXPECT_EQ(x.min({0, 1}).item<float>(), 1.0f);
  EXPECT_EQ(x.max({-1}, true).shape(), (kiln::Shape{2, 1}));
  // Only the values carry a gradient.
  Tensor w = x;
  w.watch();
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = kiln::max(w, 1).values.sum();
  }
  // libtorch's: the whole gradient goes to the index returned, the first of tied maxima.
  EXPECT_EQ(kiln::gradients(loss, {w})[0].to_vector<float>(),
            (std::vector<float>{0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(error_of([&] { kiln::max(x, 2); }).code(), kiln::ErrorCode::illegal_dimension);
}

TEST(LibtorchDataOps, ScatterWritesValuesWhereIndicesPoint) {
  const Tensor a = kiln::zeros({3, 4});
  const Tensor index = Tensor::from<std::int64_t>({0, 1, 2, 0, 2, 0, 0, 1}, {2, 4});
  const Tensor src = kiln::arange(1.0, 9.0).reshape({2, 4}).to(DType::f32);
  EXPECT_EQ(kiln::scatter(a, 0, index, src).to_vector<float>(),
            (std::vector<float>{1, 6, 7, 4, 0, 2, 0, 8, 5, 0, 3, 0}));  // torch's a.scatter(0, ..)
  EXPECT_EQ(kiln::scatter(a, 1, Tensor::from<std::int64_t>({3, 0, 1}, {3, 1}), 2.5)
                .to_vector<float>(),
            (std::vector<float>{0, 0, 0, 2.5, 2.5, 0, 0, 0, 0, 2.5, 0, 0}));
  // The value takes a's type.
  const Tensor ints = kiln::scatter(Tensor::from<std::int32_t>({0, 0}), 0,
                                    Tensor::from<std::int64_t>({1}), 2.5);
  EXPECT_EQ(ints.dtype(), DType::i32);
  EXPECT_EQ(ints.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 2}));
  // Elements not named keep a's values; one named twice takes the mean.
  const Tensor base = Tensor::from<float>({9, 9, 9}, {3});
  EXPECT_EQ(kiln::scatter(base, 0, Tensor::from<std::int64_t>({1, 1}), Tensor::from<float>({5, 7}))
                .to_vector<float>(),
            (std::vector<float>{9, 6, 9}));
  EXPECT_EQ(kiln::scatter(Tensor::from<std::int32_t>({0, 0}), 0,
                          Tensor::from<std::int64_t>({0, 0, 1}),
                          Tensor::from<std::int32_t>({2, 5, 4}))
                .to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{3, 4}));
  // Gradients: a's where nothing was written, src's where it was.
  Tensor w = base;
  Tensor s = Tensor::from<float>({5, 7});
  w.watch();
  s.watch();
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = (kiln::scatter(w, 0, Tensor::from<std::int64_t>({2, 0}), s) *
            Tensor::from<float>({1, 2, 3}))
               .sum();
  }
  const std::vector<Tensor> g = kiln::gradients(loss, {w, s});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{0, 2, 0}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{3, 1}));
  const kiln::Error e = error_of(
      [&] { kiln::scatter(a, 0, Tensor::from<float>({0, 1}, {1, 2}), src); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::wrong_type);
  EXPECT_NE(std::string(e.what()).find("scatter"), std::string::npos) << e.what();
  EXPECT_EQ(error_of([&] { kiln::scatter(a, 0, Tensor::from<std::int64_t>({3}, {1, 1}), 1.0); })
                .code(),
            kiln::ErrorCode::invalid_select);
}

TEST(LibtorchDataOps, MultinomialWithReplacementFollowsTheWeights) {
  kiln::manual_seed(11);
  const Tensor probs = Tensor::from<float>({0.0f, 1.0f, 2.0f, 7.0f, 0.0f}, {5});
  const std::int64_t n = 20000;
  const Tensor drawn = kiln::multinomial(probs, n, /*replacement=*/true);
  EXPECT_EQ(drawn.dtype(), DType::i64);
  EXPECT_EQ(drawn.shape(), (kiln::Shape{n}));
  std::vector<double> freq(5, 0.0);
  for (const std::int64_t c : drawn.to_vector<std::int64_t>()) {
    ASSERT_GE(c, 0);
    ASSERT_LT(c, 5);
    freq[static_cast<std::size_t>(c)] += 1.0 / n;
  }
  EXPECT_EQ(freq[0], 0.0);  // weight 0 is never drawn, first or last
  EXPECT_EQ(freq[4], 0.0);
  EXPECT_NEAR(freq[1], 0.1, 0.01);
  EXPECT_NEAR(freq[2], 0.2, 0.01);
  EXPECT_NEAR(freq[3], 0.7, 0.01);
  // A seed fixes the draw; rows are drawn independently.
  const Tensor rows = Tensor::from<double>({1, 0, 0, 1}, {2, 2});
  const Tensor twice = kiln::multinomial(rows, 3, true, 5);
  EXPECT_EQ(twice.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(kiln::multinomial(probs, 7, true, 3).to_vector<std::int64_t>(),
            kiln::multinomial(probs, 7, true, 3).to_vector<std::int64_t>());
}

TEST(LibtorchDataOps, MultinomialWithoutReplacementDrawsDistinctCategories) {
  kiln::manual_seed(12);
  const Tensor probs = Tensor::from<float>({1, 2, 7, 0}, {1, 4});
  std::vector<double> first(4, 0.0);
  const int trials = 4000;
  const Tensor batch = kiln::multinomial(probs.expand({trials, 4}), 4);
  const std::vector<std::int64_t> all = batch.to_vector<std::int64_t>();
  for (int t = 0; t < trials; ++t) {
    const std::set<std::int64_t> seen(all.begin() + 4 * t, all.begin() + 4 * t + 4);
    ASSERT_EQ(seen.size(), 4u) << "trial " << t;
    EXPECT_EQ(all[static_cast<std::size_t>(4 * t + 3)], 3) << "weight 0 comes last";
    first[static_cast<std::size_t>(all[static_cast<std::size_t>(4 * t)])] += 1.0 / trials;
  }
  EXPECT_NEAR(first[0], 0.1, 0.02);
  EXPECT_NEAR(first[1], 0.2, 0.02);
  EXPECT_NEAR(first[2], 0.7, 0.02);
}

TEST(LibtorchDataOps, MultinomialRefusesWeightsThatAreNoDistribution) {
  using E = kiln::ErrorCode;
  const Tensor ok = Tensor::from<float>({1, 2, 3});
  EXPECT_EQ(error_of([&] { kiln::multinomial(ok, 4); }).code(), E::invalid_select);
  EXPECT_EQ(error_of([&] { kiln::multinomial(ok, 0, true); }).code(), E::invalid_select);
  EXPECT_EQ(error_of([&] { kiln::multinomial(Tensor::from<float>({1, -1}), 1); }).code(),
            E::invalid_select);
  const kiln::Error nan = error_of([&] {
    kiln::multinomial(Tensor::from<float>({1, std::numeric_limits<float>::quiet_NaN()}), 1);
  });
  EXPECT_EQ(nan.code(), E::invalid_select);
  EXPECT_NE(std::string(nan.what()).find("multinomial: weights [1,2]"), std::string::npos)
      << nan.what();
  EXPECT_EQ(error_of([&] { kiln::multinomial(Tensor::from<float>({0, 0}), 1); }).code(),
            E::invalid_select);
  EXPECT_EQ(error_of([&] { kiln::multinomial(Tensor::from<std::int32_t>({1, 2}), 1); }).code(),
            E::wrong_type);
  EXPECT_EQ(error_of([&] { kiln::multinomial(kiln::ones({2, 2, 2}), 1); }).code(),
            E::illegal_dimensionality);
}

TEST(LibtorchDataOps, UniqueGivesValuesInverseAndCounts) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // torch.unique(.., return_inverse=True, return_counts=True)
  const kiln::UniqueResult u = kiln::unique(Tensor::from<double>({nan, 2, nan, 1, 2}));
  const std::vector<double> values = u.values.to_vector<double>();
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(values[0], 1.0);
  EXPECT_EQ(values[1], 2.0);
  EXPECT_TRUE(std::isnan(values[2]) && std::isnan(values[3]));
  EXPECT_EQ(u.inverse.to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 1, 3, 0, 1}));
  EXPECT_EQ(u.counts.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2, 1, 1}));

  const Tensor ints = Tensor::from<std::int64_t>({3, 1, 1, 3}, {2, 2});
  const kiln::UniqueResult v = kiln::unique(ints * 1);  // a computed input is evaluated
  EXPECT_EQ(v.values.dtype(), DType::i64);
  EXPECT_EQ(v.values.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(v.inverse.shape(), (kiln::Shape{2, 2}));
  EXPECT_EQ(v.inverse.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(v.counts.to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 2}));
  // values.index({inverse}) gives the input back.
  EXPECT_EQ(v.values.index({v.inverse}).to_vector<std::int64_t>(), ints.to_vector<std::int64_t>());

  const kiln::UniqueResult b = kiln::unique(Tensor::from(std::vector<bool>{true, false, true}));
  EXPECT_EQ(b.values.to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(b.counts.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(kiln::unique(kiln::zeros({0})).values.numel(), 0);
  EXPECT_EQ(error_of([] { kiln::unique(kiln::zeros({2}, DType::c64)); }).code(),
            kiln::ErrorCode::wrong_type);
}

}  // namespace
