// The composite ops of kiln/composite_ops.hpp with hand-computed values (libtorch's results for
// the same inputs), edge cases (NaN, infinities, empty tensors, negative axes) and errors. Their
// gradients are checked in test_gradcheck.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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
using Vd = std::vector<double>;
using Vi = std::vector<std::int64_t>;

using kiln_test::code_of;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(Vd v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor f32(Vd v, Shape s) { return kiln::convert(Tensor::from(v, std::move(s)), DType::f32); }
Tensor i64(Vi v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor i32(std::vector<std::int32_t> v, Shape s) { return Tensor::from(v, std::move(s)); }
Vd vals(const Tensor& t) { return t.to_vector<double>(); }
Vi ints(const Tensor& t) { return t.to_vector<std::int64_t>(); }

Vd iota(std::int64_t n, double first = 0.0) {
  Vd v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = first + double(i);
  return v;
}

// Element by element, NaN equal to NaN, within `tol` (relative to max(1, |want|)).
::testing::AssertionResult same(const Vd& got, const Vd& want, double tol = 1e-12) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    const bool equal_inf = std::isinf(want[i]) && got[i] == want[i];
    const bool close = std::isfinite(want[i]) &&
                       std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i]));
    if (!both_nan && !equal_inf && !close)
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// [[0,1,2,3],[4,5,6,7],[8,9,10,11]]
Tensor m34() { return f64(iota(12), {3, 4}); }

// ---- stack / split / chunk / unbind ---------------------------------------------------------------

TEST(CompositeShape, StackNewDimension) {
  const Tensor a = f64({1, 2, 3}, {3}), b = f64({4, 5, 6}, {3});
  const Tensor s0 = kiln::stack({a, b});
  EXPECT_EQ(s0.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(s0), (Vd{1, 2, 3, 4, 5, 6}));
  const Tensor s1 = kiln::stack({a, b}, 1);
  EXPECT_EQ(s1.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(s1), (Vd{1, 4, 2, 5, 3, 6}));
  const Tensor sneg = kiln::stack({a, b}, -1);  // -1 is the new last dimension
  EXPECT_EQ(sneg.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(sneg), (Vd{1, 4, 2, 5, 3, 6}));
  const Tensor one = kiln::stack({a});
  EXPECT_EQ(one.shape(), (Shape{1, 3}));
  const Tensor scalars = kiln::stack({kiln::scalar(1.0), kiln::scalar(2.0)});
  EXPECT_EQ(scalars.shape(), (Shape{2}));
  EXPECT_EQ(vals(scalars), (Vd{1, 2}));
}

TEST(CompositeShape, StackErrors) {
  EXPECT_EQ(code_of([] { kiln::stack({}); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::stack({f64({1, 2}, {2}), f64({1, 2, 3}, {3})}); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([] { kiln::stack({f64({1, 2}, {2})}, 2); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([] { kiln::stack({Tensor()}); }), ErrorCode::invalid_select);
}

TEST(CompositeShape, SplitBySize) {
  const Tensor x = f64(iota(5), {5});
  const auto parts = kiln::split(x, 2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].op_name(), "slice");  // a view, not a copy (asked before evaluation)
  EXPECT_EQ(vals(parts[0]), (Vd{0, 1}));
  EXPECT_EQ(vals(parts[1]), (Vd{2, 3}));
  EXPECT_EQ(vals(parts[2]), (Vd{4}));
  const auto cols = kiln::split(m34(), 3, -1);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(vals(cols[1]), (Vd{3, 7, 11}));
  const auto whole = kiln::split(x, 7);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(vals(whole[0]), iota(5));
  // An empty dimension: one empty piece, also with a split size of 0.
  const Tensor empty = kiln::zeros({0, 2});
  EXPECT_EQ(kiln::split(empty, 0).size(), 1u);
  EXPECT_EQ(kiln::split(empty, 3).size(), 1u);
  EXPECT_EQ(kiln::split(empty, 3)[0].shape(), (Shape{0, 2}));
}

TEST(CompositeShape, SplitWithSizes) {
  const auto parts = kiln::split(m34(), std::vector<std::int64_t>{1, 0, 3}, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(vals(parts[0]), (Vd{0, 4, 8}));
  EXPECT_EQ(parts[1].shape(), (Shape{3, 0}));
  EXPECT_EQ(vals(parts[2]), (Vd{1, 2, 3, 5, 6, 7, 9, 10, 11}));
  const auto rows = kiln::split(m34(), {2, 1});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(vals(rows[1]), (Vd{8, 9, 10, 11}));
}

TEST(CompositeShape, SplitErrors) {
  const Tensor x = m34();
  EXPECT_EQ(code_of([&] { kiln::split(x, 0); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::split(x, -1); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::split(x, {1, 1}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::split(x, {2, 2}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::split(x, {4, -1}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::split(x, 1, 2); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([] { kiln::split(kiln::scalar(1.0), 1); }),
            ErrorCode::illegal_dimensionality);
}

TEST(CompositeShape, Chunk) {
  const auto five = kiln::chunk(f64(iota(5), {5}), 3);  // ceil(5 / 3) = 2: sizes 2, 2, 1
  ASSERT_EQ(five.size(), 3u);
  EXPECT_EQ(vals(five[2]), (Vd{4}));
  const auto six = kiln::chunk(f64(iota(6), {6}), 4);  // ceil(6 / 4) = 2: only 3 chunks
  ASSERT_EQ(six.size(), 3u);
  EXPECT_EQ(vals(six[1]), (Vd{2, 3}));
  const auto more = kiln::chunk(f64(iota(2), {2}), 5);
  ASSERT_EQ(more.size(), 2u);
  const auto cols = kiln::chunk(m34(), 2, -1);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(vals(cols[1]), (Vd{2, 3, 6, 7, 10, 11}));
  const auto empty = kiln::chunk(kiln::zeros({0}), 3);
  ASSERT_EQ(empty.size(), 3u);
  EXPECT_EQ(empty[0].shape(), (Shape{0}));
  EXPECT_EQ(code_of([] { kiln::chunk(m34(), 0); }), ErrorCode::invalid_select);
  // More empty pieces than memory can list.
  EXPECT_EQ(code_of([] { kiln::chunk(kiln::zeros({0}), std::int64_t{1} << 62); }),
            ErrorCode::out_of_memory);
  EXPECT_EQ(code_of([] { kiln::chunk(kiln::scalar(1.0), 2); }),
            ErrorCode::illegal_dimensionality);
}

TEST(CompositeShape, Unbind) {
  const auto rows = kiln::unbind(m34());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].shape(), (Shape{4}));
  EXPECT_EQ(vals(rows[1]), (Vd{4, 5, 6, 7}));
  const auto cols = kiln::unbind(m34(), -1);
  ASSERT_EQ(cols.size(), 4u);
  EXPECT_EQ(vals(cols[3]), (Vd{3, 7, 11}));
  EXPECT_TRUE(kiln::unbind(kiln::zeros({0, 3})).empty());
  EXPECT_EQ(code_of([] { kiln::unbind(kiln::scalar(1.0)); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::unbind(m34(), 2); }), ErrorCode::illegal_dimension);
}

// ---- tril / triu / roll / flip / diag / outer -------------------------------------------------------

TEST(CompositeShape, TrilTriu) {
  const Tensor x = f64(iota(12, 1), {3, 4});  // [[1,2,3,4],[5,6,7,8],[9,10,11,12]]
  EXPECT_EQ(vals(kiln::tril(x)), (Vd{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  EXPECT_EQ(vals(kiln::tril(x, 1)), (Vd{1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12}));
  EXPECT_EQ(vals(kiln::tril(x, -1)), (Vd{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  EXPECT_EQ(vals(kiln::triu(x)), (Vd{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(vals(kiln::triu(x, 2)), (Vd{0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}));
  EXPECT_EQ(vals(kiln::triu(x, -1)), (Vd{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12}));
  EXPECT_EQ(vals(kiln::triu(x, 10)), Vd(12, 0.0));
  // Batched, integer and NaN-holding inputs: the type is kept, NaN outside is dropped.
  const Tensor batch = i32({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  const Tensor lower = kiln::tril(batch);
  EXPECT_EQ(lower.dtype(), DType::i32);
  EXPECT_EQ(ints(lower), (Vi{1, 0, 3, 4, 5, 0, 7, 8}));
  EXPECT_TRUE(same(vals(kiln::triu(f64({1, kNaN, kNaN, 2}, {2, 2}))), {1, kNaN, 0, 2}));
  EXPECT_EQ(kiln::tril(kiln::zeros({0, 3})).shape(), (Shape{0, 3}));
  EXPECT_EQ(code_of([] { kiln::tril(f64({1, 2}, {2})); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::triu(kiln::scalar(1.0)); }), ErrorCode::illegal_dimensionality);
}

TEST(CompositeShape, Roll) {
  const Tensor x = f64(iota(5), {5});
  EXPECT_EQ(vals(kiln::roll(x, {2}, {0})), (Vd{3, 4, 0, 1, 2}));
  EXPECT_EQ(vals(kiln::roll(x, {-1}, {-1})), (Vd{1, 2, 3, 4, 0}));
  EXPECT_EQ(vals(kiln::roll(x, {12}, {0})), (Vd{3, 4, 0, 1, 2}));  // 12 mod 5 = 2
  EXPECT_EQ(vals(kiln::roll(x, {5}, {0})), iota(5));
  // Flattened when no dims are given: [[0,1,2,3],[4,...]] rolled by 1.
  const Tensor flat = kiln::roll(m34(), {1});
  EXPECT_EQ(flat.shape(), (Shape{3, 4}));
  EXPECT_EQ(vals(flat), (Vd{11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  // Two dims at once.
  EXPECT_EQ(vals(kiln::roll(m34(), {1, -1}, {0, 1})),
            (Vd{9, 10, 11, 8, 1, 2, 3, 0, 5, 6, 7, 4}));
  EXPECT_EQ(kiln::roll(kiln::zeros({0, 2}), {3}, {0}).shape(), (Shape{0, 2}));
  EXPECT_EQ(code_of([&] { kiln::roll(x, {1, 2}, {0}); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { kiln::roll(x, {1, 2}); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { kiln::roll(x, {1}, {1}); }), ErrorCode::illegal_dimension);
}

TEST(CompositeShape, Flip) {
  const Tensor f0 = kiln::flip(m34(), {0});
  EXPECT_EQ(f0.op_name(), "slice");  // a view
  EXPECT_EQ(vals(f0), (Vd{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3}));
  EXPECT_EQ(vals(kiln::flip(m34(), {-1})), (Vd{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}));
  EXPECT_EQ(vals(kiln::flip(m34(), {0, 1})), (Vd{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(vals(kiln::flip(m34(), {})), iota(12));
  EXPECT_EQ(kiln::flip(kiln::zeros({0, 3}), {0, 1}).shape(), (Shape{0, 3}));
  EXPECT_EQ(code_of([] { kiln::flip(m34(), {0, -2}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([] { kiln::flip(m34(), {2}); }), ErrorCode::illegal_dimension);
}

TEST(CompositeShape, DiagOfVector) {
  const Tensor v = f64({1, 2, 3}, {3});
  const Tensor d = kiln::diag(v);
  EXPECT_EQ(d.shape(), (Shape{3, 3}));
  EXPECT_EQ(vals(d), (Vd{1, 0, 0, 0, 2, 0, 0, 0, 3}));
  const Tensor up = kiln::diag(v, 1);
  EXPECT_EQ(up.shape(), (Shape{4, 4}));
  EXPECT_EQ(vals(up), (Vd{0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0}));
  const Tensor down = kiln::diag(f64({1, 2}, {2}), -2);
  EXPECT_EQ(down.shape(), (Shape{4, 4}));
  EXPECT_EQ(vals(down), (Vd{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0}));
  const Tensor one = kiln::diag(i64({7}, {1}), -1);
  EXPECT_EQ(one.dtype(), DType::i64);
  EXPECT_EQ(ints(one), (Vi{0, 0, 7, 0}));
  EXPECT_EQ(kiln::diag(kiln::zeros({0})).shape(), (Shape{0, 0}));
  EXPECT_EQ(vals(kiln::diag(kiln::zeros({0}), 2)), Vd(4, 0.0));
}

TEST(CompositeShape, DiagOfMatrix) {
  EXPECT_EQ(vals(kiln::diag(m34())), (Vd{0, 5, 10}));
  EXPECT_EQ(vals(kiln::diag(m34(), 1)), (Vd{1, 6, 11}));
  EXPECT_EQ(vals(kiln::diag(m34(), 2)), (Vd{2, 7}));
  EXPECT_EQ(vals(kiln::diag(m34(), 3)), (Vd{3}));
  EXPECT_EQ(kiln::diag(m34(), 4).shape(), (Shape{0}));
  EXPECT_EQ(vals(kiln::diag(m34(), -1)), (Vd{4, 9}));
  EXPECT_EQ(vals(kiln::diag(m34(), -2)), (Vd{8}));
  EXPECT_EQ(kiln::diag(m34(), -3).shape(), (Shape{0}));
  // Of a transposed view (columns become rows): the diagonal of [[0,4,8],[1,5,9],...].
  EXPECT_EQ(vals(kiln::diag(kiln::permute(m34(), {1, 0}), -1)), (Vd{1, 6, 11}));
  EXPECT_EQ(kiln::diag(kiln::zeros({0, 3})).shape(), (Shape{0}));
  EXPECT_EQ(code_of([] { kiln::diag(kiln::scalar(1.0)); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::diag(kiln::zeros({2, 2, 2})); }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([] { kiln::diag(f64({1}, {1}), std::int64_t{1} << 40); }),
            ErrorCode::illegal_dimension);
}

TEST(CompositeShape, Outer) {
  const Tensor o = kiln::outer(f64({1, 2}, {2}), i32({3, 4, 5}, {3}));
  EXPECT_EQ(o.shape(), (Shape{2, 3}));
  EXPECT_EQ(o.dtype(), DType::f64);
  EXPECT_EQ(vals(o), (Vd{3, 4, 5, 6, 8, 10}));
  EXPECT_EQ(kiln::outer(kiln::zeros({0}), kiln::zeros({2})).shape(), (Shape{0, 2}));
  EXPECT_EQ(code_of([] { kiln::outer(m34(), f64({1}, {1})); }),
            ErrorCode::illegal_dimensionality);
}

// ---- elementwise ----------------------------------------------------------------------------------

TEST(CompositeMath, MaskedFill) {
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor r = kiln::masked_fill(x, i32({1, 0, 1}, {3}), -1.5);  // the row mask broadcasts
  EXPECT_EQ(r.dtype(), DType::f32);                                    // x's type, not f64
  EXPECT_EQ(vals(r), (Vd{-1.5, 2, -1.5, -1.5, 5, -1.5}));
  const Tensor col = kiln::masked_fill(x, f64({0, kNaN}, {2, 1}), 0);  // NaN is true
  EXPECT_EQ(vals(col), (Vd{1, 2, 3, 0, 0, 0}));
  const Tensor ints_filled = kiln::masked_fill(i64({1, 2}, {2}), i32({0, 1}, {2}), 2.7);
  EXPECT_EQ(ints_filled.dtype(), DType::i64);
  EXPECT_EQ(ints(ints_filled), (Vi{1, 2}));  // 2.7 in i64 is 2
  EXPECT_TRUE(same(vals(kiln::masked_fill(x, kiln::scalar(1), kNaN)), Vd(6, kNaN)));
  // The mask must broadcast to x itself, never x to the mask, nor inversely.
  EXPECT_EQ(code_of([&] { kiln::masked_fill(x, i32({1, 0}, {2}), 0); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { kiln::masked_fill(x, kiln::ones({2, 2, 3}, DType::i32), 0); }),
            ErrorCode::incompatible_shapes);
}

TEST(CompositeMath, ClampScalars) {
  const Tensor x = f64({-2, -0.5, 0, 0.5, 2, kNaN, kInf, -kInf}, {8});
  EXPECT_TRUE(same(vals(kiln::clamp(x, -1.0, 1.0)), {-1, -0.5, 0, 0.5, 1, kNaN, 1, -1}));
  EXPECT_TRUE(same(vals(kiln::clamp(x, 0.0)), {0, 0, 0, 0.5, 2, kNaN, kInf, 0}));
  EXPECT_TRUE(same(vals(kiln::clamp(x, std::nullopt, 0.0)), {-2, -0.5, 0, 0, 0, kNaN, 0, -kInf}));
  EXPECT_TRUE(same(vals(kiln::clip(x, -1.0, 1.0)), {-1, -0.5, 0, 0.5, 1, kNaN, 1, -1}));
  // min > max: everything is max.
  EXPECT_TRUE(same(vals(kiln::clamp(x, 1.0, -1.0)), {-1, -1, -1, -1, -1, kNaN, -1, -1}));
  // The bounds take x's type: f32 stays f32, and 1.7 becomes 1 for an i32 tensor.
  EXPECT_EQ(kiln::clamp(f32({1, 2}, {2}), 0.0, 1.5).dtype(), DType::f32);
  const Tensor c = kiln::clamp(i32({-3, 0, 3}, {3}), -1.2, 1.7);
  EXPECT_EQ(c.dtype(), DType::i32);
  EXPECT_EQ(ints(c), (Vi{-1, 0, 1}));
  EXPECT_EQ(code_of([&] { kiln::clamp(x, std::nullopt, std::nullopt); }),
            ErrorCode::invalid_select);
}

TEST(CompositeMath, ClampTensors) {
  const Tensor x = f64({-2, 0, 2, 5, 1, -1}, {2, 3});
  const Tensor lo = f64({-1, 1, 0}, {3}), hi = f64({3, 1}, {2, 1});
  EXPECT_EQ(vals(kiln::clamp(x, lo, hi)), (Vd{-1, 1, 2, 1, 1, 0}));
  EXPECT_EQ(vals(kiln::clamp(x, lo, Tensor())), (Vd{-1, 1, 2, 5, 1, 0}));
  EXPECT_EQ(vals(kiln::clip(x, Tensor(), hi)), (Vd{-2, 0, 2, 1, 1, -1}));
  // The result takes the broadcast shape of all three.
  EXPECT_EQ(kiln::clamp(f64({0.5}, {1}), lo, hi).shape(), (Shape{2, 3}));
  EXPECT_EQ(code_of([&] { kiln::clamp(x, Tensor(), Tensor()); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::clamp(x, f64({1, 2}, {2}), Tensor()); }),
            ErrorCode::incompatible_shapes);
}

TEST(CompositeMath, ClampGradientPassesOnTheClosedInterval) {
  const Tensor x = f64({-2, -1, 0, 1, 2}, {5});
  x.watch();
  kiln::GradientContext context;
  const Tensor g = kiln::gradient(kiln::sum(kiln::clamp(x, -1.0, 1.0)), x);
  EXPECT_EQ(vals(g), (Vd{0, 1, 1, 1, 0}));
}

TEST(CompositeMath, NanInfFinite) {
  const Tensor x = f64({1, kNaN, kInf, -kInf, 0, -3}, {6});
  EXPECT_EQ(ints(kiln::isnan(x)), (Vi{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(ints(kiln::isinf(x)), (Vi{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(ints(kiln::isfinite(x)), (Vi{1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(kiln::isnan(x).dtype(), DType::boolean);
  EXPECT_EQ(kiln::isinf(x).dtype(), DType::boolean);
  EXPECT_EQ(kiln::isfinite(x).dtype(), DType::boolean);
  const Tensor xf = f32({kNaN, kInf, 2}, {3});
  EXPECT_EQ(ints(kiln::isinf(xf)), (Vi{0, 1, 0}));
  EXPECT_EQ(ints(kiln::isfinite(xf)), (Vi{0, 0, 1}));
  const Tensor n = i64({std::numeric_limits<std::int64_t>::max(), 0}, {2});
  EXPECT_EQ(ints(kiln::isnan(n)), (Vi{0, 0}));
  EXPECT_EQ(ints(kiln::isinf(n)), (Vi{0, 0}));
  EXPECT_EQ(ints(kiln::isfinite(n)), (Vi{1, 1}));
  EXPECT_EQ(kiln::isfinite(n).dtype(), DType::boolean);
  EXPECT_EQ(kiln::isinf(kiln::zeros({0})).shape(), (Shape{0}));
}

TEST(CompositeMath, NanToNum) {
  const Tensor x = f64({1, kNaN, kInf, -kInf}, {4});
  const double big = std::numeric_limits<double>::max();
  EXPECT_EQ(vals(kiln::nan_to_num(x)), (Vd{1, 0, big, -big}));
  EXPECT_EQ(vals(kiln::nan_to_num(x, 2.0, 3.0, -4.0)), (Vd{1, 2, 3, -4}));
  EXPECT_EQ(vals(kiln::nan_to_num(x, std::nullopt, 9.0)), (Vd{1, 0, 9, -big}));
  const Tensor xf = f32({kNaN, kInf, -kInf, 0.5f}, {4});
  const Tensor rf = kiln::nan_to_num(xf);
  EXPECT_EQ(rf.dtype(), DType::f32);
  const float bigf = std::numeric_limits<float>::max();
  EXPECT_EQ(rf.to_vector<float>(), (std::vector<float>{0, bigf, -bigf, 0.5f}));
  const Tensor n = i32({1, -2}, {2});
  EXPECT_EQ(ints(kiln::nan_to_num(n, 5.0)), (Vi{1, -2}));
  EXPECT_EQ(kiln::nan_to_num(n).dtype(), DType::i32);
}

TEST(CompositeMath, LogicalOps) {
  const Tensor a = f64({0, 1, kNaN, -2}, {4}), b = i32({0, 0, 3, 1}, {4});
  EXPECT_EQ(ints(kiln::logical_and(a, b)), (Vi{0, 0, 1, 1}));
  EXPECT_EQ(ints(kiln::logical_or(a, b)), (Vi{0, 1, 1, 1}));
  EXPECT_EQ(ints(kiln::logical_xor(a, b)), (Vi{0, 1, 0, 0}));
  EXPECT_EQ(ints(kiln::logical_not(a)), (Vi{1, 0, 0, 0}));
  EXPECT_EQ(kiln::logical_and(a, b).dtype(), DType::boolean);
  EXPECT_EQ(kiln::logical_not(b).dtype(), DType::boolean);
  // Broadcasting at the right: [2,1] with [3].
  const Tensor r = kiln::logical_or(i32({0, 1}, {2, 1}), i32({0, 2, 0}, {3}));
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(ints(r), (Vi{0, 1, 0, 1, 1, 1}));
  // [2] against [2,3] only fits aligned at the left, which these ops never do.
  EXPECT_EQ(code_of([] { kiln::logical_and(i32({1, 0}, {2}), kiln::ones({2, 3})); }),
            ErrorCode::incompatible_shapes);
}

TEST(CompositeMath, AnyAll) {
  const Tensor x = f64({0, 0, 1, 0, kNaN, 2}, {2, 3});
  EXPECT_EQ(kiln::any(x).item<int>(), 1);
  EXPECT_EQ(kiln::all(x).item<int>(), 0);
  EXPECT_EQ(kiln::any(x).dtype(), DType::boolean);
  EXPECT_EQ(kiln::any(x).shape(), (Shape{}));
  EXPECT_EQ(ints(kiln::any(x, 0)), (Vi{0, 1, 1}));
  EXPECT_EQ(ints(kiln::all(x, 0)), (Vi{0, 0, 1}));
  EXPECT_EQ(ints(kiln::any(x, -1)), (Vi{1, 1}));
  EXPECT_EQ(ints(kiln::all(x, 1)), (Vi{0, 0}));
  const Tensor kept = kiln::all(x, 1, true);
  EXPECT_EQ(kept.shape(), (Shape{2, 1}));
  EXPECT_EQ(kiln::all(kiln::ones({2, 2}, DType::i64)).item<int>(), 1);
  EXPECT_EQ(kiln::any(kiln::zeros({3})).item<int>(), 0);
  // Empty: any of nothing is false, all of nothing is true.
  EXPECT_EQ(kiln::any(kiln::zeros({0})).item<int>(), 0);
  EXPECT_EQ(kiln::all(kiln::zeros({0})).item<int>(), 1);
  EXPECT_EQ(ints(kiln::all(kiln::zeros({2, 0}), 1)), (Vi{1, 1}));
  EXPECT_EQ(code_of([&] { kiln::any(x, 2); }), ErrorCode::illegal_dimension);
}

// ---- reductions ----------------------------------------------------------------------------------

TEST(CompositeMath, VarStd) {
  const Tensor x = f64({1, 2, 3, 4, 6, 8}, {2, 3});
  // All: mean 4, squared deviations 9+4+1+0+4+16 = 34.
  EXPECT_DOUBLE_EQ(kiln::var(x).item<double>(), 34.0 / 5);
  EXPECT_DOUBLE_EQ(kiln::var(x, {}, 0).item<double>(), 34.0 / 6);
  EXPECT_DOUBLE_EQ(kiln::std(x).item<double>(), std::sqrt(34.0 / 5));
  // Rows: [1,2,3] var 1, [4,6,8] var 4.
  EXPECT_EQ(vals(kiln::var(x, {1})), (Vd{1, 4}));
  EXPECT_EQ(vals(kiln::std(x, {-1})), (Vd{1, 2}));
  // Columns with correction 0 and keepdim: (1,4) -> 2.25, (2,6) -> 4, (3,8) -> 6.25.
  const Tensor cols = kiln::var(x, {0}, 0, true);
  EXPECT_EQ(cols.shape(), (Shape{1, 3}));
  EXPECT_EQ(vals(cols), (Vd{2.25, 4, 6.25}));
  EXPECT_DOUBLE_EQ(kiln::var(x, {0, 1}, 2).item<double>(), 34.0 / 4);
  // Integers are computed in the default float type; f32 stays f32.
  const Tensor vi = kiln::var(i32({1, 2, 3, 4}, {4}));
  EXPECT_EQ(vi.dtype(), kiln::default_dtype());
  EXPECT_FLOAT_EQ(vi.item<float>(), 5.0f / 3);
  EXPECT_EQ(kiln::std(f32({1, 3}, {2})).dtype(), DType::f32);
  EXPECT_FLOAT_EQ(kiln::std(f32({1, 3}, {2})).item<float>(), std::sqrt(2.0f));
  // A single element with correction 1 divides 0 by 0: NaN, as libtorch; NaN propagates.
  EXPECT_TRUE(std::isnan(kiln::var(f64({5}, {1})).item<double>()));
  EXPECT_TRUE(std::isnan(kiln::var(f64({1, kNaN}, {2})).item<double>()));
  EXPECT_TRUE(std::isnan(kiln::std(kiln::zeros({0}, DType::f64)).item<double>()));
  EXPECT_EQ(code_of([&] { kiln::var(x, {0, -2}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::std(x, {2}); }), ErrorCode::illegal_dimension);
}

TEST(CompositeMath, Norm) {
  const Tensor x = f64({3, -4, 0, 1, -2, 2}, {2, 3});
  EXPECT_DOUBLE_EQ(kiln::norm(x).item<double>(), std::sqrt(34.0));
  EXPECT_DOUBLE_EQ(kiln::norm(x, 1).item<double>(), 12.0);
  EXPECT_DOUBLE_EQ(kiln::norm(x, INFINITY).item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(kiln::norm(x, -INFINITY).item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(kiln::norm(x, 0).item<double>(), 5.0);
  EXPECT_NEAR(kiln::norm(x, 3).item<double>(), std::cbrt(27.0 + 64 + 1 + 8 + 8), 1e-12);
  EXPECT_DOUBLE_EQ(kiln::norm(x, "fro").item<double>(), std::sqrt(34.0));
  EXPECT_EQ(vals(kiln::norm(x, 2, {1})), (Vd{5, 3}));
  EXPECT_EQ(vals(kiln::norm(x, "fro", {-1})), (Vd{5, 3}));
  EXPECT_EQ(vals(kiln::norm(x, 1, {0}, true)), (Vd{4, 6, 2}));
  EXPECT_EQ(kiln::norm(x, 1, {0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(vals(kiln::norm(x, INFINITY, {0})), (Vd{3, 4, 2}));
  EXPECT_EQ(kiln::norm(i32({3, 4}, {2})).dtype(), kiln::default_dtype());
  EXPECT_DOUBLE_EQ(kiln::norm(i32({3, 4}, {2})).item<double>(), 5.0);
  EXPECT_EQ(kiln::norm(f32({3, 4}, {2})).dtype(), DType::f32);
  EXPECT_TRUE(std::isnan(kiln::norm(f64({1, kNaN}, {2})).item<double>()));
  EXPECT_EQ(kiln::norm(f64({1, -kInf}, {2})).item<double>(), kInf);
  EXPECT_DOUBLE_EQ(kiln::norm(kiln::zeros({0}, DType::f64)).item<double>(), 0.0);
  EXPECT_EQ(code_of([&] { kiln::norm(x, "nuc"); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::norm(x, -1); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::norm(x, NAN); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::norm(x, 2, {3}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([] { kiln::norm(kiln::zeros({0}), INFINITY); }),
            ErrorCode::incompatible_shapes);
}

TEST(CompositeMath, NormGradientAtZeroIsZero) {
  // As libtorch: a zero vector has gradient 0 rather than 0 / 0.
  const Tensor x = f64({0, 0, 3, 4}, {2, 2});
  x.watch();
  kiln::GradientContext context;
  EXPECT_TRUE(same(vals(kiln::gradient(kiln::sum(kiln::norm(x, 2, {1})), x)), {0, 0, 0.6, 0.8}));
  EXPECT_TRUE(same(vals(kiln::gradient(kiln::sum(kiln::norm(x, 3, {1})), x)),
                   {0, 0, 9 / std::pow(91.0, 2.0 / 3), 16 / std::pow(91.0, 2.0 / 3)}));
}

TEST(CompositeMath, LogsumexpOverSeveralDims) {
  const Tensor x = f64(iota(6), {1, 2, 3});
  const double all = std::log(std::exp(0.0) + std::exp(1.0) + std::exp(2.0) + std::exp(3.0) +
                              std::exp(4.0) + std::exp(5.0));
  EXPECT_NEAR(kiln::logsumexp(x, {0, 1, 2}).item<double>(), all, 1e-12);
  // No dims: every dimension. (A bare {} would choose activations.hpp's single-axis form.)
  EXPECT_NEAR(kiln::logsumexp(x, std::vector<int>{}).item<double>(), all, 1e-12);
  const Tensor pairs = kiln::logsumexp(x, {0, -2});  // over [1,2] for each of the 3 columns
  EXPECT_EQ(pairs.shape(), (Shape{3}));
  EXPECT_TRUE(same(vals(pairs), {std::log(std::exp(0.0) + std::exp(3.0)),
                                 std::log(std::exp(1.0) + std::exp(4.0)),
                                 std::log(std::exp(2.0) + std::exp(5.0))}));
  EXPECT_EQ(kiln::logsumexp(x, {1, 2}, true).shape(), (Shape{1, 1, 1}));
  // Large values do not overflow; rows of -inf give -inf, a +inf gives +inf, NaN stays.
  const Tensor big = f64({1000, 1000, -kInf, -kInf, kInf, 1, kNaN, 1}, {4, 2});
  EXPECT_TRUE(same(vals(kiln::logsumexp(big, {1})),
                   {1000 + std::log(2.0), -kInf, kInf, kNaN}));
  const Tensor f = kiln::logsumexp(f32({100, 100}, {2}), {0});
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_NEAR(f.item<double>(), 100 + std::log(2.0), 1e-4);
  EXPECT_EQ(kiln::logsumexp(kiln::zeros({2, 0}, DType::f64), {1}).to_vector<double>(),
            (Vd{-kInf, -kInf}));
  EXPECT_EQ(code_of([&] { kiln::logsumexp(x, {1, 1}); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::logsumexp(x, {3}); }), ErrorCode::illegal_dimension);
}

TEST(CompositeMath, LogsumexpGradientIsSoftmax) {
  const Tensor x = f64({1, 2, 3, -kInf}, {2, 2});
  x.watch();
  kiln::GradientContext context;
  const Tensor g = kiln::gradient(kiln::logsumexp(x, {0, 1}), x);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_TRUE(same(vals(g), {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 0}));
}

// ---- creation ------------------------------------------------------------------------------------

TEST(CompositeCreation, Linspace) {
  const Tensor l = kiln::linspace(0, 1, 5);
  EXPECT_EQ(l.dtype(), DType::f32);
  EXPECT_EQ(l.shape(), (Shape{5}));
  EXPECT_EQ(l.to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(vals(kiln::linspace(-1, 2, 4, DType::f64)), (Vd{-1, 0, 1, 2}));
  EXPECT_EQ(vals(kiln::linspace(3, 1, 3, DType::f64)), (Vd{3, 2, 1}));
  // The end point is exact even where start + i * step would round.
  EXPECT_EQ(kiln::linspace(0.1, 0.7, 7, DType::f64).to_vector<double>().back(), 0.7);
  EXPECT_EQ(vals(kiln::linspace(2, 5, 1, DType::f64)), (Vd{2}));
  EXPECT_EQ(kiln::linspace(2, 5, 0).shape(), (Shape{0}));
  const Tensor li = kiln::linspace(0, 10, 4, DType::i64);  // 0, 3.33, 6.67, 10 truncated
  EXPECT_EQ(ints(li), (Vi{0, 3, 6, 10}));
  EXPECT_EQ(code_of([] { kiln::linspace(0, 1, -1); }), ErrorCode::illegal_dimension);
}

TEST(CompositeCreation, Eye) {
  const Tensor e = kiln::eye(3);
  EXPECT_EQ(e.dtype(), DType::f32);
  EXPECT_EQ(vals(e), (Vd{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  const Tensor r = kiln::eye(2, 3, DType::i32);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(ints(r), (Vi{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(vals(kiln::eye(3, 1)), (Vd{1, 0, 0}));
  EXPECT_EQ(kiln::eye(0).shape(), (Shape{0, 0}));
  EXPECT_EQ(code_of([] { kiln::eye(-1); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([] { kiln::eye(2, -3); }), ErrorCode::illegal_dimension);
}

TEST(CompositeCreation, Randint) {
  const Tensor r = kiln::randint(-3, 4, {1000}, 42);
  EXPECT_EQ(r.dtype(), DType::i64);
  const Vi v = ints(r);
  std::vector<int> seen(7, 0);
  for (std::int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    ++seen[static_cast<std::size_t>(x + 3)];
  }
  for (int c : seen) EXPECT_GT(c, 80);  // ~143 each
  EXPECT_EQ(ints(kiln::randint(-3, 4, {1000}, 42)), v);  // the seed fixes the values
  EXPECT_NE(ints(kiln::randint(-3, 4, {1000}, 43)), v);
  const Tensor f = kiln::randint(0, 2, {2, 3}, 1, DType::f32);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  for (double x : vals(f)) EXPECT_TRUE(x == 0 || x == 1);
  EXPECT_EQ(ints(kiln::randint(5, 6, {4})), (Vi{5, 5, 5, 5}));
  const Tensor wide = kiln::randint(std::numeric_limits<std::int64_t>::min(),
                                    std::numeric_limits<std::int64_t>::min() + 3, {8}, 3);
  for (std::int64_t x : ints(wide)) EXPECT_LT(x, std::numeric_limits<std::int64_t>::min() + 3);
  kiln::manual_seed(9);
  const Vi a = ints(kiln::randint(0, 100, {16}));
  kiln::manual_seed(9);
  EXPECT_EQ(ints(kiln::randint(0, 100, {16})), a);
  EXPECT_EQ(code_of([] { kiln::randint(3, 3, {2}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([] { kiln::randint(0, 1, {-2}); }), ErrorCode::illegal_dimension);
}

TEST(CompositeCreation, Bernoulli) {
  const Tensor p = f32({0, 1, 0.5f, 0.5f}, {2, 2});
  const Tensor b = kiln::bernoulli(kiln::broadcast_to(kiln::reshape(p, {1, 2, 2}), {500, 2, 2}),
                                   5);
  EXPECT_EQ(b.dtype(), DType::f32);
  const Tensor rate = kiln::mean(b, {0});
  const Vd r = vals(rate);
  EXPECT_EQ(r[0], 0.0);
  EXPECT_EQ(r[1], 1.0);
  EXPECT_NEAR(r[2], 0.5, 0.1);
  EXPECT_NEAR(r[3], 0.5, 0.1);
  for (double x : vals(b)) EXPECT_TRUE(x == 0 || x == 1);
  EXPECT_EQ(vals(kiln::bernoulli(f64({0.3, 0.9}, {2}), 8)),
            vals(kiln::bernoulli(f64({0.3, 0.9}, {2}), 8)));
  EXPECT_EQ(kiln::bernoulli(f64({0.3}, {1})).dtype(), DType::f64);

  const Tensor s = kiln::bernoulli({4000}, 0.25, 3);
  EXPECT_EQ(s.dtype(), DType::f32);
  EXPECT_NEAR(kiln::mean(s).item<double>(), 0.25, 0.03);
  EXPECT_EQ(kiln::sum(kiln::bernoulli({10}, 0.0)).item<double>(), 0.0);
  EXPECT_EQ(kiln::sum(kiln::bernoulli({10}, 1.0)).item<double>(), 10.0);
  EXPECT_EQ(code_of([] { kiln::bernoulli({2}, 1.5); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([] { kiln::bernoulli({2}, NAN); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([] { kiln::bernoulli(i32({1}, {1})); }), ErrorCode::wrong_type);
}

}  // namespace

namespace {

// ---- einsum ----------------------------------------------------------------------------------------

TEST(CompositeEinsum, MatrixProducts) {
  const Tensor a = f64(iota(6), {2, 3}), b = f64(iota(12), {3, 4});
  const Vd ab = vals(kiln::matmul(a, b));  // [[20,23,26,29],[56,68,80,92]]
  EXPECT_EQ(ab, (Vd{20, 23, 26, 29, 56, 68, 80, 92}));
  EXPECT_EQ(vals(kiln::einsum("ij,jk->ik", {a, b})), ab);
  EXPECT_EQ(vals(kiln::einsum("ij,jk", {a, b})), ab);  // implicit output "ik"
  EXPECT_EQ(vals(kiln::einsum(" i j , j k -> i k ", {a, b})), ab);
  // (AB)^T written as an output order.
  const Tensor t = kiln::einsum("ij,jk->ki", {a, b});
  EXPECT_EQ(t.shape(), (Shape{4, 2}));
  EXPECT_EQ(vals(t), (Vd{20, 56, 23, 68, 26, 80, 29, 92}));
  // The implicit output is in alphabetical order: "kj,ji" gives "ik", i.e. (A B)^T.
  const Tensor imp = kiln::einsum("kj,ji", {a, b});
  EXPECT_EQ(imp.shape(), (Shape{4, 2}));
  EXPECT_EQ(vals(imp), (Vd{20, 56, 23, 68, 26, 80, 29, 92}));
}

TEST(CompositeEinsum, BatchOuterDotAndSums) {
  const Tensor a = f64(iota(12), {2, 2, 3}), b = f64(iota(12, 1), {2, 3, 2});
  EXPECT_EQ(vals(kiln::einsum("bij,bjk->bik", {a, b})), vals(kiln::matmul(a, b)));
  // Batch index kept, contraction and a free index summed: "bij,bjk->b".
  EXPECT_DOUBLE_EQ(kiln::einsum("bij,bjk->b", {a, b}).at<double>({1}),
                   kiln::sum(kiln::matmul(a, b), {1, 2}).at<double>({1}));
  const Tensor u = f64({1, 2, 3}, {3}), v = f64({4, 5}, {2});
  EXPECT_EQ(vals(kiln::einsum("i,j->ij", {u, v})), (Vd{4, 5, 8, 10, 12, 15}));
  EXPECT_EQ(kiln::einsum("i,i->", {u, u}).item<double>(), 14.0);
  EXPECT_EQ(kiln::einsum("i,i", {u, u}).shape(), (Shape{}));
  EXPECT_EQ(vals(kiln::einsum("i,i->i", {u, u})), (Vd{1, 4, 9}));
  // An index of one operand missing elsewhere and from the output is summed first.
  EXPECT_EQ(vals(kiln::einsum("ij,k->k", {f64(iota(6), {2, 3}), v})), (Vd{60, 75}));
  // Empty dimensions: an empty contraction gives zeros, an empty free index an empty result.
  const Tensor e = kiln::einsum("ij,jk->ik", {kiln::zeros({2, 0}, DType::f64),
                                             kiln::zeros({0, 3}, DType::f64)});
  EXPECT_EQ(e.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(e), Vd(6, 0.0));
  EXPECT_EQ(kiln::einsum("ij,jk->ik", {kiln::zeros({0, 2}), kiln::zeros({2, 3})}).shape(),
            (Shape{0, 3}));
  EXPECT_EQ(kiln::einsum("ii->i", {kiln::zeros({0, 0})}).shape(), (Shape{0}));
  EXPECT_EQ(kiln::einsum("ij,jk->ik", {kiln::convert(f64(iota(6), {2, 3}), DType::i64),
                                      kiln::convert(f64(iota(12), {3, 4}), DType::i64)})
                .dtype(),
            DType::i64);
}

TEST(CompositeEinsum, SizeOneBroadcasts) {
  // j has size 1 in the first operand: each row of b's column sums times a[i, 0].
  const Tensor a = f64({2, 3}, {2, 1}), b = f64(iota(6), {3, 2});  // b's column sums 6, 9
  const Tensor r = kiln::einsum("ij,jk->ik", {a, b});
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(r), (Vd{12, 18, 18, 27}));
  // A batch index of size 1 in one operand.
  const Tensor x = f64({1, 2}, {1, 2}), y = f64({1, 10, 100, 1000, 2, 3}, {3, 2});
  EXPECT_EQ(vals(kiln::einsum("bi,bi->b", {x, y})), (Vd{21, 2100, 8}));
}

TEST(CompositeEinsum, Ellipsis) {
  const Tensor a = f64(iota(12), {2, 2, 3}), b = f64(iota(12, 1), {2, 3, 2});
  const Vd ab = vals(kiln::matmul(a, b));
  EXPECT_EQ(vals(kiln::einsum("...ij,...jk->...ik", {a, b})), ab);
  EXPECT_EQ(vals(kiln::einsum("...ij,...jk", {a, b})), ab);  // implicit: "..." first, then ik
  // The "..." parts broadcast at the right: [2,2,3] against [3,2] (no batch dimension).
  const Tensor m = f64(iota(6, 1), {3, 2});
  EXPECT_EQ(vals(kiln::einsum("...ij,jk->...ik", {a, m})), vals(kiln::matmul(a, m)));
  EXPECT_EQ(vals(kiln::einsum("...ij,...jk->...ik", {a, m})), vals(kiln::matmul(a, m)));
  // One operand: a batch of traces, transposes of the last two dimensions, "..." summed away.
  EXPECT_EQ(vals(kiln::einsum("...ii->...", {f64(iota(8), {2, 2, 2})})), (Vd{3, 11}));
  EXPECT_EQ(vals(kiln::einsum("...ij->...ji", {a})), vals(kiln::permute(a, {0, 2, 1})));
  EXPECT_EQ(vals(kiln::einsum("i...->i", {a})), (Vd{15, 51}));
  EXPECT_EQ(vals(kiln::einsum("...", {a})), iota(12));  // covers everything
  EXPECT_EQ(vals(kiln::einsum("...i->...", {f64(iota(6), {2, 3})})), (Vd{3, 12}));
  EXPECT_EQ(vals(kiln::einsum("...i", {f64(iota(6), {2, 3})})), iota(6));
}

TEST(CompositeEinsum, OneOperand) {
  const Tensor m = f64(iota(9), {3, 3});
  EXPECT_EQ(vals(kiln::einsum("ii->i", {m})), (Vd{0, 4, 8}));
  EXPECT_EQ(kiln::einsum("ii", {m}).item<double>(), 12.0);  // trace
  EXPECT_EQ(kiln::einsum("ii->", {m}).item<double>(), 12.0);
  EXPECT_EQ(vals(kiln::einsum("ij->ji", {m})), (Vd{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  EXPECT_EQ(vals(kiln::einsum("ji", {m})), (Vd{0, 3, 6, 1, 4, 7, 2, 5, 8}));  // implicit "ij"
  EXPECT_EQ(vals(kiln::einsum("ij->j", {m})), (Vd{9, 12, 15}));
  EXPECT_EQ(kiln::einsum("ij->", {m}).item<double>(), 36.0);
  EXPECT_EQ(vals(kiln::einsum("ij", {m})), iota(9));
  // A batch of diagonals, and infinities off the diagonal do not turn into NaN.
  const Tensor batch = f64({1, kInf, -kInf, 2, 3, 0, 0, 4}, {2, 2, 2});
  EXPECT_EQ(vals(kiln::einsum("bii->bi", {batch})), (Vd{1, 2, 3, 4}));
  EXPECT_EQ(vals(kiln::einsum("iji->j", {f64(iota(8), {2, 2, 2})})), (Vd{0 + 5, 2 + 7}));
  EXPECT_EQ(kiln::einsum("->", {kiln::scalar(2.5)}).item<double>(), 2.5);
  // With two operands, a repeated index in one of them: trace(A) * sum(v).
  EXPECT_EQ(kiln::einsum("ii,j->", {m, f64({1, 2}, {2})}).item<double>(), 36.0);
}

TEST(CompositeEinsum, Errors) {
  const Tensor a = f64(iota(6), {2, 3}), b = f64(iota(12), {3, 4});
  EXPECT_EQ(code_of([&] { kiln::einsum("ij,jk->ik", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("ij->ik", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("ij->ii", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("ijk->i", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("i1->i", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("ij->i->j", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("....j->j", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("...i...->i", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("..ij->ij", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("...ijk->i", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("...->....", {a}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::einsum("...i,...i->...", {f64(iota(6), {2, 3}),
                                                          f64(iota(9), {3, 3})}); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { kiln::einsum("ij,jk->ik", {a, a}); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { kiln::einsum("ii", {f64({1, 2, 3}, {1, 3})}); }),
            ErrorCode::incompatible_shapes);  // within one operand no broadcasting
  EXPECT_EQ(code_of([&] { kiln::einsum("ii->i", {a}); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { kiln::einsum("i,i,i", {a, a, a}); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { kiln::einsum("", {}); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { kiln::einsum("ij,jk", {a, Tensor()}); }), ErrorCode::invalid_select);
  (void)b;
}

// ---- interpolate -------------------------------------------------------------------------------------

TEST(CompositeInterpolate, Nearest) {
  const Tensor x = f64(iota(6), {1, 1, 2, 3});  // [[0,1,2],[3,4,5]]
  const Tensor up = kiln::interpolate(x, {4, 6}, kiln::InterpolateMode::nearest);
  EXPECT_EQ(up.shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(vals(up), (Vd{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2,  //
                          3, 3, 4, 4, 5, 5, 3, 3, 4, 4, 5, 5}));
  // Down to [1, 2]: rows floor(0 * 2) = 0; columns floor(j * 1.5) = 0, 1.
  EXPECT_EQ(vals(kiln::interpolate(x, {1, 2}, kiln::InterpolateMode::nearest)), (Vd{0, 1}));
  // 3 -> 5 columns: floor(j * 0.6) = 0, 0, 1, 1, 2.
  EXPECT_EQ(vals(kiln::interpolate(x, {1, 5}, kiln::InterpolateMode::nearest)),
            (Vd{0, 0, 1, 1, 2}));
  const Tensor xi = kiln::interpolate(kiln::convert(x, DType::i32), {2, 2},
                                      kiln::InterpolateMode::nearest);
  EXPECT_EQ(xi.dtype(), DType::i32);
  EXPECT_EQ(ints(xi), (Vi{0, 1, 3, 4}));
}

TEST(CompositeInterpolate, Bilinear) {
  const Tensor x = f64({0, 1, 2, 3}, {1, 1, 2, 2});
  // 2 -> 4 without align_corners: source (i + 0.5) / 2 - 0.5 = -0.25 (0), 0.25, 0.75, 1.25
  // (the upper index clamps at 1): weights along each axis 0, 0.25, 0.75, 1.
  const Vd w = {0, 0.25, 0.75, 1};
  Vd want;
  for (double r : w)
    for (double c : w) want.push_back(2 * r + c);
  const Tensor up = kiln::interpolate(x, {4, 4}, kiln::InterpolateMode::bilinear);
  EXPECT_TRUE(same(vals(up), want));
  // align_corners: source i * (2 - 1) / (3 - 1) = 0, 0.5, 1.
  const Tensor ac = kiln::interpolate(x, {3, 3}, kiln::InterpolateMode::bilinear, true);
  EXPECT_TRUE(same(vals(ac), {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3}));
  // Down to one pixel: align_corners takes the corner, otherwise the centre.
  EXPECT_TRUE(
      same(vals(kiln::interpolate(x, {1, 1}, kiln::InterpolateMode::bilinear, true)), {0}));
  EXPECT_TRUE(same(vals(kiln::interpolate(x, {1, 1}, kiln::InterpolateMode::bilinear)), {1.5}));
  // f32 stays f32; batch and channels are independent.
  const Tensor xf = kiln::convert(f64(iota(8), {2, 1, 2, 2}), DType::f32);
  const Tensor yf = kiln::interpolate(xf, {1, 1}, kiln::InterpolateMode::bilinear);
  EXPECT_EQ(yf.dtype(), DType::f32);
  EXPECT_EQ(yf.shape(), (Shape{2, 1, 1, 1}));
  EXPECT_TRUE(same(vals(yf), {1.5, 5.5}, 1e-6));
  EXPECT_TRUE(same(vals(kiln::interpolate(x, {2, 2}, kiln::InterpolateMode::bilinear)),
                   {0, 1, 2, 3}));
}

TEST(CompositeInterpolate, Errors) {
  const Tensor x = f64(iota(4), {1, 1, 2, 2});
  using M = kiln::InterpolateMode;
  EXPECT_EQ(code_of([] { kiln::interpolate(kiln::zeros({2, 2}), {2, 2}, M::nearest); }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { kiln::interpolate(x, {2}, M::nearest); }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { kiln::interpolate(x, {0, 2}, M::bilinear); }),
            ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { kiln::interpolate(x, {3, 3}, M::nearest, true); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::interpolate(kiln::convert(x, DType::i32), {3, 3}, M::bilinear); }),
            ErrorCode::wrong_type);
  EXPECT_EQ(code_of([] { kiln::interpolate(kiln::zeros({1, 1, 0, 2}), {2, 2}, M::nearest); }),
            ErrorCode::incompatible_shapes);
}

// ---- nonzero / masked_select -------------------------------------------------------------------

TEST(CompositeDataDependent, Nonzero) {
  const Tensor x = f64({0, 1.5, 0, kNaN, -2, 0}, {2, 3});
  const Tensor nz = kiln::nonzero(x);
  EXPECT_EQ(nz.dtype(), DType::i64);
  EXPECT_EQ(nz.shape(), (Shape{3, 2}));
  EXPECT_EQ(ints(nz), (Vi{0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(kiln::nonzero(kiln::zeros({2, 2})).shape(), (Shape{0, 2}));
  EXPECT_EQ(kiln::nonzero(kiln::scalar(3)).shape(), (Shape{1, 0}));
  EXPECT_EQ(kiln::nonzero(kiln::scalar(0)).shape(), (Shape{0, 0}));
  // A lazy input is evaluated; integers too large for a double stay non-zero.
  const Tensor big = i64({0, std::numeric_limits<std::int64_t>::min()}, {2}) + kiln::Scalar(0LL);
  EXPECT_EQ(ints(kiln::nonzero(big)), (Vi{1}));
  EXPECT_EQ(ints(kiln::nonzero(f64(iota(3), {3}) - 1.0)), (Vi{0, 2}));
  EXPECT_EQ(code_of([] { kiln::nonzero(Tensor()); }), ErrorCode::invalid_select);
}

TEST(CompositeDataDependent, MaskedSelect) {
  const Tensor x = f64(iota(6), {2, 3});
  EXPECT_EQ(vals(kiln::masked_select(x, i32({1, 0, 0, 0, 1, 1}, {2, 3}))), (Vd{0, 4, 5}));
  // The mask broadcasts ([3] over rows), and so may x ([2,1] against a [2,3] mask).
  EXPECT_EQ(vals(kiln::masked_select(x, i32({0, 1, 1}, {3}))), (Vd{1, 2, 4, 5}));
  EXPECT_EQ(vals(kiln::masked_select(f64({7, 8}, {2, 1}), i32({1, 0, 1, 0, 1, 0}, {2, 3}))),
            (Vd{7, 7, 8}));
  EXPECT_EQ(kiln::masked_select(x, kiln::zeros({2, 3})).shape(), (Shape{0}));
  EXPECT_EQ(kiln::masked_select(kiln::convert(x, DType::i32), kiln::scalar(1)).dtype(),
            DType::i32);
  EXPECT_EQ(code_of([&] { kiln::masked_select(x, i32({1, 0}, {2})); }),
            ErrorCode::incompatible_shapes);
}

TEST(CompositeDataDependent, MaskedSelectGradientReachesX) {
  const Tensor x = f64(iota(6), {2, 3});
  x.watch();
  kiln::GradientContext context;
  const Tensor picked = kiln::masked_select(x * x, i32({0, 1, 1}, {3}));
  const Tensor g = kiln::gradient(kiln::sum(picked), x);
  EXPECT_EQ(vals(g), (Vd{0, 2, 4, 0, 8, 10}));
}

}  // namespace
