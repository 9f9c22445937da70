// Reductions (sum, prod, min, max, mean, argmax, argmin) over one, several and all axes, with
// keepdims and negative axes, the spec's examples, their types and their empty-dimension rules;
// matmul and dot by hand and against nested loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;

using kiln_test::code_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using I32 = std::vector<std::int32_t>;
using I64 = std::vector<std::int64_t>;
using F64 = std::vector<double>;

Tensor i32(I32 v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor f64(F64 v, Shape s) { return Tensor::from(v, std::move(s)); }

using kiln_test::numel_of;

// 0, 1, 2, ... in shape `s`, f64.
Tensor iota(const Shape& s) {
  F64 v(static_cast<std::size_t>(numel_of(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from(v, s);
}

// Reference reduction: folds `values` of `shape` over `axes` (non-negative) with `op`.
F64 reduce_ref(const F64& values, const Shape& shape, std::vector<int> axes, double init,
               const std::function<double(double, double)>& op) {
  const int rank = static_cast<int>(shape.size());
  std::vector<bool> reduced(rank, false);
  for (int a : axes) reduced[a] = true;
  Shape out_shape;
  for (int d = 0; d < rank; ++d)
    if (!reduced[d]) out_shape.push_back(shape[d]);
  F64 out(static_cast<std::size_t>(numel_of(out_shape)), init);
  std::vector<std::int64_t> idx(rank, 0);
  for (std::size_t flat = 0; flat < values.size(); ++flat) {
    std::int64_t o = 0;
    for (int d = 0; d < rank; ++d)
      if (!reduced[d]) o = o * shape[d] + idx[d];
    out[static_cast<std::size_t>(o)] = op(out[static_cast<std::size_t>(o)], values[flat]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// ============================================ spec examples ====================================

TEST(Reduce, SpecSum) {
  auto t = i32({1, 2, 3, 4, 5, 6}, {2, 3});
  auto s0 = kiln::sum(t, {0});
  EXPECT_EQ(s0.dtype(), DType::i32);
  EXPECT_EQ(s0.shape(), (Shape{3}));
  EXPECT_EQ(s0.to_vector<std::int32_t>(), (I32{5, 7, 9}));
  auto s1 = kiln::sum(t, {1});
  EXPECT_EQ(s1.shape(), (Shape{2}));
  EXPECT_EQ(s1.to_vector<std::int32_t>(), (I32{6, 15}));
}

TEST(Reduce, SpecProd) {
  auto t = i32({1, 2, 3, 4, 5, 6}, {2, 3});
  auto p0 = kiln::prod(t, {0});
  EXPECT_EQ(p0.dtype(), DType::i32);
  EXPECT_EQ(p0.to_vector<std::int32_t>(), (I32{4, 10, 18}));
  EXPECT_EQ(kiln::prod(t, {1}).to_vector<std::int32_t>(), (I32{6, 120}));
}

TEST(Reduce, SpecMinMax) {
  auto a = i32({1, 32, 3, 4, 5, 3}, {2, 3});
  auto b = i32({9, 2, 3, -1, 5, 6}, {2, 3});
  auto mn = kiln::min(a, {0});
  EXPECT_EQ(mn.dtype(), DType::i32);
  EXPECT_EQ(mn.to_vector<std::int32_t>(), (I32{1, 5, 3}));
  EXPECT_EQ(kiln::min(b, {1}).to_vector<std::int32_t>(), (I32{2, -1}));
  auto mx = kiln::max(a, {0});
  EXPECT_EQ(mx.dtype(), DType::i32);
  EXPECT_EQ(mx.to_vector<std::int32_t>(), (I32{4, 32, 3}));
  EXPECT_EQ(kiln::max(b, {1}).to_vector<std::int32_t>(), (I32{9, 6}));
}

TEST(Reduce, SpecExamplesInFloat) {
  auto t = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(kiln::sum(t, {0}).to_vector<double>(), (F64{5, 7, 9}));
  EXPECT_EQ(kiln::prod(t, {1}).to_vector<double>(), (F64{6, 120}));
  auto tf = Tensor::from(std::vector<float>{9, 2, 3, -1, 5, 6}, {2, 3});
  auto m = kiln::min(tf, {1});
  EXPECT_EQ(m.dtype(), DType::f32);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2, -1}));
  auto x = kiln::max(tf, {1});
  EXPECT_EQ(x.dtype(), DType::f32);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{9, 6}));
}

// ============================================ axes =============================================

TEST(Reduce, SeveralAxes) {
  const Shape s{2, 3, 4};
  auto t = iota(s);
  const auto v = t.to_vector<double>();
  auto r = kiln::sum(t, {0, 2});
  EXPECT_EQ(r.shape(), (Shape{3}));
  EXPECT_EQ(r.to_vector<double>(), (F64{60, 92, 124}));
  EXPECT_EQ(kiln::max(t, {1, 2}).to_vector<double>(), (F64{11, 23}));
  EXPECT_EQ(kiln::min(t, {0, 1}).to_vector<double>(), (F64{0, 1, 2, 3}));
  // Axis order does not matter.
  EXPECT_EQ(kiln::sum(t, {2, 0}).to_vector<double>(), (F64{60, 92, 124}));
  auto p = kiln::prod(t + 1.0, {0, 1});
  EXPECT_EQ(p.shape(), (Shape{4}));
  const auto pv = p.to_vector<double>();
  const auto pref = reduce_ref(v, s, {0, 1}, 1.0, [](double a, double b) { return a * (b + 1); });
  ASSERT_EQ(pv.size(), pref.size());
  for (std::size_t i = 0; i < pv.size(); ++i) EXPECT_DOUBLE_EQ(pv[i], pref[i]);
  auto m = kiln::mean(t, {0, 1});
  EXPECT_EQ(m.shape(), (Shape{4}));
  EXPECT_EQ(m.to_vector<double>(), (F64{10, 11, 12, 13}));
}

TEST(Reduce, AllAxes) {
  auto t = iota({2, 3, 4});
  auto s = kiln::sum(t);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_TRUE(s.shape().empty());
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item<double>(), 276.0);
  EXPECT_EQ(kiln::max(t).item<double>(), 23.0);
  EXPECT_EQ(kiln::max(t).rank(), 0);
  EXPECT_EQ(kiln::min(t).item<double>(), 0.0);
  EXPECT_EQ(kiln::mean(t).item<double>(), 11.5);
  EXPECT_EQ(kiln::mean(t).rank(), 0);
  EXPECT_EQ(kiln::prod(iota({2, 2}) + 1.0).item<double>(), 24.0);
  EXPECT_EQ(kiln::prod(iota({2, 2})).rank(), 0);
  // Listing every axis is the same as listing none.
  auto s2 = kiln::sum(t, {0, 1, 2});
  EXPECT_EQ(s2.rank(), 0);
  EXPECT_EQ(s2.item<double>(), 276.0);
  // A 1-D tensor reduced over its only axis is 0-d.
  auto v = kiln::sum(iota({5}), {0});
  EXPECT_EQ(v.rank(), 0);
  EXPECT_EQ(v.item<double>(), 10.0);
}

TEST(Reduce, MethodForms) {
  auto t = iota({2, 3});
  EXPECT_EQ(t.sum().item<double>(), 15.0);
  EXPECT_EQ(t.sum({1}).to_vector<double>(), (F64{3, 12}));
  EXPECT_EQ(t.sum({1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(t.mean().item<double>(), 2.5);
  EXPECT_EQ(t.mean({0}).to_vector<double>(), (F64{1.5, 2.5, 3.5}));
  EXPECT_EQ(t.max().item<double>(), 5.0);
  EXPECT_EQ(t.max({0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(t.max({0}, true).to_vector<double>(), (F64{3, 4, 5}));
  EXPECT_EQ(t.min().item<double>(), 0.0);
  EXPECT_EQ(t.min({1}).to_vector<double>(), (F64{0, 3}));
}

TEST(Reduce, NegativeAxes) {
  auto t = iota({2, 3, 4});
  EXPECT_EQ(kiln::sum(t, {-1}).shape(), (Shape{2, 3}));
  EXPECT_EQ(kiln::sum(t, {-1}).to_vector<double>(), kiln::sum(t, {2}).to_vector<double>());
  EXPECT_EQ(kiln::sum(t, {-3}).to_vector<double>(), kiln::sum(t, {0}).to_vector<double>());
  EXPECT_EQ(kiln::max(t, {-2}).to_vector<double>(), kiln::max(t, {1}).to_vector<double>());
  EXPECT_EQ(kiln::mean(t, {0, -1}).to_vector<double>(), kiln::mean(t, {0, 2}).to_vector<double>());
  EXPECT_EQ(kiln::argmax(t, -1).to_vector<std::int64_t>(),
            kiln::argmax(t, 2).to_vector<std::int64_t>());
  EXPECT_EQ(kiln::sum(t, {-1}).to_vector<double>(), (F64{6, 22, 38, 54, 70, 86}));
}

TEST(Reduce, KeepDims) {
  auto t = iota({2, 3, 4});
  auto r = kiln::sum(t, {1}, true);
  EXPECT_EQ(r.shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(r.to_vector<double>(), kiln::sum(t, {1}).to_vector<double>());
  EXPECT_EQ(kiln::sum(t, {0, 2}, true).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(kiln::sum(t, {0, 2}, true).to_vector<double>(), (F64{60, 92, 124}));
  EXPECT_EQ(kiln::max(t, {-1}, true).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(kiln::min(t, {0}, true).shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(kiln::prod(t, {2}, true).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(kiln::mean(t, {1}, true).shape(), (Shape{2, 1, 4}));
  // Reducing all axes with keepdims keeps every dimension at size 1.
  auto all = kiln::sum(t, {}, true);
  EXPECT_EQ(all.shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(all.item<double>(), 276.0);
  // A keepdims result broadcasts back against its input.
  auto centered = t - kiln::mean(t, {2}, true);
  EXPECT_EQ(centered.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(kiln::sum(centered).item<double>(), 0.0);
}

TEST(Reduce, MatchesReferenceOverAxes) {
  const Shape s{3, 2, 4, 2};
  auto t = kiln::uniform(s, 99, DType::f64);
  const auto v = t.to_vector<double>();
  for (int a = 0; a < 4; ++a) {
    SCOPED_TRACE("axis " + std::to_string(a));
    const auto sref = reduce_ref(v, s, {a}, 0.0, std::plus<double>());
    const auto got = kiln::sum(t, {a}).to_vector<double>();
    ASSERT_EQ(got.size(), sref.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], sref[i], 1e-12);
    const auto mref =
        reduce_ref(v, s, {a}, -1.0, [](double x, double y) { return std::max(x, y); });
    EXPECT_EQ(kiln::max(t, {a}).to_vector<double>(), mref);
    const auto nref = reduce_ref(v, s, {a}, 2.0, [](double x, double y) { return std::min(x, y); });
    EXPECT_EQ(kiln::min(t, {a}).to_vector<double>(), nref);
  }
  const auto sref = reduce_ref(v, s, {1, 3}, 0.0, std::plus<double>());
  const auto got = kiln::sum(t, {1, 3}).to_vector<double>();
  ASSERT_EQ(got.size(), sref.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], sref[i], 1e-12);
}

// ============================================ types ============================================

TEST(Reduce, TypesAreKept) {
  for (DType dt : {DType::i32, DType::i64, DType::f32, DType::f64}) {
    SCOPED_TRACE(kiln::dtype_name(dt));
    auto t = kiln::convert(iota({2, 3}), dt);
    ASSERT_EQ(t.dtype(), dt);
    EXPECT_EQ(kiln::sum(t, {0}).dtype(), dt);
    EXPECT_EQ(kiln::sum(t).dtype(), dt);
    EXPECT_EQ(kiln::prod(t, {1}).dtype(), dt);
    EXPECT_EQ(kiln::min(t, {0}).dtype(), dt);
    EXPECT_EQ(kiln::max(t).dtype(), dt);
    EXPECT_EQ(kiln::argmax(t, 0).dtype(), DType::i64);
    EXPECT_EQ(kiln::argmin(t, 1).dtype(), DType::i64);
    EXPECT_EQ(kiln::argmax(t).dtype(), DType::i64);
    EXPECT_EQ(kiln::argmin(t).dtype(), DType::i64);
    EXPECT_EQ(kiln::sum(t, {1}).to_vector<double>(), (F64{3, 12}));
  }
}

TEST(Reduce, MeanIsFloatValued) {
  // The mean of integers is in the default float type (f32, exact for these values).
  auto ti = i32({1, 2, 3, 4}, {2, 2});
  auto m = kiln::mean(ti);
  EXPECT_EQ(m.dtype(), kiln::default_dtype());
  EXPECT_EQ(m.item<double>(), 2.5);
  auto m0 = kiln::mean(ti, {0});
  EXPECT_EQ(m0.dtype(), kiln::default_dtype());
  EXPECT_EQ(m0.to_vector<double>(), (F64{2, 3}));
  auto m1 = kiln::mean(ti, {1});
  EXPECT_EQ(m1.to_vector<double>(), (F64{1.5, 3.5}));
  auto ml = kiln::mean(Tensor::from(I64{1, 2}));
  EXPECT_EQ(ml.dtype(), kiln::default_dtype());
  EXPECT_EQ(ml.item<double>(), 1.5);
  auto mf = kiln::mean(Tensor::from(std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(mf.dtype(), DType::f32);
  EXPECT_FLOAT_EQ(mf.item<float>(), 2.5f);
  auto md = kiln::mean(Tensor::from(F64{0.5, 1.0}));
  EXPECT_EQ(md.dtype(), DType::f64);
  EXPECT_EQ(md.item<double>(), 0.75);
}

TEST(Reduce, IntegerSumIsExact) {
  // i64 sums beyond 2^53 must not go through double.
  const std::int64_t big = (std::int64_t{1} << 60) + 1;
  auto t = Tensor::from(I64{big, 2, 3});
  EXPECT_EQ(kiln::sum(t).item<std::int64_t>(), big + 5);
  EXPECT_EQ(kiln::max(t).item<std::int64_t>(), big);
}

// ============================================ argmax / argmin ==================================

TEST(Reduce, ArgmaxArgmin) {
  auto t = i32({1, 3, 3, 2, 2, 0}, {2, 3});
  auto am1 = kiln::argmax(t, 1);
  EXPECT_EQ(am1.dtype(), DType::i64);
  EXPECT_EQ(am1.shape(), (Shape{2}));
  EXPECT_EQ(am1.to_vector<std::int64_t>(), (I64{1, 0}));
  EXPECT_EQ(kiln::argmin(t, 1).to_vector<std::int64_t>(), (I64{0, 2}));
  EXPECT_EQ(kiln::argmax(t, 0).to_vector<std::int64_t>(), (I64{1, 0, 0}));
  EXPECT_EQ(kiln::argmin(t, 0).to_vector<std::int64_t>(), (I64{0, 1, 1}));
  EXPECT_EQ(kiln::argmax(t, -1).to_vector<std::int64_t>(), (I64{1, 0}));
  EXPECT_EQ(kiln::argmin(t, -2).to_vector<std::int64_t>(), (I64{0, 1, 1}));
}

TEST(Reduce, ArgTiesChooseFirst) {
  auto t = Tensor::from(F64{5, 5, 5, 1, 1, 7, 7, 1, 9, 2, 3, 2}, {3, 4});
  EXPECT_EQ(kiln::argmax(t, 1).to_vector<std::int64_t>(), (I64{0, 1, 0}));
  EXPECT_EQ(kiln::argmin(t, 1).to_vector<std::int64_t>(), (I64{3, 0, 1}));
  EXPECT_EQ(kiln::argmax(t).item<std::int64_t>(), 8);
  EXPECT_EQ(kiln::argmin(t).item<std::int64_t>(), 3);
  auto c = Tensor::from(F64{2, 2, 2, 2}, {2, 2});
  EXPECT_EQ(kiln::argmax(c, 0).to_vector<std::int64_t>(), (I64{0, 0}));
  EXPECT_EQ(kiln::argmin(c, 0).to_vector<std::int64_t>(), (I64{0, 0}));
  EXPECT_EQ(kiln::argmax(c).item<std::int64_t>(), 0);
  EXPECT_EQ(kiln::argmin(c).item<std::int64_t>(), 0);
}

TEST(Reduce, ArgKeepDims) {
  auto t = i32({1, 3, 3, 2, 2, 0}, {2, 3});
  auto r = kiln::argmax(t, 1, true);
  EXPECT_EQ(r.shape(), (Shape{2, 1}));
  EXPECT_EQ(r.to_vector<std::int64_t>(), (I64{1, 0}));
  auto r0 = kiln::argmin(t, 0, true);
  EXPECT_EQ(r0.shape(), (Shape{1, 3}));
  EXPECT_EQ(r0.to_vector<std::int64_t>(), (I64{0, 1, 1}));
}

TEST(Reduce, ArgFlattened) {
  auto t = i32({1, 3, 3, 2, 2, 0}, {2, 3});
  auto am = kiln::argmax(t);
  EXPECT_EQ(am.dtype(), DType::i64);
  EXPECT_EQ(am.rank(), 0);
  EXPECT_EQ(am.item<std::int64_t>(), 1);
  EXPECT_EQ(kiln::argmin(t).item<std::int64_t>(), 5);
  auto t3 = iota({2, 3, 4});
  EXPECT_EQ(kiln::argmax(t3).item<std::int64_t>(), 23);
  EXPECT_EQ(kiln::argmin(t3).item<std::int64_t>(), 0);
  EXPECT_EQ(kiln::argmin(-t3).item<std::int64_t>(), 23);
  EXPECT_EQ(kiln::argmax(kiln::scalar(3.0)).item<std::int64_t>(), 0);
}

TEST(Reduce, ArgWithNaN) {
  // NaN counts as both the maximum and the minimum.
  auto t = Tensor::from(F64{1, kNaN, 5, kNaN});
  EXPECT_EQ(kiln::argmax(t, 0).item<std::int64_t>(), 1);
  EXPECT_EQ(kiln::argmin(t, 0).item<std::int64_t>(), 1);
  EXPECT_EQ(kiln::argmax(t).item<std::int64_t>(), 1);
}

TEST(Reduce, ArgOnMatchesReference) {
  auto t = kiln::uniform({5, 7}, 1234, DType::f64);
  const auto v = t.to_vector<double>();
  const auto am = kiln::argmax(t, 1).to_vector<std::int64_t>();
  const auto an = kiln::argmin(t, 0).to_vector<std::int64_t>();
  ASSERT_EQ(am.size(), 5u);
  ASSERT_EQ(an.size(), 7u);
  for (int i = 0; i < 5; ++i) {
    auto row = v.begin() + i * 7;
    EXPECT_EQ(am[i], std::max_element(row, row + 7) - row);
  }
  for (int j = 0; j < 7; ++j) {
    std::int64_t best = 0;
    for (int i = 1; i < 5; ++i)
      if (v[i * 7 + j] < v[best * 7 + j]) best = i;
    EXPECT_EQ(an[j], best);
  }
}

// ============================================ empty and errors =================================

TEST(Reduce, EmptyDimension) {
  auto e = Tensor::from(F64{}, {0, 3});
  auto s0 = kiln::sum(e, {0});
  EXPECT_EQ(s0.shape(), (Shape{3}));
  EXPECT_EQ(s0.to_vector<double>(), (F64{0, 0, 0}));
  EXPECT_EQ(kiln::sum(e).item<double>(), 0.0);
  EXPECT_EQ(kiln::prod(e, {0}).to_vector<double>(), (F64{1, 1, 1}));
  EXPECT_EQ(kiln::prod(e).item<double>(), 1.0);
  const auto m0 = kiln::mean(e, {0}).to_vector<double>();
  ASSERT_EQ(m0.size(), 3u);
  for (double x : m0) EXPECT_TRUE(std::isnan(x));
  EXPECT_TRUE(std::isnan(kiln::mean(e).item<double>()));
  // Reducing the non-empty dimension gives an empty result and is no error.
  auto s1 = kiln::sum(e, {1});
  EXPECT_EQ(s1.shape(), (Shape{0}));
  EXPECT_TRUE(s1.to_vector<double>().empty());
  auto mn1 = kiln::min(e, {1});
  EXPECT_EQ(mn1.shape(), (Shape{0}));
  EXPECT_TRUE(mn1.to_vector<double>().empty());
  // Integer types.
  auto ei = Tensor::from(I32{}, {0});
  EXPECT_EQ(kiln::sum(ei).item<std::int32_t>(), 0);
  EXPECT_EQ(kiln::prod(ei).item<std::int32_t>(), 1);
  EXPECT_EQ(kiln::sum(ei).dtype(), DType::i32);
  EXPECT_TRUE(std::isnan(kiln::mean(ei).item<double>()));
}

TEST(Reduce, EmptyDimensionMinMaxArgThrow) {
  auto e = Tensor::from(F64{}, {0, 3});
  EXPECT_THROW({ kiln::min(e, {0}).eval(); }, kiln::Error);
  EXPECT_THROW({ kiln::max(e, {0}).eval(); }, kiln::Error);
  EXPECT_THROW({ kiln::min(e).eval(); }, kiln::Error);
  EXPECT_THROW({ kiln::max(e).eval(); }, kiln::Error);
  EXPECT_THROW({ kiln::argmax(e, 0).eval(); }, kiln::Error);
  EXPECT_THROW({ kiln::argmin(e, 0).eval(); }, kiln::Error);
  EXPECT_THROW({ kiln::argmax(e).eval(); }, kiln::Error);
  EXPECT_THROW({ kiln::argmin(e).eval(); }, kiln::Error);
}

// An empty tensor whose other dimensions multiply to far more than memory holds: every
// reduction over a non-empty axis gives an empty result without touching (or tabulating) the
// positions the other dimensions would have.
TEST(Reduce, EmptyTensorWithHugeOtherDimensions) {
  const std::int64_t huge = std::int64_t{1} << 40;
  auto e = Tensor::from(F64{}, {huge, 1 << 20, 0, 2});
  const Shape kept{huge, 1 << 20, 0};
  const std::pair<Tensor, Shape> cases[] = {
      {kiln::sum(e, {3}), kept},       {kiln::prod(e, {3}), kept},
      {kiln::mean(e, {3}), kept},      {kiln::min(e, {3}), kept},
      {kiln::max(e, {-1}), kept},      {kiln::argmax(e, 3), kept},
      {kiln::sum(e, {0, 3}), {1 << 20, 0}}, {kiln::min(e, {1}), {huge, 0, 2}}};
  for (const auto& [r, shape] : cases) {
    SCOPED_TRACE(r.op_name());
    EXPECT_EQ(r.shape(), shape);
    EXPECT_TRUE(r.to_vector<double>().empty());
  }
}

// A slice with an empty middle dimension that no neighbour merges with (the CPU executor once
// divided by it to locate the no values an output reduces, and the process died of SIGFPE).
TEST(Reduce, EmptySliceOfAWiderTensor) {
  const Tensor x = iota({2, 4, 4, 4});
  const Tensor empty = kiln::slice(x, {0, 0, 1, 0}, {2, 3, 1, 2});
  ASSERT_EQ(empty.shape(), (Shape{2, 3, 0, 2}));
  EXPECT_EQ(kiln::sum(empty).item<double>(), 0);
  EXPECT_EQ(kiln::prod(empty).item<double>(), 1);
  EXPECT_EQ(kiln::sum(kiln::convert(empty, DType::f32)).item<double>(), 0);
  EXPECT_EQ(kiln::sum(kiln::exp(empty), {1, 2, 3}).to_vector<double>(), (F64{0, 0}));
}

TEST(Reduce, AxisOutOfRange) {
  auto t = iota({2, 3});
  EXPECT_EQ(code_of([&] { kiln::sum(t, {2}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::sum(t, {-3}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::prod(t, {5}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::min(t, {0, 2}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::max(t, {-7}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::mean(t, {2}, true); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::argmax(t, 2); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::argmin(t, -3); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { t.sum({3}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([] { kiln::sum(kiln::scalar(1.0), {0}); }), ErrorCode::illegal_dimension);
}

TEST(Reduce, ZeroDimInput) {
  auto s = kiln::scalar(4.5);
  EXPECT_EQ(kiln::sum(s).rank(), 0);
  EXPECT_EQ(kiln::sum(s).item<double>(), 4.5);
  EXPECT_EQ(kiln::max(s).item<double>(), 4.5);
  EXPECT_EQ(kiln::mean(s).item<double>(), 4.5);
}

// ============================================ matmul ===========================================

// Nested-loop matmul with NumPy batch broadcasting (batch dimensions aligned at the right).
F64 matmul_ref(const F64& a, const Shape& as, const F64& b, const Shape& bs, Shape& out_shape) {
  const std::int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const std::size_t rank = std::max(ab.size(), bb.size());
  Shape ob(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i + ab.size() >= rank ? ab[i + ab.size() - rank] : 1;
    const std::int64_t db = i + bb.size() >= rank ? bb[i + bb.size() - rank] : 1;
    ob[i] = std::max(da, db);
  }
  out_shape = ob;
  out_shape.push_back(m);
  out_shape.push_back(n);
  const std::int64_t batches = numel_of(ob);
  F64 out(static_cast<std::size_t>(batches * m * n), 0.0);
  for (std::int64_t bi = 0; bi < batches; ++bi) {
    // Batch offsets of a and b (size-1 and missing dimensions index 0).
    std::int64_t rem = bi, oa = 0, ob_off = 0, stride_a = 1, stride_b = 1;
    for (std::size_t d = rank; d-- > 0;) {
      const std::int64_t idx = rem % ob[d];
      rem /= ob[d];
      if (d + ab.size() >= rank) {
        const std::int64_t sz = ab[d + ab.size() - rank];
        if (sz != 1) oa += idx * stride_a;
        stride_a *= sz;
      }
      if (d + bb.size() >= rank) {
        const std::int64_t sz = bb[d + bb.size() - rank];
        if (sz != 1) ob_off += idx * stride_b;
        stride_b *= sz;
      }
    }
    const double* pa = a.data() + oa * m * k;
    const double* pb = b.data() + ob_off * k * n;
    double* po = out.data() + bi * m * n;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::int64_t l = 0; l < k; ++l) acc += pa[i * k + l] * pb[l * n + j];
        po[i * n + j] = acc;
      }
  }
  return out;
}

TEST(Matmul, ByHand) {
  // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
  auto a = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = f64({7, 8, 9, 10, 11, 12}, {3, 2});
  auto r = kiln::matmul(a, b);
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_EQ(r.to_vector<double>(), (F64{58, 64, 139, 154}));
  auto r2 = kiln::matmul(b, a);
  EXPECT_EQ(r2.shape(), (Shape{3, 3}));
  EXPECT_EQ(r2.to_vector<double>(), (F64{39, 54, 69, 49, 68, 87, 59, 82, 105}));
}

TEST(Matmul, Integer) {
  auto a = i32({1, 2, 3, 4}, {2, 2});
  auto b = i32({5, 6, 7, 8}, {2, 2});
  auto r = kiln::matmul(a, b);
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_vector<std::int32_t>(), (I32{19, 22, 43, 50}));
  auto a64 = Tensor::from(I64{1, -2, 3, 4, 5, -6}, {2, 3});
  auto b64 = Tensor::from(I64{1, 0, 0, 1, 1, 1}, {3, 2});
  auto r64 = kiln::matmul(a64, b64);
  EXPECT_EQ(r64.dtype(), DType::i64);
  EXPECT_EQ(r64.to_vector<std::int64_t>(), (I64{4, 1, -2, -1}));
}

TEST(Matmul, MixedTypesPromote) {
  auto ai = i32({1, 2, 3, 4}, {2, 2});
  auto bf = Tensor::from(std::vector<float>{0.5f, 0, 0, 0.5f}, {2, 2});
  auto r = kiln::matmul(ai, bf);
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0.5f, 1, 1.5f, 2}));
  auto bd = f64({1, 0, 0, 1}, {2, 2});
  EXPECT_EQ(kiln::matmul(bf, bd).dtype(), DType::f64);
  EXPECT_EQ(kiln::matmul(ai, Tensor::from(I64{1, 0, 0, 1}, {2, 2})).dtype(), DType::i64);
  EXPECT_EQ(kiln::matmul(ai, bd).to_vector<double>(), (F64{1, 2, 3, 4}));
}

TEST(Matmul, BatchBroadcasting) {
  {
    const Shape as{2, 2, 3}, bs{3, 4};
    auto a = iota(as), b = iota(bs) - 5.0;
    auto r = kiln::matmul(a, b);
    EXPECT_EQ(r.shape(), (Shape{2, 2, 4}));
    Shape os;
    const auto want = matmul_ref(a.to_vector<double>(), as, b.to_vector<double>(), bs, os);
    EXPECT_EQ(os, (Shape{2, 2, 4}));
    EXPECT_EQ(r.to_vector<double>(), want);
  }
  {
    const Shape as{2, 1, 2, 3}, bs{3, 3, 2};
    auto a = iota(as), b = iota(bs) * 0.5;
    auto r = kiln::matmul(a, b);
    EXPECT_EQ(r.shape(), (Shape{2, 3, 2, 2}));
    Shape os;
    const auto want = matmul_ref(a.to_vector<double>(), as, b.to_vector<double>(), bs, os);
    EXPECT_EQ(os, (Shape{2, 3, 2, 2}));
    EXPECT_EQ(r.to_vector<double>(), want);
  }
  {
    // Batch on the right operand only.
    const Shape as{2, 3}, bs{4, 3, 2};
    auto a = iota(as), b = iota(bs);
    auto r = kiln::matmul(a, b);
    EXPECT_EQ(r.shape(), (Shape{4, 2, 2}));
    Shape os;
    EXPECT_EQ(r.to_vector<double>(),
              matmul_ref(a.to_vector<double>(), as, b.to_vector<double>(), bs, os));
  }
}

TEST(Matmul, RandomShapesMatchNestedLoops) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 1}, {1, 1}},       {{3, 5}, {5, 2}},       {{4, 1}, {1, 7}},
      {{7, 9}, {9, 3}},       {{2, 3, 4}, {4, 5}},    {{2, 1, 3, 4}, {3, 4, 2}},
      {{1, 6, 6}, {2, 6, 1}}, {{3, 2, 5}, {3, 5, 4}}, {{17, 33}, {33, 9}},
  };
  std::uint64_t seed = 1;
  for (const auto& [as, bs] : cases) {
    SCOPED_TRACE(kiln::shape_to_string(as) + " x " + kiln::shape_to_string(bs));
    auto a = kiln::uniform(as, seed++, DType::f64);
    auto b = kiln::uniform(bs, seed++, DType::f64);
    Shape os;
    const auto want = matmul_ref(a.to_vector<double>(), as, b.to_vector<double>(), bs, os);
    auto r = kiln::matmul(a, b);
    ASSERT_EQ(r.shape(), os);
    const auto got = r.to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
    // f32 with a looser tolerance.
    auto a32 = kiln::uniform(as, seed, DType::f32);
    auto b32 = kiln::uniform(bs, seed + 1, DType::f32);
    const auto want32 = matmul_ref(a32.to_vector<double>(), as, b32.to_vector<double>(), bs, os);
    auto r32 = kiln::matmul(a32, b32);
    EXPECT_EQ(r32.dtype(), DType::f32);
    const auto got32 = r32.to_vector<double>();
    ASSERT_EQ(got32.size(), want32.size());
    for (std::size_t i = 0; i < got32.size(); ++i) EXPECT_NEAR(got32[i], want32[i], 1e-4) << i;
  }
}

TEST(Matmul, TransposedOperand) {
  const Shape as{4, 3}, bs{4, 2};
  auto a = kiln::uniform(as, 5, DType::f64);
  auto b = kiln::uniform(bs, 6, DType::f64);
  auto r = kiln::matmul(a.t(), b);  // [3,4] x [4,2]
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  const auto got = r.to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double acc = 0;
      for (int l = 0; l < 4; ++l) acc += av[l * 3 + i] * bv[l * 2 + j];
      EXPECT_NEAR(got[i * 2 + j], acc, 1e-12);
    }
}

TEST(Matmul, EmptyDimensions) {
  auto r = kiln::matmul(Tensor::from(F64{}, {2, 0}), Tensor::from(F64{}, {0, 3}));
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_vector<double>(), (F64(6, 0.0)));
  auto r2 = kiln::matmul(Tensor::from(F64{}, {0, 3}), iota({3, 2}));
  EXPECT_EQ(r2.shape(), (Shape{0, 2}));
  EXPECT_TRUE(r2.to_vector<double>().empty());
}

TEST(Matmul, RankBelowTwoThrows) {
  EXPECT_EQ(code_of([] {
              kiln::matmul(iota({3}), iota({3, 2}));
            }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] {
              kiln::matmul(iota({2, 3}), iota({3}));
            }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::matmul(kiln::scalar(1.0), kiln::scalar(2.0)); }),
            ErrorCode::illegal_dimensionality);
}

TEST(Matmul, InnerMismatchThrows) {
  try {
    kiln::matmul(iota({2, 3}), iota({4, 5}));
    FAIL() << "matmul of [2,3] and [4,5] did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::incompatible_shapes);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4,5]"), std::string::npos) << msg;
  }
}

TEST(Matmul, BatchMismatchThrows) {
  EXPECT_EQ(code_of([] {
              kiln::matmul(iota({2, 2, 3}), iota({3, 3, 4}));
            }),
            ErrorCode::incompatible_shapes);
}

// ============================================ dot ==============================================

TEST(Dot, Vectors) {
  auto r = kiln::dot(f64({1, 2, 3}, {3}), f64({4, 5, 6}, {3}));
  EXPECT_EQ(r.rank(), 0);
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_EQ(r.item<double>(), 32.0);
  auto ri = kiln::dot(i32({1, -2}, {2}), i32({3, 4}, {2}));
  EXPECT_EQ(ri.rank(), 0);
  EXPECT_EQ(ri.item<std::int32_t>(), -5);
  auto rm = kiln::dot(i32({1, 2}, {2}), f64({0.5, 0.25}, {2}));
  EXPECT_EQ(rm.dtype(), DType::f64);
  EXPECT_EQ(rm.item<double>(), 1.0);
  auto a = kiln::uniform({50}, 3, DType::f64), b = kiln::uniform({50}, 4, DType::f64);
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  double acc = 0;
  for (int i = 0; i < 50; ++i) acc += av[i] * bv[i];
  EXPECT_NEAR(kiln::dot(a, b).item<double>(), acc, 1e-12);
}

TEST(Dot, Errors) {
  EXPECT_EQ(code_of([] {
              kiln::dot(iota({2, 2}), iota({2, 2}));
            }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::dot(iota({2}), iota({2, 1})); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::dot(kiln::scalar(1.0), kiln::scalar(1.0)); }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::dot(iota({3}), iota({4})); }), ErrorCode::incompatible_shapes);
}

}  // namespace
