// cumsum, cumprod, sort, argsort and topk by hand: values along every axis and negative axes,
// NaN (the largest value), ties (stable order), empty dimensions, 0-d tensors, integer types
// (wrapping scans), the gradients of the scans and of the sorted values, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <cstdint>
#include <limits>
#include <random>
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
constexpr double kInf = std::numeric_limits<double>::infinity();

using I32 = std::vector<std::int32_t>;
using I64 = std::vector<std::int64_t>;
using F64 = std::vector<double>;

Tensor f64(F64 v, Shape s) { return Tensor::from(v, std::move(s)); }

// Equal values, NaN equal to NaN.
void expect_values(const Tensor& t, const F64& want) {
  const F64 got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    else
      EXPECT_EQ(got[i], want[i]) << "at " << i;
  }
}

// ---- scans ----------------------------------------------------------------------------------------

TEST(Scans, CumsumAlongEachAxis) {
  const Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(kiln::cumsum(x, 1), {1, 3, 6, 4, 9, 15});
  expect_values(kiln::cumsum(x, -1), {1, 3, 6, 4, 9, 15});
  expect_values(kiln::cumsum(x, 0), {1, 2, 3, 5, 7, 9});
  expect_values(kiln::cumsum(x, -2), {1, 2, 3, 5, 7, 9});
  EXPECT_EQ(kiln::cumsum(x, 0).shape(), (Shape{2, 3}));
  EXPECT_EQ(kiln::cumsum(x, 0).dtype(), DType::f64);
}

TEST(Scans, CumsumOfAMiddleAxisAndOfAView) {
  // [2, 2, 2]: 0..7; along axis 1 each pair of rows adds up.
  const Tensor x = f64({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  expect_values(kiln::cumsum(x, 1), {0, 1, 2, 4, 4, 5, 10, 12});
  // Through a transposing view: cumsum of x^T along its last axis.
  const Tensor m = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(kiln::cumsum(kiln::transpose(m, 0, 1), 1), {1, 5, 2, 7, 3, 9});
}

TEST(Scans, CumprodWithZerosNaNAndInfinity) {
  expect_values(kiln::cumprod(f64({2, 3, 0, 5}, {4}), 0), {2, 6, 0, 0});
  expect_values(kiln::cumprod(f64({2, kNaN, 0, 5}, {4}), 0), {2, kNaN, kNaN, kNaN});
  expect_values(kiln::cumprod(f64({kInf, 2, 0}, {3}), 0), {kInf, kInf, kNaN});
  expect_values(kiln::cumsum(f64({1, kInf, -kInf, 2}, {4}), 0), {1, kInf, kNaN, kNaN});
}

TEST(Scans, IntegerTypesKeepTheirTypeAndWrap) {
  const Tensor a = Tensor::from(I32{2147483647, 1, 5}, {3});
  const Tensor s = kiln::cumsum(a, 0);
  EXPECT_EQ(s.dtype(), DType::i32);
  EXPECT_EQ(s.to_vector<std::int32_t>(), (I32{2147483647, -2147483647 - 1, -2147483643}));
  const Tensor p = kiln::cumprod(Tensor::from(I32{65536, 65536, 3}, {3}), 0);
  EXPECT_EQ(p.dtype(), DType::i32);
  EXPECT_EQ(p.to_vector<std::int32_t>(), (I32{65536, 0, 0}));
  const Tensor q = kiln::cumprod(Tensor::from(I64{-2, 3, -4}, {3}), 0);
  EXPECT_EQ(q.dtype(), DType::i64);
  EXPECT_EQ(q.to_vector<std::int64_t>(), (I64{-2, -6, 24}));
  EXPECT_EQ(kiln::cumsum(kiln::convert(f64({1.5, 2.5}, {2}), DType::f32), 0).dtype(), DType::f32);
}

TEST(Scans, EmptyAndZeroDimensional) {
  const Tensor e = kiln::zeros({2, 0, 3}, DType::f64);
  EXPECT_EQ(kiln::cumsum(e, 1).shape(), (Shape{2, 0, 3}));
  EXPECT_EQ(kiln::cumprod(e, 2).shape(), (Shape{2, 0, 3}));
  EXPECT_TRUE(kiln::cumsum(e, 2).to_vector<double>().empty());
  const Tensor s = kiln::full({}, 4.0, DType::f64);
  EXPECT_EQ(kiln::cumsum(s, 0).shape(), Shape{});
  EXPECT_EQ(kiln::cumprod(s, -1).item<double>(), 4.0);
  EXPECT_EQ(code_of([&] { (void)kiln::cumsum(s, 1); }), ErrorCode::illegal_dimension);
}

TEST(Scans, BadDimensionIsAnError) {
  const Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(code_of([&] { (void)kiln::cumsum(x, 2); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { (void)kiln::cumprod(x, -3); }), ErrorCode::illegal_dimension);
  try {
    (void)kiln::cumsum(x, 5);
    FAIL();
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cumsum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2,3]"), std::string::npos) << e.what();
  }
}

Tensor gradient_of_sum_weighted(const std::function<Tensor(const Tensor&)>& f, F64 values,
                                Shape shape, F64 weights) {
  const Tensor x = f64(std::move(values), shape).watch();
  const Tensor w = f64(std::move(weights), f(x).shape());
  kiln::GradientContext ctx;
  return kiln::gradient(kiln::sum(f(x) * w), x);
}

TEST(Scans, Gradients) {
  // cumsum: x[i] gets the sum of the weights at and after i.
  expect_values(gradient_of_sum_weighted([](const Tensor& x) { return kiln::cumsum(x, 0); },
                                         {1, 2, 3}, {3}, {1, 10, 100}),
                {111, 110, 100});
  // cumprod of [2, 3, 4] = [2, 6, 24]: d/dx0 = 1 + 3 w1 + 12 w2, d/dx1 = 2 w1 + 8 w2, d/dx2 = 6 w2.
  expect_values(gradient_of_sum_weighted([](const Tensor& x) { return kiln::cumprod(x, 0); },
                                         {2, 3, 4}, {3}, {1, 10, 100}),
                {1 + 30 + 1200, 20 + 800, 600});
  // A zero at position 1 of [2, 0, 4, 5]: out = [2, 0, 0, 0].
  //   d/dx0 = w0 (the other terms hold x1 = 0); d/dx1 = 2 w1 + 8 w2 + 40 w3; after it 0.
  expect_values(gradient_of_sum_weighted([](const Tensor& x) { return kiln::cumprod(x, 0); },
                                         {2, 0, 4, 5}, {4}, {1, 10, 100, 1000}),
                {1, 20 + 800 + 40000, 0, 0});
  // Two zeros: [0, 3, 0]: out = [0, 0, 0]; d/dx0 = w0 + 3 w1 (x2 only multiplies after), others 0.
  expect_values(gradient_of_sum_weighted([](const Tensor& x) { return kiln::cumprod(x, 0); },
                                         {0, 3, 0}, {3}, {1, 10, 100}),
                {31, 0, 0});
}

// ---- sorting --------------------------------------------------------------------------------------

TEST(Sorting, SortAscendingAndDescending) {
  const Tensor x = f64({3, 1, 2, 9, 7, 8}, {2, 3});
  const auto [v, i] = kiln::sort(x);
  expect_values(v, {1, 2, 3, 7, 8, 9});
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(i.to_vector<std::int64_t>(), (I64{1, 2, 0, 1, 2, 0}));
  const kiln::ValuesIndices d = kiln::sort(x, 1, true);
  expect_values(d.values, {3, 2, 1, 9, 8, 7});
  EXPECT_EQ(d.indices.to_vector<std::int64_t>(), (I64{0, 2, 1, 0, 2, 1}));
  const kiln::ValuesIndices c = kiln::sort(x, 0, true);
  expect_values(c.values, {9, 7, 8, 3, 1, 2});
  EXPECT_EQ(c.indices.to_vector<std::int64_t>(), (I64{1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(kiln::argsort(x, -2).to_vector<std::int64_t>(), (I64{0, 0, 0, 1, 1, 1}));
}

TEST(Sorting, NaNIsTheLargestValue) {
  const Tensor x = f64({kNaN, 1, -kInf, kNaN, kInf, 0}, {6});
  const kiln::ValuesIndices a = kiln::sort(x);
  expect_values(a.values, {-kInf, 0, 1, kInf, kNaN, kNaN});
  EXPECT_EQ(a.indices.to_vector<std::int64_t>(), (I64{2, 5, 1, 4, 0, 3}));
  const kiln::ValuesIndices d = kiln::sort(x, 0, true);
  expect_values(d.values, {kNaN, kNaN, kInf, 1, 0, -kInf});
  EXPECT_EQ(d.indices.to_vector<std::int64_t>(), (I64{0, 3, 4, 1, 5, 2}));
  // f32 too.
  EXPECT_EQ(kiln::argsort(kiln::convert(x, DType::f32)).to_vector<std::int64_t>(),
            (I64{2, 5, 1, 4, 0, 3}));
}

TEST(Sorting, TiesKeepTheirOrder) {
  const Tensor x = f64({2, 1, 2, 1, 2, -0.0, 0.0}, {7});
  EXPECT_EQ(kiln::argsort(x).to_vector<std::int64_t>(), (I64{5, 6, 1, 3, 0, 2, 4}));
  EXPECT_EQ(kiln::argsort(x, 0, true).to_vector<std::int64_t>(), (I64{0, 2, 4, 1, 3, 5, 6}));
  // A long line of equal values (std::stable_sort's merging path).
  std::vector<double> many(100, 1.0);
  many[50] = 0.0;
  I64 want{50};
  for (std::int64_t j = 0; j < 100; ++j)
    if (j != 50) want.push_back(j);
  EXPECT_EQ(kiln::argsort(f64(many, {100})).to_vector<std::int64_t>(), want);
}

TEST(Sorting, IntegerTypes) {
  const Tensor x = Tensor::from(I32{5, -3, 5, 2147483647, -2147483647 - 1}, {5});
  const kiln::ValuesIndices s = kiln::sort(x);
  EXPECT_EQ(s.values.dtype(), DType::i32);
  EXPECT_EQ(s.values.to_vector<std::int32_t>(), (I32{-2147483647 - 1, -3, 5, 5, 2147483647}));
  EXPECT_EQ(s.indices.to_vector<std::int64_t>(), (I64{4, 1, 0, 2, 3}));
  const kiln::ValuesIndices t = kiln::topk(Tensor::from(I64{4, 9, 4, 1}, {4}), 3);
  EXPECT_EQ(t.values.to_vector<std::int64_t>(), (I64{9, 4, 4}));
  EXPECT_EQ(t.indices.to_vector<std::int64_t>(), (I64{1, 0, 2}));
}

TEST(Sorting, EmptyAndZeroDimensional) {
  const Tensor e = kiln::zeros({3, 0}, DType::f32);
  const kiln::ValuesIndices s = kiln::sort(e, 1);
  EXPECT_EQ(s.values.shape(), (Shape{3, 0}));
  EXPECT_EQ(s.indices.shape(), (Shape{3, 0}));
  EXPECT_EQ(kiln::argsort(e, 0).shape(), (Shape{3, 0}));
  EXPECT_EQ(kiln::topk(e, 0, 1).values.shape(), (Shape{3, 0}));
  EXPECT_EQ(kiln::topk(e, 2, 0).values.shape(), (Shape{2, 0}));
  const Tensor z = kiln::full({}, 7.0, DType::f64);
  EXPECT_EQ(kiln::sort(z).values.item<double>(), 7.0);
  EXPECT_EQ(kiln::argsort(z).shape(), Shape{});
  EXPECT_EQ(kiln::argsort(z).item<std::int64_t>(), 0);
  EXPECT_EQ(kiln::topk(z, 1).indices.item<std::int64_t>(), 0);
}

TEST(Sorting, Topk) {
  const Tensor x = f64({1, 5, 3, 5, kNaN, 2, 8, 0}, {2, 4});
  const kiln::ValuesIndices t = kiln::topk(x, 2);
  expect_values(t.values, {5, 5, kNaN, 8});
  EXPECT_EQ(t.indices.to_vector<std::int64_t>(), (I64{1, 3, 0, 2}));
  const kiln::ValuesIndices s = kiln::topk(x, 2, -1, false);
  expect_values(s.values, {1, 3, 0, 2});
  EXPECT_EQ(s.indices.to_vector<std::int64_t>(), (I64{0, 2, 3, 1}));
  const kiln::ValuesIndices c = kiln::topk(x, 1, 0);
  EXPECT_EQ(c.values.shape(), (Shape{1, 4}));
  expect_values(c.values, {kNaN, 5, 8, 5});
  EXPECT_EQ(c.indices.to_vector<std::int64_t>(), (I64{1, 0, 1, 0}));
  const kiln::ValuesIndices u = kiln::topk(x, 4, 1, true, false);  // comes sorted anyway
  expect_values(u.values, {5, 5, 3, 1, kNaN, 8, 2, 0});
}

TEST(Sorting, Errors) {
  const Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(code_of([&] { (void)kiln::sort(x, 2); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { (void)kiln::argsort(x, -3); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { (void)kiln::topk(x, 4); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)kiln::topk(x, -1); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)kiln::topk(x, 1, 2); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { (void)kiln::sort(Tensor()); }), ErrorCode::invalid_select);
  try {
    (void)kiln::topk(x, 4, 1);
    FAIL();
  } catch (const kiln::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("topk"), std::string::npos) << what;
    EXPECT_NE(what.find("[2,3]"), std::string::npos) << what;
  }
}

TEST(Sorting, GradientOfTheValuesGoesToTheIndices) {
  // sort [3, 1, 2] -> [1, 2, 3] from [1, 2, 0]: weights w land at x[1], x[2], x[0].
  expect_values(gradient_of_sum_weighted([](const Tensor& x) { return kiln::sort(x).values; },
                                         {3, 1, 2}, {3}, {1, 10, 100}),
                {100, 1, 10});
  // topk(2) of [3, 1, 2] = [3, 2] from [0, 2]; x[1] gets nothing.
  expect_values(gradient_of_sum_weighted([](const Tensor& x) { return kiln::topk(x, 2).values; },
                                         {3, 1, 2}, {3}, {1, 10}),
                {1, 0, 10});
  // The indices are not differentiable: a gradient through them alone is refused.
  EXPECT_EQ(kiln_test::code_of([] {
              gradient_of_sum_weighted(
                  [](const Tensor& x) { return kiln::convert(kiln::argsort(x), DType::f64); },
                  {3, 1, 2}, {3}, {1, 10, 100});
            }),
            kiln::ErrorCode::illegal_derive);
}

// Large enough to be split over threads, along the last and an inner axis, with ties and NaN:
// every executor gives the reference's values (integers and indices bit for bit; the scans walk
// each line in order, so the floats too).
TEST(Sorting, LargeShapesAgreeWithTheReferenceOnEveryExecutor) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(-20, 20);
  F64 v(64 * 300);
  for (double& x : v) x = d(rng) == 20 ? kNaN : d(rng) * 0.25;
  const auto saved = kiln::current_executor();
  std::vector<std::vector<double>> want;
  for (const auto& e : kiln::executors()) {
    kiln::set_executor(e);
    const Tensor x = f64(v, {64, 300});
    const Tensor xi = kiln::convert(kiln::where(kiln::isnan(x), 0.0, x) * 4.0, DType::i32);
    const std::vector<Tensor> results = {
        kiln::convert(kiln::argsort(x, 1), DType::f64),
        kiln::convert(kiln::argsort(x, 0, true), DType::f64),
        kiln::sort(xi, 0).values,
        kiln::cumsum(x, 1),
        kiln::cumprod(kiln::sigmoid(x) + 0.5, 0),
        kiln::cumsum(xi, 0),
        kiln::topk(x, 5, 0).values};
    for (std::size_t r = 0; r < results.size(); ++r) {
      const F64 got = results[r].to_vector<double>();
      if (want.size() <= r) {
        want.push_back(got);
        continue;
      }
      ASSERT_EQ(got.size(), want[r].size());
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_TRUE(got[i] == want[r][i] || (std::isnan(got[i]) && std::isnan(want[r][i])))
            << "result " << r << " at " << i << " on " << e->name();
    }
  }
  kiln::set_executor(saved);
}

}  // namespace
