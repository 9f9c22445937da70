// Elementwise ops: hand-written values, std:: functions as the definition of the float-valued
// unary ops, the dtype rules of spec decision 1 and the integer edge cases (wrapping, division by
// zero, saturating conversion) that must never be undefined behaviour.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "api/flint_rules.hpp"
#include "graph/op_registry.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::Comparison;
using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;

using kiln_test::code_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int32_t kI32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kI32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();

Tensor f32(std::vector<float> v) { return Tensor::from(v); }
Tensor f64(std::vector<double> v) { return Tensor::from(v); }
Tensor i32(std::vector<std::int32_t> v) { return Tensor::from(v); }
Tensor i64(std::vector<std::int64_t> v) { return Tensor::from(v); }

// |got - want| <= atol + rtol * |want|; NaN matches NaN, infinities match exactly.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                  double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("element " + std::to_string(i));
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "got " << got[i] << ", want NaN";
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]);
    } else {
      EXPECT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i]));
    }
  }
}

void expect_values(const Tensor& t, const std::vector<double>& want, double rtol = 0,
                   double atol = 0) {
  expect_close(t.to_vector<double>(), want, rtol, atol);
}

void expect_i32(const Tensor& t, const std::vector<std::int32_t>& want) {
  EXPECT_EQ(t.dtype(), DType::i32);
  EXPECT_EQ(t.to_vector<std::int32_t>(), want);
}

// A bool result, its values read as i32 0/1.
void expect_bool(const Tensor& t, const std::vector<std::int32_t>& want) {
  EXPECT_EQ(t.dtype(), DType::boolean);
  EXPECT_EQ(t.to_vector<std::int32_t>(), want);
}

void expect_i64(const Tensor& t, const std::vector<std::int64_t>& want) {
  EXPECT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.to_vector<std::int64_t>(), want);
}

void expect_f32(const Tensor& t, const std::vector<float>& want) {
  EXPECT_EQ(t.dtype(), DType::f32);
  auto got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "at " << i;
}

// ============================================ binary ops =======================================

TEST(Binary, AddSubMulDivFloat) {
  auto a = f32({1.5f, -2.0f, 3.25f, 0.0f});
  auto b = f32({0.5f, 4.0f, -1.25f, 2.0f});
  expect_f32(kiln::add(a, b), {2.0f, 2.0f, 2.0f, 2.0f});
  expect_f32(kiln::sub(a, b), {1.0f, -6.0f, 4.5f, -2.0f});
  expect_f32(kiln::mul(a, b), {0.75f, -8.0f, -4.0625f, 0.0f});
  expect_f32(kiln::div(a, b), {3.0f, -0.5f, -2.6f, 0.0f});
}

TEST(Binary, AddSubMulDivF64) {
  auto a = f64({1.0, 2.0, -3.0});
  auto b = f64({3.0, -4.0, 0.5});
  auto r = kiln::div(a, b);
  EXPECT_EQ(r.dtype(), DType::f64);
  expect_values(r, {1.0 / 3.0, -0.5, -6.0}, 1e-15);
  expect_values(kiln::add(a, b), {4.0, -2.0, -2.5});
  expect_values(kiln::sub(a, b), {-2.0, 6.0, -3.5});
  expect_values(kiln::mul(a, b), {3.0, -8.0, -1.5});
}

TEST(Binary, IntegerArithmetic) {
  auto a = i32({7, -3, 10, 0});
  auto b = i32({2, 5, -4, 9});
  expect_i32(kiln::add(a, b), {9, 2, 6, 9});
  expect_i32(kiln::sub(a, b), {5, -8, 14, -9});
  expect_i32(kiln::mul(a, b), {14, -15, -40, 0});
  auto c = i64({7, -3, 10, 0});
  auto d = i64({2, 5, -4, 9});
  expect_i64(kiln::add(c, d), {9, 2, 6, 9});
  expect_i64(kiln::mul(c, d), {14, -15, -40, 0});
  expect_i64(kiln::sub(c, d), {5, -8, 14, -9});
}

TEST(Binary, IntegerDivisionIsTrueDivision) {
  // libtorch's /: integers divide in the default float type.
  expect_f32(i32({-7, 9}) / 2, {-3.5f, 4.5f});
  expect_f32(kiln::div(i64({1}), i64({4})), {0.25f});
}

TEST(Binary, IntegerDivisionTruncatesTowardZero) {
  expect_i32(kiln::div(i32({-7, 7, -7, 7, 6, 1}), i32({2, -2, -2, 2, 3, 2}), "trunc"), {-3, -3, 3, 3, 2, 0});
  expect_i64(kiln::div(i64({-7, 7, -7, 7, 6, 1}), i64({2, -2, -2, 2, 3, 2}), "trunc"), {-3, -3, 3, 3, 2, 0});
  expect_i32(kiln::div(i32({-7, 9}), 2, "trunc"), {-3, 4});
}

TEST(Binary, IntegerDivisionByZeroIsZero) {
  expect_i32(kiln::div(i32({7, -7, 0, kI32Max}), i32({0, 0, 0, 0}), "trunc"), {0, 0, 0, 0});
  expect_i64(kiln::div(i64({7, -7, 0, kI64Min}), i64({0, 0, 0, 0}), "trunc"), {0, 0, 0, 0});
  expect_i32(kiln::div(i32({1, 2, 3}), 0, "trunc"), {0, 0, 0});
  expect_i64(kiln::floor_divide(i64({5}), std::int64_t{0}), {0});
}

TEST(Binary, IntegerDivisionOverflowWraps) {
  // INT_MIN / -1 traps on x86 when done naively; with wrapping arithmetic it is INT_MIN.
  expect_i32(kiln::div(i32({kI32Min}), i32({-1}), "trunc"), {kI32Min});
  expect_i64(kiln::div(i64({kI64Min}), i64({-1}), "trunc"), {kI64Min});
}

TEST(Binary, FloatDivisionByZero) {
  auto r = kiln::div(f32({1.0f, -2.0f, 0.0f}), f32({0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(r.dtype(), DType::f32);
  expect_values(r, {kInf, -kInf, kNaN});
  expect_values(kiln::div(f64({3.0, -3.0, 0.0}), 0.0), {kInf, -kInf, kNaN});
}

TEST(Binary, IntegerOverflowWraps) {
  expect_i32(i32({kI32Max}) + 1, {kI32Min});
  expect_i32(i32({kI32Min}) - 1, {kI32Max});
  expect_i32(i32({65536}) * i32({65536}), {0});
  expect_i32(i32({kI32Max}) * 2, {-2});
  expect_i64(i64({kI64Max}) + std::int64_t{1}, {kI64Min});
  expect_i64(i64({kI64Min}) - std::int64_t{1}, {kI64Max});
  // A scalar is weak: an i64 scalar beside an i32 tensor is i32 and the sum wraps in i32.
  expect_i32(i32({kI32Max}) + std::int64_t{1}, {kI32Min});
}

TEST(Binary, PowFloat) {
  const std::vector<double> x = {2.0, 9.0, 10.0, 2.0, -2.0, 0.0};
  const std::vector<double> y = {0.5, 0.5, -1.0, 10.0, 3.0, 0.0};
  auto r = kiln::pow(f64(x), f64(y));
  EXPECT_EQ(r.dtype(), DType::f64);
  std::vector<double> want;
  for (std::size_t i = 0; i < x.size(); ++i) want.push_back(std::pow(x[i], y[i]));
  expect_values(r, want, 1e-14);
  auto rf = kiln::pow(f32({4.0f, 1.5f}), f32({0.5f, 2.0f}));
  EXPECT_EQ(rf.dtype(), DType::f32);
  expect_values(rf, {2.0, 2.25}, 1e-6);
  // Negative base with a non-integer exponent: NaN as std::pow.
  expect_values(kiln::pow(f64({-8.0}), 0.5), {kNaN});
}

TEST(Binary, PowInteger) {
  expect_i32(kiln::pow(i32({2, 3, -2, -3, 0, 5}), i32({10, 0, 3, 2, 0, 1})),
             {1024, 1, -8, 9, 1, 5});
  // Negative exponents: 0, except base 1 (1) and base -1 (+-1 by parity).
  expect_i32(kiln::pow(i32({2, 1, -1, -1, 5, 0, -2}), i32({-1, -5, -3, -2, -2, -1, -1})),
             {0, 1, -1, 1, 0, 0, 0});
  expect_i64(kiln::pow(i64({2, 10, 1, -1, 3}), i64({40, 18, -7, -7, -1})),
             {std::int64_t{1} << 40, 1000000000000000000LL, 1, -1, 0});
  // Scalar exponent keeps i32 when the scalar is an int.
  expect_i32(kiln::pow(i32({1, 2, 3}), 2), {1, 4, 9});
  // Overflow wraps like repeated multiplication.
  expect_i32(kiln::pow(i32({2, 2}), i32({31, 32})), {kI32Min, 0});
}

TEST(Binary, MinimumMaximum) {
  expect_i32(kiln::minimum(i32({1, 5, -3}), i32({2, 4, -3})), {1, 4, -3});
  expect_i32(kiln::maximum(i32({1, 5, -3}), i32({2, 4, -3})), {2, 5, -3});
  expect_f32(kiln::minimum(f32({1.5f, -2.0f}), f32({1.0f, 3.0f})), {1.0f, -2.0f});
  expect_f32(kiln::maximum(f32({1.5f, -2.0f}), f32({1.0f, 3.0f})), {1.5f, 3.0f});
  // Mixed types promote.
  auto r = kiln::maximum(i32({1, 4}), f64({2.5, -1.0}));
  EXPECT_EQ(r.dtype(), DType::f64);
  expect_values(r, {2.5, 4.0});
}

TEST(Binary, MinimumMaximumPropagateNaN) {
  auto a = f64({1.0, kNaN, 3.0, kNaN});
  auto b = f64({2.0, 2.0, kNaN, kNaN});
  expect_values(kiln::minimum(a, b), {1.0, kNaN, kNaN, kNaN});
  expect_values(kiln::maximum(a, b), {2.0, kNaN, kNaN, kNaN});
  auto af = f32({1.0f, std::nanf(""), 3.0f});
  auto bf = f32({2.0f, 2.0f, std::nanf("")});
  expect_values(kiln::minimum(af, bf), {1.0, kNaN, kNaN});
  expect_values(kiln::maximum(af, bf), {2.0, kNaN, kNaN});
}

TEST(Binary, Comparisons) {
  auto a = f32({1.0f, 2.0f, 3.0f});
  auto b = f32({2.0f, 2.0f, 2.0f});
  expect_bool(kiln::less(a, b), {1, 0, 0});
  expect_bool(kiln::greater(a, b), {0, 0, 1});
  expect_bool(kiln::equal(a, b), {0, 1, 0});
  expect_bool(kiln::less_equal(a, b), {1, 1, 0});
  expect_bool(kiln::greater_equal(a, b), {0, 1, 1});
  expect_bool(kiln::not_equal(a, b), {1, 0, 1});
  auto c = i64({-5, 0, 5});
  auto d = i64({0, 0, 0});
  expect_bool(kiln::less(c, d), {1, 0, 0});
  expect_bool(kiln::greater(c, d), {0, 0, 1});
  expect_bool(kiln::equal(c, d), {0, 1, 0});
  expect_bool(kiln::less_equal(c, d), {1, 1, 0});
  expect_bool(kiln::greater_equal(c, d), {0, 1, 1});
  expect_bool(kiln::not_equal(c, d), {1, 0, 1});
}

TEST(Binary, ComparisonsInPromotedType) {
  // 1 < 1.5 holds in f64 (it would not after truncating 1.5 to an integer).
  expect_bool(kiln::less(i32({1, 2}), 1.5), {1, 0});
  expect_bool(kiln::equal(i32({1, 2}), f64({1.5, 2.0})), {0, 1});
  expect_bool(kiln::greater(i64({3}), 2.5f), {1});
}

TEST(Binary, ComparisonsWithNaN) {
  auto a = f64({kNaN, kNaN, 1.0});
  auto b = f64({kNaN, 1.0, kNaN});
  expect_bool(kiln::equal(a, b), {0, 0, 0});
  expect_bool(kiln::not_equal(a, b), {1, 1, 1});
  expect_bool(kiln::less(a, b), {0, 0, 0});
  expect_bool(kiln::greater(a, b), {0, 0, 0});
  expect_bool(kiln::less_equal(a, b), {0, 0, 0});
  expect_bool(kiln::greater_equal(a, b), {0, 0, 0});
}

TEST(Binary, ComparisonScalarForms) {
  auto t = i32({1, 2, 3});
  expect_bool(kiln::less(t, 2), {1, 0, 0});
  expect_bool(kiln::less(2, t), {0, 0, 1});
  expect_bool(kiln::greater(t, 2), {0, 0, 1});
  expect_bool(kiln::greater(2, t), {1, 0, 0});
  expect_bool(kiln::equal(2, t), {0, 1, 0});
  expect_bool(kiln::not_equal(t, 2), {1, 0, 1});
  expect_bool(kiln::less_equal(t, 2), {1, 1, 0});
  expect_bool(kiln::greater_equal(2.0, t), {1, 1, 0});
}

TEST(Binary, Where) {
  auto cond = i32({1, 0, 5, -1});
  auto a = f32({1.0f, 2.0f, 3.0f, 4.0f});
  auto b = f32({-1.0f, -2.0f, -3.0f, -4.0f});
  expect_f32(kiln::where(cond, a, b), {1.0f, -2.0f, 3.0f, 4.0f});
}

TEST(Binary, WhereConditionOfAnyType) {
  auto a = i32({1, 2, 3, 4});
  auto b = i32({-1, -2, -3, -4});
  expect_i32(kiln::where(f32({0.0f, 0.5f, -1.0f, 0.0f}), a, b), {-1, 2, 3, -4});
  expect_i32(kiln::where(f64({0.0, 1e-300, 0.0, -0.0}), a, b), {-1, 2, -3, -4});
  expect_i32(kiln::where(i64({std::int64_t{1} << 40, 0, 0, 7}), a, b), {1, -2, -3, 4});
  // NaN is non-zero, hence true.
  expect_i32(kiln::where(f64({kNaN, 0.0, 0.0, 0.0}), a, b), {1, -2, -3, -4});
}

TEST(Binary, WherePromotesValues) {
  auto cond = i32({1, 0});
  auto r = kiln::where(cond, i32({1, 2}), f64({0.5, 0.25}));
  EXPECT_EQ(r.dtype(), DType::f64);
  expect_values(r, {1.0, 0.25});
  auto r2 = kiln::where(cond, i64({7, 8}), i32({-1, -2}));
  expect_i64(r2, {7, -2});
  // The condition's type does not take part.
  auto r3 = kiln::where(f64({0.0, 1.0}), i32({1, 2}), i32({3, 4}));
  expect_i32(r3, {3, 2});
}

TEST(Binary, WhereBroadcastsAllThree) {
  auto cond = Tensor::from(std::vector<std::int32_t>{1, 0}, Shape{2, 1});
  auto a = f32({1.0f, 2.0f, 3.0f});  // [3]
  auto b = kiln::scalar(-1.0f);      // []
  auto r = kiln::where(cond, a, b);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  expect_f32(r, {1.0f, 2.0f, 3.0f, -1.0f, -1.0f, -1.0f});
  // Condition the larger operand.
  auto cond2 = Tensor::from(std::vector<std::int32_t>{1, 0, 0, 1, 1, 0}, Shape{2, 3});
  auto r2 = kiln::where(cond2, kiln::scalar(1), i32({10, 20, 30}));
  EXPECT_EQ(r2.shape(), (Shape{2, 3}));
  expect_i32(r2, {1, 20, 30, 1, 1, 30});
}

TEST(Binary, Compare) {
  auto a = i32({1, 5, 3, 0});
  auto b = i32({2, 2, 3, -1});
  expect_values(kiln::compare(a, b, Comparison::greater, 5, -5), {-5, 5, -5, 5});
  expect_values(kiln::compare(a, b, Comparison::less), {1, 0, 0, 0});
  expect_values(kiln::compare(a, b, Comparison::equal), {0, 0, 1, 0});
  expect_values(kiln::compare(a, b, Comparison::less_equal, 2, 3), {2, 3, 2, 3});
  expect_values(kiln::compare(a, b, Comparison::greater_equal, 7, 0), {0, 7, 7, 7});
  expect_values(kiln::compare(a, b, Comparison::not_equal, -1, 1), {-1, -1, 1, -1});
}

TEST(Binary, CompareWithFloatValuesAndBroadcast) {
  auto a = f32({1.0f, 2.0f, 3.0f});
  auto r = kiln::compare(a, kiln::scalar(2.0f), Comparison::greater_equal, 0.5, -0.25);
  EXPECT_EQ(r.shape(), (Shape{3}));
  expect_values(r, {-0.25, 0.5, 0.5});
}

// ============================================ operators ========================================

TEST(Operators, TensorTensor) {
  auto a = f64({6.0, -4.0});
  auto b = f64({3.0, 8.0});
  expect_values(a + b, {9.0, 4.0});
  expect_values(a - b, {3.0, -12.0});
  expect_values(a * b, {18.0, -32.0});
  expect_values(a / b, {2.0, -0.5});
  expect_values(-a, {-6.0, 4.0});
  expect_values((a + b) * (a - b) / b, {9.0 * 3.0 / 3.0, 4.0 * -12.0 / 8.0});
}

TEST(Operators, ScalarOnEitherSide) {
  auto t = f32({1.0f, 2.0f, 4.0f});
  expect_f32(t + 1.5f, {2.5f, 3.5f, 5.5f});
  expect_f32(1.5f + t, {2.5f, 3.5f, 5.5f});
  expect_f32(t - 1.0f, {0.0f, 1.0f, 3.0f});
  expect_f32(10.0f - t, {9.0f, 8.0f, 6.0f});
  expect_f32(t * 2.0f, {2.0f, 4.0f, 8.0f});
  expect_f32(2.0f * t, {2.0f, 4.0f, 8.0f});
  expect_f32(t / 2.0f, {0.5f, 1.0f, 2.0f});
  expect_f32(2.0f / t, {2.0f, 1.0f, 0.5f});
}

TEST(Operators, ScalarFunctionForms) {
  auto t = i32({1, 2, 3});
  auto r = kiln::sub(2.5, t);  // a floating scalar with an integer tensor: the default float type
  EXPECT_EQ(r.dtype(), DType::f32);
  expect_values(r, {1.5, 0.5, -0.5});
  auto r2 = 2.5 - t;
  EXPECT_EQ(r2.dtype(), DType::f32);
  expect_values(r2, {1.5, 0.5, -0.5});
  expect_values(kiln::sub(t, 2.5), {-1.5, -0.5, 0.5});
  expect_i32(kiln::div(7, t, "trunc"), {7, 3, 2});
  expect_f32(kiln::div(7, t), {7.0f, 3.5f, 7.0f / 3.0f});
  expect_i32(kiln::add(10, t), {11, 12, 13});
  expect_i32(kiln::mul(t, -2), {-2, -4, -6});
  expect_i32(kiln::pow(2, t), {2, 4, 8});
  expect_i32(kiln::minimum(2, t), {1, 2, 2});
  expect_i32(kiln::maximum(t, 2), {2, 2, 3});
  expect_i32(-t, {-1, -2, -3});
}

// ============================================ type promotion ===================================

TEST(Promotion, TensorTensor) {
  auto a32 = i32({1});
  auto a64 = i64({1});
  auto fa = f32({1.0f});
  auto da = f64({1.0});
  EXPECT_EQ((a32 + a32).dtype(), DType::i32);
  EXPECT_EQ((a32 + a64).dtype(), DType::i64);
  EXPECT_EQ((a64 + a32).dtype(), DType::i64);
  EXPECT_EQ((a32 + fa).dtype(), DType::f32);
  EXPECT_EQ((a64 + fa).dtype(), DType::f32);
  EXPECT_EQ((fa + a64).dtype(), DType::f32);
  EXPECT_EQ((fa + da).dtype(), DType::f64);
  EXPECT_EQ((da * a32).dtype(), DType::f64);
  EXPECT_EQ(kiln::pow(a32, fa).dtype(), DType::f32);
  EXPECT_EQ(kiln::minimum(a64, da).dtype(), DType::f64);
  EXPECT_EQ(kiln::div(a32, a64, "floor").dtype(), DType::i64);
  EXPECT_EQ(kiln::div(a32, a64).dtype(), DType::f32);  // true division
}

// Scalars are weak (as in PyTorch, JAX and NumPy 2): a scalar takes the tensor's type, except
// that a floating scalar with an integer tensor gives the default float type.
TEST(Promotion, ScalarsAreWeak) {
  auto ti = i32({3});
  auto tf = f32({3.0f});
  auto tl = i64({3});
  auto td = f64({3.0});
  EXPECT_EQ((ti + 1).dtype(), DType::i32);
  EXPECT_EQ((ti + 1L).dtype(), DType::i32);
  EXPECT_EQ((ti + std::int64_t{1}).dtype(), DType::i32);
  EXPECT_EQ((ti + 1LL).dtype(), DType::i32);
  EXPECT_EQ((ti + 1.0f).dtype(), DType::f32);
  EXPECT_EQ((ti - 2.5).dtype(), DType::f32);
  EXPECT_EQ((2.5 - ti).dtype(), DType::f32);
  EXPECT_EQ((tl * 0.5).dtype(), DType::f32);
  EXPECT_EQ((tf * 2.0f).dtype(), DType::f32);
  EXPECT_EQ((2.0f * tf).dtype(), DType::f32);
  EXPECT_EQ((tf * 2.0).dtype(), DType::f32);  // the trap: `w - 0.1 * g` stays f32
  EXPECT_EQ((tf - 0.1 * tf).dtype(), DType::f32);
  EXPECT_EQ((tf * 2).dtype(), DType::f32);
  EXPECT_EQ((tf * 2L).dtype(), DType::f32);
  EXPECT_EQ((tl + 1).dtype(), DType::i64);
  EXPECT_EQ((tl + 1.0f).dtype(), DType::f32);
  EXPECT_EQ((td + 1.0f).dtype(), DType::f64);
  EXPECT_EQ((td + 1).dtype(), DType::f64);
  EXPECT_EQ(kiln::less(tf, 2.0).dtype(), DType::boolean);
  EXPECT_EQ(kiln::pow(ti, 2.0).dtype(), DType::f32);
  EXPECT_EQ(kiln::maximum(ti, 2.5).dtype(), DType::f32);
  EXPECT_EQ((td * 0.1f).to_vector<double>(), std::vector<double>{3.0 * static_cast<double>(0.1f)});
  // Values follow the result type: 0.1 is rounded to f32 beside an f32 tensor.
  expect_values(ti - 2.5, {0.5});
  expect_values(tf * 2.0, {6.0});
  expect_values(ti / 2.0f, {1.5});
  EXPECT_EQ((tf * 0.1).item<float>(), 3.0f * 0.1f);
  // The default float type is what an integer tensor's floating scalar gives.
  kiln::set_default_dtype(DType::f64);
  EXPECT_EQ((ti * 0.5).dtype(), DType::f64);
  EXPECT_EQ((tf * 0.5).dtype(), DType::f32);
  kiln::set_default_dtype(DType::f32);
}

TEST(Promotion, ComparisonsAlwaysBool) {
  for (auto t : {i32({1}), i64({1}), f32({1.0f}), f64({1.0})}) {
    EXPECT_EQ(kiln::equal(t, t).dtype(), DType::boolean);
    EXPECT_EQ(kiln::less(t, f64({2.0})).dtype(), DType::boolean);
    EXPECT_EQ(kiln::greater_equal(t, i64({0})).dtype(), DType::boolean);
    EXPECT_EQ(kiln::not_equal(t, 1).dtype(), DType::boolean);
  }
}

// ============================================ unary ops ========================================

using UnaryFn = Tensor (*)(const Tensor&);

struct FloatUnary {
  const char* name;
  UnaryFn fn;
  std::function<double(double)> ref;
  std::vector<double> float_inputs;
  std::vector<std::int64_t> int_inputs;
};

std::vector<FloatUnary> float_unaries() {
  return {
      {"sqrt",
       &kiln::sqrt,
       [](double x) { return std::sqrt(x); },
       {0, 0.25, 2, 9, 1e6},
       {0, 1, 2, 9}},
      {"exp",
       &kiln::exp,
       [](double x) { return std::exp(x); },
       {-3, -0.5, 0, 1, 10},
       {-2, 0, 1, 3}},
      {"expm1",
       &kiln::expm1,
       [](double x) { return std::expm1(x); },
       {-1, -0.25, 0, 0.5, 2},
       {-2, 0, 1, 3}},
      {"log", &kiln::log, [](double x) { return std::log(x); }, {1e-3, 0.5, 1, 2, 10}, {1, 2, 10}},
      {"log2", &kiln::log2, [](double x) { return std::log2(x); }, {0.5, 1, 8, 10}, {1, 2, 8, 10}},
      {"log10",
       &kiln::log10,
       [](double x) { return std::log10(x); },
       {0.01, 1, 5, 1000},
       {1, 10, 100, 7}},
      {"log1p", &kiln::log1p, [](double x) { return std::log1p(x); }, {-0.5, 0, 0.5, 3}, {0, 1, 3}},
      {"softplus",
       &kiln::softplus,
       [](double x) { return std::log(1 + std::exp(x)); },
       {-5, -0.5, 0, 1, 10},
       {-2, 0, 3}},
      {"sin", &kiln::sin, [](double x) { return std::sin(x); }, {-2, -0.5, 0, 1, 3}, {-1, 0, 1, 2}},
      {"cos", &kiln::cos, [](double x) { return std::cos(x); }, {-2, -0.5, 0, 1, 3}, {-1, 0, 1, 2}},
      {"tan",
       &kiln::tan,
       [](double x) { return std::tan(x); },
       {-1, -0.5, 0, 0.5, 1.2},
       {-1, 0, 1}},
      {"asin",
       &kiln::asin,
       [](double x) { return std::asin(x); },
       {-0.9, -0.5, 0, 0.5, 0.9},
       {-1, 0, 1}},
      {"acos",
       &kiln::acos,
       [](double x) { return std::acos(x); },
       {-0.9, -0.5, 0, 0.5, 0.9},
       {-1, 0, 1}},
      {"atan",
       &kiln::atan,
       [](double x) { return std::atan(x); },
       {-10, -1, 0, 0.5, 3},
       {-3, 0, 2}},
      {"sinh",
       &kiln::sinh,
       [](double x) { return std::sinh(x); },
       {-2, -0.5, 0, 1, 3},
       {-2, 0, 1, 2}},
      {"cosh",
       &kiln::cosh,
       [](double x) { return std::cosh(x); },
       {-2, -0.5, 0, 1, 3},
       {-2, 0, 1, 2}},
      {"tanh",
       &kiln::tanh,
       [](double x) { return std::tanh(x); },
       {-5, -0.5, 0, 1, 3},
       {-2, 0, 1, 2}},
      {"asinh",
       &kiln::asinh,
       [](double x) { return std::asinh(x); },
       {-3, -0.5, 0, 1, 10},
       {-2, 0, 3}},
      {"acosh", &kiln::acosh, [](double x) { return std::acosh(x); }, {1, 1.5, 2, 10}, {1, 2, 5}},
      {"atanh",
       &kiln::atanh,
       [](double x) { return std::atanh(x); },
       {-0.9, -0.5, 0, 0.5, 0.9},
       {0}},
      {"reciprocal",
       &kiln::reciprocal,
       [](double x) { return 1.0 / x; },
       {-4, 0.5, 2, 3},
       {1, 2, 4, -8}},
      {"sigmoid",
       &kiln::sigmoid,
       [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
       {-5, -1, 0, 1, 5},
       {-2, 0, 3}},
  };
}

TEST(Unary, FloatValuedF64MatchesStd) {
  for (const auto& op : float_unaries()) {
    SCOPED_TRACE(op.name);
    auto r = op.fn(f64(op.float_inputs));
    EXPECT_EQ(r.dtype(), DType::f64);
    EXPECT_EQ(r.shape(), (Shape{static_cast<std::int64_t>(op.float_inputs.size())}));
    std::vector<double> want;
    for (double x : op.float_inputs) want.push_back(op.ref(x));
    expect_values(r, want, 1e-12, 1e-14);
  }
}

TEST(Unary, FloatValuedF32StaysF32) {
  for (const auto& op : float_unaries()) {
    SCOPED_TRACE(op.name);
    std::vector<float> in;
    std::vector<double> want;
    for (double x : op.float_inputs) {
      in.push_back(static_cast<float>(x));
      want.push_back(op.ref(static_cast<double>(static_cast<float>(x))));
    }
    auto r = op.fn(f32(in));
    EXPECT_EQ(r.dtype(), DType::f32);
    expect_values(r, want, 1e-5, 1e-6);
  }
}

// The C++ API computes float-valued ops of integer tensors in the default float type (libtorch's
// rule); the C API keeps Flint's f64 (detail::flint_unary, the kernels' integer-to-f64 path).
TEST(Unary, FloatValuedOnIntegersGivesTheDefaultFloatTypeInCpp) {
  for (const auto& op : float_unaries()) {
    SCOPED_TRACE(op.name);
    std::vector<std::int32_t> in32;
    std::vector<double> want;
    for (auto x : op.int_inputs) {
      in32.push_back(static_cast<std::int32_t>(x));
      want.push_back(op.ref(static_cast<double>(x)));
    }
    auto r32 = op.fn(i32(in32));
    EXPECT_EQ(r32.dtype(), kiln::default_dtype());
    expect_values(r32, want, 1e-6, 1e-6);
    auto r64 = op.fn(i64(op.int_inputs));
    EXPECT_EQ(r64.dtype(), kiln::default_dtype());
    expect_values(r64, want, 1e-6, 1e-6);
  }
  kiln::set_default_dtype(DType::f64);
  EXPECT_EQ(kiln::sqrt(i32({4})).dtype(), DType::f64);
  kiln::set_default_dtype(DType::f32);
}

TEST(Unary, FloatValuedOnIntegersGivesF64ByFlintsRule) {
  for (const auto& op : float_unaries()) {
    SCOPED_TRACE(op.name);
    kiln::detail::Op id{};
    bool found = false;
    for (std::size_t i = 0; i < kiln::detail::kOpCount; ++i)
      if (kiln::detail::op_info(static_cast<kiln::detail::Op>(i)).name == op.name)
        id = static_cast<kiln::detail::Op>(i), found = true;
    ASSERT_TRUE(found);
    std::vector<std::int32_t> in32;
    std::vector<double> want;
    for (auto x : op.int_inputs) {
      in32.push_back(static_cast<std::int32_t>(x));
      want.push_back(op.ref(static_cast<double>(x)));
    }
    auto r32 = kiln::detail::flint_unary(id, i32(in32));
    EXPECT_EQ(r32.dtype(), DType::f64);
    expect_values(r32, want, 1e-12, 1e-14);
    auto r64 = kiln::detail::flint_unary(id, i64(op.int_inputs));
    EXPECT_EQ(r64.dtype(), DType::f64);
    expect_values(r64, want, 1e-12, 1e-14);
  }
}

TEST(Unary, Expm1AndLog1pAreAccurateNearZero) {
  // log(1 + x) and exp(x) - 1 lose most digits here; the dedicated functions do not.
  auto x = f64({1e-10, -1e-12, 3e-9});
  expect_values(kiln::log1p(x), {std::log1p(1e-10), std::log1p(-1e-12), std::log1p(3e-9)}, 1e-12);
  expect_values(kiln::expm1(x), {std::expm1(1e-10), std::expm1(-1e-12), std::expm1(3e-9)}, 1e-12);
}

TEST(Unary, SoftplusNeitherOverflowsNorUnderflows) {
  // log(1 + e^x) computed as written overflows for large x and rounds to 0 for very negative x.
  expect_values(kiln::softplus(f64({100.0, 1000.0, -100.0, -1000.0})),
                {100.0, 1000.0, std::exp(-100.0), 0.0}, 1e-15);
  expect_values(kiln::softplus(f32({100.0f, -80.0f})), {100.0, std::exp(-80.0)}, 1e-6);
}

TEST(Unary, SpecialValues) {
  expect_values(kiln::sqrt(f64({-1.0})), {kNaN});
  expect_values(kiln::log(f64({0.0, -1.0})), {-kInf, kNaN});
  expect_values(kiln::log2(f32({0.0f})), {-kInf});
  expect_values(kiln::reciprocal(f64({0.0})), {kInf});
  expect_values(kiln::reciprocal(i32({0})), {kInf});
  expect_values(kiln::exp(f64({1000.0, -1000.0})), {kInf, 0.0});
  expect_values(kiln::exp(f32({100.0f})), {kInf});
  expect_values(kiln::sigmoid(f64({-100.0, 100.0})), {1.0 / (1.0 + std::exp(100.0)), 1.0}, 1e-12,
                1e-300);
  expect_values(kiln::tanh(f64({50.0, -50.0})), {1.0, -1.0}, 1e-15);
  expect_values(kiln::acosh(f64({0.5})), {kNaN});
}

TEST(Unary, Neg) {
  expect_i32(kiln::neg(i32({1, -2, 0})), {-1, 2, 0});
  expect_i64(kiln::neg(i64({std::int64_t{1} << 40, -3})), {-(std::int64_t{1} << 40), 3});
  expect_f32(kiln::neg(f32({1.5f, -2.0f})), {-1.5f, 2.0f});
  auto d = kiln::neg(f64({0.25}));
  EXPECT_EQ(d.dtype(), DType::f64);
  expect_values(d, {-0.25});
  // Wraps instead of overflowing.
  expect_i32(kiln::neg(i32({kI32Min})), {kI32Min});
  expect_i64(kiln::neg(i64({kI64Min})), {kI64Min});
}

TEST(Unary, Abs) {
  expect_i32(kiln::abs(i32({-3, 0, 4})), {3, 0, 4});
  expect_i64(kiln::abs(i64({-(std::int64_t{1} << 40), 5})), {std::int64_t{1} << 40, 5});
  expect_f32(kiln::abs(f32({-1.5f, 2.0f, -0.0f})), {1.5f, 2.0f, 0.0f});
  auto d = kiln::abs(f64({-2.25}));
  EXPECT_EQ(d.dtype(), DType::f64);
  expect_values(d, {2.25});
  auto dn = kiln::abs(f64({-kInf, kNaN}));
  expect_values(dn, {kInf, kNaN});
  // |INT_MIN| wraps to INT_MIN.
  expect_i32(kiln::abs(i32({kI32Min})), {kI32Min});
}

TEST(Unary, Square) {
  expect_i32(kiln::square(i32({-3, 0, 4})), {9, 0, 16});
  expect_i64(kiln::square(i64({1LL << 20, -5})), {1LL << 40, 25});
  expect_f32(kiln::square(f32({-1.5f, 0.5f})), {2.25f, 0.25f});
  auto d = kiln::square(f64({3.0}));
  EXPECT_EQ(d.dtype(), DType::f64);
  expect_values(d, {9.0});
  expect_i32(kiln::square(i32({65536})), {0});  // wraps
}

TEST(Unary, Relu) {
  expect_i32(kiln::relu(i32({-3, 0, 4})), {0, 0, 4});
  expect_i64(kiln::relu(i64({-3, 7})), {0, 7});
  expect_f32(kiln::relu(f32({-1.5f, 0.0f, 2.5f})), {0.0f, 0.0f, 2.5f});
  auto d = kiln::relu(f64({-0.5, 0.5}));
  EXPECT_EQ(d.dtype(), DType::f64);
  expect_values(d, {0.0, 0.5});
}

TEST(Unary, Sign) {
  // libtorch's sign: the operand's type, 0 at 0 (also -0.0); the C API's fsign keeps Flint's.
  expect_i32(kiln::sign(i32({-2, 0, 3})), {-1, 0, 1});
  expect_i64(kiln::sign(i64({-(std::int64_t{1} << 40), 0, 1})), {-1, 0, 1});
  expect_f32(kiln::sign(f32({-0.5f, 0.0f, 2.0f})), {-1, 0, 1});
  expect_values(kiln::sign(f64({-1e-300, -0.0, 1e300, kNaN})), {-1, 0, 1, 0});
}

TEST(Unary, Even) {
  expect_i32(kiln::even(i32({-3, -2, 0, 1, 4})), {0, 1, 1, 0, 1});
  expect_i32(kiln::even(i64({(std::int64_t{1} << 40) + 1, std::int64_t{1} << 40})), {0, 1});
  expect_i32(kiln::even(i32({kI32Min, kI32Max})), {1, 0});
}

TEST(Unary, EvenOnFloatIsWrongType) {
  EXPECT_EQ(code_of([] { kiln::even(f32({1.0f, 2.0f})); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([] { kiln::even(f64({2.0})); }), ErrorCode::wrong_type);
}

TEST(Unary, Convert) {
  auto f = f64({2.7, -2.7, 0.5, -0.5, 3.0});
  auto r = kiln::convert(f, DType::i32);
  expect_i32(r, {2, -2, 0, 0, 3});
  expect_i64(kiln::convert(f, DType::i64), {2, -2, 0, 0, 3});
  auto rf = kiln::convert(i32({1, -2, 16777217}), DType::f32);
  EXPECT_EQ(rf.dtype(), DType::f32);
  expect_values(rf, {1.0, -2.0, 16777216.0});
  auto rd = kiln::convert(f32({0.1f}), DType::f64);
  EXPECT_EQ(rd.dtype(), DType::f64);
  expect_values(rd, {static_cast<double>(0.1f)});
  // Converting to the same type keeps values.
  expect_i64(kiln::convert(i64({5, -6}), DType::i64), {5, -6});
  // Method form.
  expect_i32(f32({-1.9f, 1.9f}).convert(DType::i32), {-1, 1});
}

TEST(Unary, ConvertSaturatesAndMapsNaNToZero) {
  auto f = f64({1e20, -1e20, kNaN, kInf, -kInf, 2147483647.5, -2147483648.9});
  expect_i32(kiln::convert(f, DType::i32),
             {kI32Max, kI32Min, 0, kI32Max, kI32Min, kI32Max, kI32Min});
  expect_i64(kiln::convert(f64({1e30, -1e30, kNaN}), DType::i64), {kI64Max, kI64Min, 0});
  expect_i32(kiln::convert(f32({3e9f, -3e9f, std::nanf("")}), DType::i32), {kI32Max, kI32Min, 0});
}

TEST(Unary, ConvertI64ToI32Wraps) {
  // Integer to integer conversion is the C++20 modular conversion (types.hpp convert_value).
  expect_i32(kiln::convert(i64({(std::int64_t{1} << 32) + 5, -1}), DType::i32), {5, -1});
}

TEST(Unary, ShapeIsKept) {
  auto t = Tensor::from(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(kiln::exp(t).shape(), (Shape{2, 3}));
  EXPECT_EQ(kiln::neg(t).shape(), (Shape{2, 3}));
  EXPECT_EQ(kiln::sign(t).shape(), (Shape{2, 3}));
  auto s = kiln::scalar(4.0);
  auto r = kiln::sqrt(s);
  EXPECT_EQ(r.rank(), 0);
  EXPECT_DOUBLE_EQ(r.item<double>(), 2.0);
}

TEST(Elementwise, ChainedExpression) {
  const std::vector<double> x = {0.5, 1.0, 2.0};
  const std::vector<double> y = {3.0, -1.0, 0.25};
  auto r = kiln::exp(kiln::sin(f64(x)) * f64(y) + 1.0) / 2.0;
  std::vector<double> want;
  for (std::size_t i = 0; i < x.size(); ++i)
    want.push_back(std::exp(std::sin(x[i]) * y[i] + 1.0) / 2.0);
  expect_values(r, want, 1e-13);
}

TEST(Elementwise, EmptyTensors) {
  auto e = Tensor::from(std::vector<float>{}, Shape{0, 3});
  auto r = kiln::exp(e) + e;
  EXPECT_EQ(r.shape(), (Shape{0, 3}));
  EXPECT_EQ(r.numel(), 0);
  EXPECT_TRUE(r.to_vector<float>().empty());
}

}  // namespace
