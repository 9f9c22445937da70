// NN building blocks: softmax / log_softmax / logsumexp (hand values and stability), cross_entropy,
// gelu; random ops (random_normal, permutate, dropout: seeding, statistics, stability of the mask
// across evaluations); user kernels (map_elements, reduce_rows with cl-waffe2's top-k example);
// compare with chosen true/false values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using Vd = std::vector<double>;
using Vf = std::vector<float>;

using kiln_test::code_of;

constexpr double kInf = std::numeric_limits<double>::infinity();

Vd ref_softmax(const Vd& row) {
  const double m = *std::max_element(row.begin(), row.end());
  Vd e(row.size());
  double s = 0;
  for (std::size_t i = 0; i < row.size(); ++i) s += (e[i] = std::exp(row[i] - m));
  for (auto& v : e) v /= s;
  return e;
}

double ref_lse(const Vd& row) {
  const double m = *std::max_element(row.begin(), row.end());
  double s = 0;
  for (double v : row) s += std::exp(v - m);
  return m + std::log(s);
}

::testing::AssertionResult all_near(const Vd& got, const Vd& want, double tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same_inf = std::isinf(want[i]) && got[i] == want[i];
    if (!same_inf && !(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i]))))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}

bool any_nan(const Vd& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); });
}

// ---- softmax family ---------------------------------------------------------------------------

TEST(Softmax, HandValues) {
  const Tensor x = kiln::tensor<double>({1, 2, 3}, kiln::DType::f64);
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_TRUE(all_near(kiln::softmax(x).to_vector<double>(),
                       {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s}, 1e-14));
  // Axis 0 of a [2,2]: columns.
  const Tensor m = kiln::tensor<double>({{0, 1}, {0, 3}}, kiln::DType::f64);
  const double e2 = std::exp(2.0);
  EXPECT_TRUE(all_near(kiln::softmax(m, 0).to_vector<double>(),
                       {0.5, 1 / (1 + e2), 0.5, e2 / (1 + e2)}, 1e-14));
  // Default axis -1: rows.
  const double e1 = std::exp(1.0), e3 = std::exp(3.0);
  EXPECT_TRUE(all_near(kiln::softmax(m).to_vector<double>(),
                       {1 / (1 + e1), e1 / (1 + e1), 1 / (1 + e3), e3 / (1 + e3)}, 1e-14));
}

TEST(Softmax, StableForLargeInputs) {
  const Vd want = ref_softmax({0, 1, 2});
  EXPECT_TRUE(all_near(kiln::softmax(kiln::tensor<double>({1000, 1001, 1002}, kiln::DType::f64)).to_vector<double>(),
                       want, 1e-12));
  EXPECT_TRUE(all_near(kiln::softmax(kiln::tensor<double>({-1000, -999, -998}, kiln::DType::f64)).to_vector<double>(),
                       want, 1e-12));
  const Tensor f = kiln::softmax(kiln::tensor<float>({1000.f, 1001.f, 1002.f}));
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_TRUE(all_near(f.to_vector<double>(), want, 1e-6));
  EXPECT_TRUE(all_near(kiln::softmax(kiln::tensor<double>({-1000, -1000}, kiln::DType::f64)).to_vector<double>(),
                       {0.5, 0.5}, 1e-14));
  // -inf entries get probability 0.
  EXPECT_EQ(kiln::softmax(kiln::tensor<double>({-kInf, 0, -kInf}, kiln::DType::f64)).to_vector<double>(),
            (Vd{0, 1, 0}));
}

TEST(Softmax, RowsSumToOne) {
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor x = (kiln::uniform({7, 13}, 5, dt) - (dt == DType::f32 ? kiln::Scalar(0.5f) : kiln::Scalar(0.5))) *
                     (dt == DType::f32 ? kiln::Scalar(40.0f) : kiln::Scalar(40.0));
    const Tensor s = kiln::softmax(x);
    EXPECT_EQ(s.dtype(), dt);
    const Vd sums = kiln::sum(s, {1}).to_vector<double>();
    ASSERT_EQ(sums.size(), 7u);
    for (double v : sums) EXPECT_NEAR(v, 1.0, dt == DType::f32 ? 1e-5 : 1e-12);
    const Vd vals = s.to_vector<double>();
    for (double v : vals) {
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
    }
    // Row 0 against a direct computation.
    const Vd xv = x.to_vector<double>();
    EXPECT_TRUE(all_near(Vd(vals.begin(), vals.begin() + 13),
                         ref_softmax(Vd(xv.begin(), xv.begin() + 13)),
                         dt == DType::f32 ? 1e-5 : 1e-12));
  }
}

TEST(LogSoftmax, HandValuesAndStability) {
  const double lse = ref_lse({0, 1, 2});
  EXPECT_TRUE(all_near(kiln::log_softmax(kiln::tensor<double>({0, 1, 2}, kiln::DType::f64)).to_vector<double>(),
                       {-lse, 1 - lse, 2 - lse}, 1e-14));
  const Vd big = kiln::log_softmax(kiln::tensor<double>({1000, 1001, 1002}, kiln::DType::f64)).to_vector<double>();
  EXPECT_TRUE(all_near(big, {-lse, 1 - lse, 2 - lse}, 1e-12));
  const Vd small = kiln::log_softmax(kiln::tensor<double>({-1000, 0}, kiln::DType::f64)).to_vector<double>();
  EXPECT_FALSE(any_nan(small));
  EXPECT_NEAR(small[0], -1000, 1e-9);
  EXPECT_NEAR(small[1], 0, 1e-12);
  const Vd with_inf = kiln::log_softmax(kiln::tensor<double>({-kInf, 0}, kiln::DType::f64)).to_vector<double>();
  EXPECT_EQ(with_inf, (Vd{-kInf, 0}));
  // Along axis 0.
  const Tensor m = kiln::tensor<double>({{0, 5}, {1, 5}}, kiln::DType::f64);
  const double l01 = ref_lse({0, 1});
  EXPECT_TRUE(all_near(kiln::log_softmax(m, 0).to_vector<double>(),
                       {-l01, -std::log(2.0), 1 - l01, -std::log(2.0)}, 1e-14));
}

TEST(LogSumExp, HandValues) {
  const Tensor x = kiln::tensor<double>({1, 2, 3}, kiln::DType::f64);
  const Tensor r = kiln::logsumexp(x);
  EXPECT_EQ(r.rank(), 0);
  EXPECT_NEAR(r.item<double>(), std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-14);
  const Tensor m = kiln::tensor<double>({{1, 2, 3}, {0, 0, 0}}, kiln::DType::f64);
  const Tensor rk = kiln::logsumexp(m, -1, true);
  EXPECT_EQ(rk.shape(), (Shape{2, 1}));
  EXPECT_TRUE(all_near(rk.to_vector<double>(), {ref_lse({1, 2, 3}), std::log(3.0)}, 1e-14));
  const Tensor r0 = kiln::logsumexp(m, 0);
  EXPECT_EQ(r0.shape(), (Shape{3}));
  EXPECT_TRUE(all_near(r0.to_vector<double>(), {ref_lse({1, 0}), ref_lse({2, 0}), ref_lse({3, 0})},
                       1e-14));
}

TEST(LogSumExp, Stability) {
  EXPECT_NEAR(kiln::logsumexp(kiln::tensor<double>({1000, 1000}, kiln::DType::f64)).item<double>(),
              1000 + std::log(2.0), 1e-9);
  EXPECT_NEAR(kiln::logsumexp(kiln::tensor<double>({-1000, -1000}, kiln::DType::f64)).item<double>(),
              -1000 + std::log(2.0), 1e-9);
  EXPECT_NEAR(kiln::logsumexp(kiln::tensor<double>({1000, 1001, 1002}, kiln::DType::f64)).item<double>(),
              1000 + ref_lse({0, 1, 2}), 1e-9);
  const Tensor f = kiln::logsumexp(kiln::tensor<float>({1000.f, 1001.f, 1002.f}));
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_NEAR(f.item<double>(), 1000 + ref_lse({0, 1, 2}), 1e-3);
  // Rows of -inf give -inf, not NaN; a +inf entry gives +inf.
  const Vd rows =
      kiln::logsumexp(kiln::tensor<double>({{-kInf, -kInf}, {0, -kInf}}, kiln::DType::f64)).to_vector<double>();
  EXPECT_EQ(rows, (Vd{-kInf, 0}));
  EXPECT_EQ(kiln::logsumexp(kiln::tensor<double>({kInf, 0}, kiln::DType::f64)).item<double>(), kInf);
}

TEST(CrossEntropy, HandComputation) {
  const Tensor logits = kiln::tensor<double>({{1, 2, 3}, {1, 1, 1}}, kiln::DType::f64);
  const Tensor labels = kiln::tensor<std::int32_t>({2, 0});
  const double want = ((ref_lse({1, 2, 3}) - 3) + std::log(3.0)) / 2;
  const Tensor r = kiln::cross_entropy(logits, labels);
  EXPECT_EQ(r.numel(), 1);
  EXPECT_NEAR(r.item<double>(), want, 1e-14);
  // i64 labels, f32 logits.
  const Tensor rf = kiln::cross_entropy(kiln::tensor<float>({{0.f, 0.f}, {2.f, -1.f}, {3.f, 3.f}}),
                                        kiln::tensor<std::int64_t>({1, 1, 0}));
  const double wf = (std::log(2.0) + (ref_lse({2, -1}) + 1) + std::log(2.0)) / 3;
  EXPECT_NEAR(rf.item<double>(), wf, 1e-6);
  // Large logits stay finite: row 0 loss ~0, row 1 loss ~1000.
  const Tensor big = kiln::cross_entropy(kiln::tensor<double>({{1000, 0}, {0, -1000}}, kiln::DType::f64),
                                         kiln::tensor<std::int32_t>({0, 1}));
  EXPECT_NEAR(big.item<double>(), 500, 1e-9);
}

TEST(CrossEntropy, Errors) {
  const Tensor logits = kiln::zeros({2, 3}, DType::f64);
  EXPECT_NE(code_of([&] { kiln::cross_entropy(logits, kiln::tensor<std::int32_t>({0, 1, 2})); }),
            ErrorCode::none);
  EXPECT_EQ(code_of([&] {
              kiln::cross_entropy(logits, kiln::tensor<std::int32_t>({0, 3})).eval();
            }),
            ErrorCode::invalid_select);
}

TEST(Gelu, MatchesErfForm) {
  Vd xs;
  for (int i = -60; i <= 60; ++i) xs.push_back(i / 10.0);
  xs.push_back(-30);
  xs.push_back(30);
  Vd want;
  for (double x : xs) want.push_back(x * 0.5 * (1 + std::erf(x / std::sqrt(2.0))));
  const Tensor r = kiln::gelu(Tensor::from(xs));
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_TRUE(all_near(r.to_vector<double>(), want, 1e-14));
  Vf xf(xs.begin(), xs.end());
  const Tensor rf = kiln::gelu(Tensor::from(xf));
  EXPECT_EQ(rf.dtype(), DType::f32);
  EXPECT_TRUE(all_near(rf.to_vector<double>(), want, 1e-6));
  // Integer input gives the default float type (a float-valued op).
  const Tensor ri = kiln::gelu(kiln::tensor<std::int32_t>({-2, 0, 1}));
  EXPECT_EQ(ri.dtype(), kiln::default_dtype());
  EXPECT_TRUE(all_near(ri.to_vector<double>(),
                       {-2 * 0.5 * (1 + std::erf(-2 / std::sqrt(2.0))), 0,
                        0.5 * (1 + std::erf(1 / std::sqrt(2.0)))},
                       1e-6));
}

// ---- random_normal ----------------------------------------------------------------------------

TEST(RandomNormal, SeededIsReproducible) {
  const Vd a = kiln::random_normal({50}, 123).to_vector<double>();
  const Vd b = kiln::random_normal({50}, 123).to_vector<double>();
  const Vd c = kiln::random_normal({50}, 124).to_vector<double>();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const Tensor f = kiln::random_normal({4, 5}, 123, DType::f32);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.shape(), (Shape{4, 5}));
  EXPECT_FALSE(any_nan(f.to_vector<double>()));
}

TEST(RandomNormal, GlobalSeed) {
  kiln::manual_seed(77);
  const Vd a = kiln::random_normal({20}).to_vector<double>();
  const Vd b = kiln::random_normal({20}).to_vector<double>();
  kiln::manual_seed(77);
  const Vd a2 = kiln::random_normal({20}).to_vector<double>();
  EXPECT_NE(a, b);
  EXPECT_EQ(a, a2);
}

TEST(RandomNormal, MeanAndStd) {
  const std::size_t n = 100000;
  for (DType dt : {DType::f64, DType::f32}) {
    const Vd v = kiln::random_normal({static_cast<std::int64_t>(n)}, 2024, dt).to_vector<double>();
    ASSERT_EQ(v.size(), n);
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n);
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    const double sd = std::sqrt(var / static_cast<double>(n));
    EXPECT_NEAR(mean, 0.0, 0.02);
    EXPECT_NEAR(sd, 1.0, 0.02);
    EXPECT_FALSE(any_nan(v));
    // Both tails are present, roughly as often as for a normal distribution (P(|z|>2) ~ 4.55%).
    const auto tails = std::count_if(v.begin(), v.end(), [](double x) { return std::abs(x) > 2; });
    EXPECT_NEAR(static_cast<double>(tails) / static_cast<double>(n), 0.0455, 0.005);
  }
}

// ---- permutate --------------------------------------------------------------------------------

// The k of each row [3k, 3k+1, 3k+2] of `v` (rows of 3), or -1 when a row is not of that form.
std::vector<std::int64_t> row_ids(const Vd& v) {
  std::vector<std::int64_t> ids;
  for (std::size_t r = 0; r * 3 < v.size(); ++r) {
    const double k = v[r * 3] / 3;
    const bool intact = v[r * 3 + 1] == v[r * 3] + 1 && v[r * 3 + 2] == v[r * 3] + 2 &&
                        k == std::floor(k);
    ids.push_back(intact ? static_cast<std::int64_t>(k) : -1);
  }
  return ids;
}

TEST(Permutate, IsAPermutationOfTheAxis) {
  const Tensor a = kiln::reshape(kiln::arange(24), {8, 3}).convert(DType::f64);
  const Tensor p = kiln::permutate(a, 0, 42);
  EXPECT_EQ(p.shape(), (Shape{8, 3}));
  EXPECT_EQ(p.dtype(), DType::f64);
  auto ids = row_ids(p.to_vector<double>());
  // Every row is an original row, untouched along the other axis ...
  for (auto k : ids) EXPECT_GE(k, 0);
  // ... and each original row appears once.
  std::sort(ids.begin(), ids.end());
  std::vector<std::int64_t> all(8);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(ids, all);
}

TEST(Permutate, SortedValuesEqualTheOriginal) {
  const Tensor a = kiln::arange(100);
  const std::vector<std::int64_t> p = kiln::permutate(a, 0, 7).to_vector<std::int64_t>();
  std::vector<std::int64_t> orig(100);
  std::iota(orig.begin(), orig.end(), 0);
  EXPECT_NE(p, orig);  // a fixed seed: the identity has probability 1/100!
  std::vector<std::int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, orig);
}

TEST(Permutate, SameSeedSameOrder) {
  const Tensor a = kiln::arange(50);
  EXPECT_EQ(kiln::permutate(a, 0, 5).to_vector<std::int64_t>(),
            kiln::permutate(a, 0, 5).to_vector<std::int64_t>());
  // Some other seed gives another order.
  bool differs = false;
  for (std::uint64_t s = 6; s < 10 && !differs; ++s)
    differs = kiln::permutate(a, 0, s).to_vector<std::int64_t>() !=
              kiln::permutate(a, 0, 5).to_vector<std::int64_t>();
  EXPECT_TRUE(differs);
  // The same seed moves the slices of different tensors the same way.
  const Tensor b = kiln::arange(50) * 2;
  const auto pa = kiln::permutate(a, 0, 11).to_vector<std::int64_t>();
  const auto pb = kiln::permutate(b, 0, 11).to_vector<std::int64_t>();
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pb[i], 2 * pa[i]);
  // Without a seed, evaluating one node twice (through two consumers) gives one order.
  const Tensor p = kiln::permutate(a, 0);
  const Tensor c1 = p + 0;
  const Tensor c2 = p * 1;
  EXPECT_EQ(c1.to_vector<std::int64_t>(), c2.to_vector<std::int64_t>());
}

TEST(Permutate, OtherAxesUntouched) {
  // [3, 8]: columns are permuted; column j of the result is an original column.
  const Tensor a = kiln::reshape(kiln::arange(24), {3, 8});
  for (int axis : {1, -1}) {
    const Tensor p = kiln::permutate(a, axis, 3);
    EXPECT_EQ(p.shape(), (Shape{3, 8}));
    const auto v = p.to_vector<std::int64_t>();
    std::vector<std::int64_t> cols;
    for (std::size_t j = 0; j < 8; ++j) {
      EXPECT_EQ(v[8 + j], v[j] + 8);
      EXPECT_EQ(v[16 + j], v[j] + 16);
      cols.push_back(v[j]);
    }
    std::sort(cols.begin(), cols.end());
    EXPECT_EQ(cols, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  }
  // The middle axis of a [2,5,2].
  const Tensor b = kiln::reshape(kiln::arange(20), {2, 5, 2});
  const auto v = kiln::permutate(b, 1, 9).to_vector<std::int64_t>();
  for (std::size_t j = 0; j < 5; ++j) {
    EXPECT_EQ(v[2 * j + 1], v[2 * j] + 1);      // the last axis untouched
    EXPECT_EQ(v[10 + 2 * j], v[2 * j] + 10);    // the first axis moved together
    EXPECT_EQ(v[2 * j] % 2, 0);
  }
}

// ---- dropout ----------------------------------------------------------------------------------

TEST(Dropout, ExtremeProbabilities) {
  const Tensor a = kiln::uniform({1000}, 1) + 1.0;  // never 0
  EXPECT_EQ(kiln::dropout(a, 0.0, 3).to_vector<double>(), a.to_vector<double>());
  const Vd none = kiln::dropout(a, 1.0, 3).to_vector<double>();
  EXPECT_EQ(none, Vd(1000, 0.0));
  const Tensor i = kiln::tensor<std::int32_t>({1, 2, 3});
  const Tensor di = kiln::dropout(i, 1.0, 3);
  EXPECT_EQ(di.dtype(), DType::i32);
  EXPECT_EQ(di.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 0}));
}

TEST(Dropout, DropsAboutPAndRescalesWhatItKeeps) {
  const std::int64_t n = 100000;
  const Tensor a = kiln::uniform({n}, 8, DType::f64) + 0.5;  // in [0.5, 1.5), never 0
  const Tensor d = kiln::dropout(a, 0.3, 21);
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(d.shape(), (Shape{n}));
  const Vd av = a.to_vector<double>(), dv = d.to_vector<double>();
  std::int64_t dropped = 0;
  for (std::size_t i = 0; i < dv.size(); ++i) {
    if (dv[i] == 0) {
      ++dropped;
    } else {
      ASSERT_EQ(dv[i], av[i] * (1.0 / 0.7)) << i;  // kept values divided by 1 - p, as libtorch
    }
  }
  EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(n), 0.3, 0.01);
  // f32 stays f32.
  const Tensor f = kiln::dropout(kiln::ones({10}, DType::f32), 0.5, 2);
  EXPECT_EQ(f.dtype(), DType::f32);
}

TEST(Dropout, SameMaskEverywhere) {
  const Tensor a = kiln::uniform({2000}, 4) + 1.0;
  // The same seed gives the same mask in two separately built nodes.
  EXPECT_EQ(kiln::dropout(a, 0.5, 99).to_vector<double>(),
            kiln::dropout(a, 0.5, 99).to_vector<double>());
  EXPECT_NE(kiln::dropout(a, 0.5, 99).to_vector<double>(),
            kiln::dropout(a, 0.5, 100).to_vector<double>());
  // Without a seed: two consumers evaluated one after the other, with no handle to the dropout
  // node kept (so its result may be released and computed again), read the same mask.
  Tensor c1, c2;
  {
    const Tensor d = kiln::dropout(a, 0.5);
    c1 = d + 0.0;
    c2 = d * 2.0;
  }
  const Vd v1 = c1.to_vector<double>();
  const Vd v2 = c2.to_vector<double>();
  ASSERT_EQ(v1.size(), v2.size());
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < v1.size(); ++i) {
    EXPECT_EQ(v2[i], 2 * v1[i]) << i;
    zeros += v1[i] == 0;
  }
  EXPECT_GT(zeros, 0u);
  EXPECT_LT(zeros, v1.size());
  // Evaluating one node twice gives the same values.
  const Tensor d = kiln::dropout(a, 0.5);
  const Vd first = d.to_vector<double>();
  d.eval();
  EXPECT_EQ(d.to_vector<double>(), first);
  // Both consumers in one graph.
  const Tensor both = kiln::sub(d * 3.0, d + d + d);
  EXPECT_EQ(both.to_vector<double>(), Vd(2000, 0.0));
}

TEST(Dropout, ProbabilityOutsideZeroOneIsAnError) {
  const Tensor a = kiln::ones({3});
  EXPECT_NE(code_of([&] { kiln::dropout(a, -0.1, 1); }), ErrorCode::none);
  EXPECT_NE(code_of([&] { kiln::dropout(a, 1.5, 1); }), ErrorCode::none);
}

// ---- map_elements / reduce_rows ---------------------------------------------------------------

TEST(MapElements, AppliesFAndKeepsFloatTypes) {
  const auto f = [](double x) { return x * x + 1; };
  const Tensor d = kiln::map_elements(kiln::tensor<double>({-1.5, 0, 2}, kiln::DType::f64), f);
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(d.to_vector<double>(), (Vd{3.25, 1, 5}));
  const Tensor s = kiln::map_elements(kiln::tensor<float>({{0.5f, 1.f}, {-2.f, 3.f}}), f);
  EXPECT_EQ(s.dtype(), DType::f32);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.to_vector<float>(), (Vf{1.25f, 2.f, 5.f, 10.f}));
  // Integer tensors give f64, and the function sees (and may return) non-integers.
  const Tensor i = kiln::map_elements(kiln::tensor<std::int32_t>({1, 2, 3}),
                                      [](double x) { return x / 4; });
  EXPECT_EQ(i.dtype(), DType::f64);
  EXPECT_EQ(i.to_vector<double>(), (Vd{0.25, 0.5, 0.75}));
  const Tensor l = kiln::map_elements(kiln::arange(3), [](double x) { return std::sin(x); });
  EXPECT_EQ(l.dtype(), DType::f64);
  EXPECT_TRUE(all_near(l.to_vector<double>(), {0, std::sin(1.0), std::sin(2.0)}, 1e-15));
  // cl-waffe2's example: (lazy #'sin (randn `(3 3)) :diff #'cos).
  const Tensor x = kiln::random_normal({3, 3}, 5, DType::f64);
  const Tensor y = kiln::map_elements(x, [](double v) { return std::sin(v); },
                                      [](double v) { return std::cos(v); });
  const Vd xv = x.to_vector<double>(), yv = y.to_vector<double>();
  for (std::size_t k = 0; k < xv.size(); ++k) EXPECT_DOUBLE_EQ(yv[k], std::sin(xv[k]));
  // Through a view: the function sees the logical elements.
  const Tensor t = kiln::map_elements(kiln::reverse_dims(kiln::reshape(kiln::arange(6), {2, 3})),
                                      [](double v) { return v * 10; });
  EXPECT_EQ(t.to_vector<double>(), (Vd{0, 30, 10, 40, 20, 50}));
}

kiln::RowFunction topk(std::size_t k) {
  return [k](std::span<const double> row, std::span<double> out) {
    Vd v(row.begin(), row.end());
    std::sort(v.begin(), v.end(), std::greater<>());
    for (std::size_t i = 0; i < k; ++i) out[i] = v[i];
  };
}

TEST(ReduceRows, TopKExampleOfLazyReduce) {
  // (lazy-reduce (topk 3) (ax+b `(10 10) 1 0) :reduce-to 3)
  const Tensor a = kiln::reshape(kiln::arange(100), {10, 10});
  const Tensor r = kiln::reduce_rows(a, 3, topk(3));
  EXPECT_EQ(r.shape(), (Shape{10, 3}));
  EXPECT_EQ(r.dtype(), DType::f64);
  Vd want;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(10 * i + 9 - j);
  EXPECT_EQ(r.to_vector<double>(), want);
  // (lazy-reduce #'max (ax+b `(10 10) 1 0)): k = 1.
  const Tensor m = kiln::reduce_rows(a, 1, [](std::span<const double> row, std::span<double> out) {
    out[0] = *std::max_element(row.begin(), row.end());
  });
  EXPECT_EQ(m.shape(), (Shape{10, 1}));
  Vd wm;
  for (int i = 0; i < 10; ++i) wm.push_back(10 * i + 9);
  EXPECT_EQ(m.to_vector<double>(), wm);
}

TEST(ReduceRows, RowsOfHigherRankAndViews) {
  // The rows of a transposed view are its logical last dimension; f32 stays f32.
  const Tensor a = kiln::reverse_dims(kiln::tensor<float>({{3.f, 1.f}, {2.f, 5.f}, {4.f, 0.f}}));
  const Tensor r = kiln::reduce_rows(a, 2, topk(2));  // rows [3,2,4] and [1,5,0]
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.to_vector<float>(), (Vf{4.f, 3.f, 5.f, 1.f}));
  // A 3-D input, k larger than the row (the sum and the count and the sum of squares).
  const Tensor b = kiln::reshape(kiln::arange(12), {2, 3, 2});
  const Tensor s = kiln::reduce_rows(b, 3, [](std::span<const double> row, std::span<double> out) {
    out[0] = row[0] + row[1];
    out[1] = static_cast<double>(row.size());
    out[2] = row[0] * row[0] + row[1] * row[1];
  });
  EXPECT_EQ(s.shape(), (Shape{2, 3, 3}));
  const Vd sv = s.to_vector<double>();
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(sv[3 * r], 4 * r + 1);
    EXPECT_EQ(sv[3 * r + 1], 2);
    EXPECT_EQ(sv[3 * r + 2], (2 * r) * (2 * r) + (2 * r + 1) * (2 * r + 1));
  }
}

// ---- compare ----------------------------------------------------------------------------------

TEST(Compare, ChosenTrueAndFalseValues) {
  const Tensor a = kiln::tensor<double>({1, 5, 3, 7}, kiln::DType::f64);
  const Tensor b = kiln::tensor<double>({2, 5, 1, 9}, kiln::DType::f64);
  using kiln::Comparison;
  EXPECT_EQ(kiln::compare(a, b, Comparison::greater, 10, -10).to_vector<double>(),
            (Vd{-10, -10, 10, -10}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::less).to_vector<double>(), (Vd{1, 0, 0, 1}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::equal, 7, 3).to_vector<double>(), (Vd{3, 7, 3, 3}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::less_equal, 1, 0).to_vector<double>(),
            (Vd{1, 1, 0, 1}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::greater_equal, 1, 0).to_vector<double>(),
            (Vd{0, 1, 1, 0}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::not_equal, 1, 0).to_vector<double>(),
            (Vd{1, 0, 1, 1}));
  // Fractional true/false values are kept exactly.
  EXPECT_EQ(kiln::compare(a, b, Comparison::less, 2.5, -0.5).to_vector<double>(),
            (Vd{2.5, -0.5, -0.5, 2.5}));
  // Against a scalar (cl-waffe2's a>scal), broadcasting a [2,2] against a 0-d tensor.
  const Tensor m = kiln::tensor<std::int32_t>({{1, 4}, {6, 2}});
  const Tensor r = kiln::compare(m, kiln::scalar(3), Comparison::greater, 100, 200);
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(r.to_vector<double>(), (Vd{200, 100, 100, 200}));
  // Broadcasting a row.
  const Tensor row = kiln::tensor<std::int32_t>({2, 3});
  EXPECT_EQ(kiln::compare(m, row, Comparison::greater_equal, 1, 0).to_vector<double>(),
            (Vd{0, 1, 1, 0}));
}

}  // namespace
