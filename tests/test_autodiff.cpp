// Reverse-mode autodiff with hand-checked values: matmul chains, broadcast expressions in both
// modes, reductions (with min/max ties), convolution, pooling and sliding windows, indexing;
// second and third derivatives; the error cases (illegal_derive); backward() accumulating into
// grad() and zero_grad(); the dtype rules; non-differentiable ops; dropout's mask; one variable
// used many times; and a chain of 10,000 ops (no recursion-depth crash, linear size and time).
// The numerical sweep over every op is in test_gradcheck.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "test_support.hpp"
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;

using F64 = std::vector<double>;
using I64 = std::vector<std::int64_t>;

Tensor f64(F64 v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor f64(F64 v) { return Tensor::from(v); }
Tensor f32(std::vector<float> v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor i64(I64 v, Shape s) { return Tensor::from(v, std::move(s)); }

F64 values(const Tensor& t) { return t.to_vector<double>(); }

void expect_values(const Tensor& t, const F64& expected, double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  const F64 got = values(t);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], tol * std::max(1.0, std::abs(expected[i])))
        << "element " << i;
}

// The kiln::Error a callable throws (code none and empty message when nothing is thrown).
template <class F>
kiln::Error error_of(F f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e;
  }
  return kiln::Error(ErrorCode::none, "");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ---- gradient contexts ------------------------------------------------------------------------

TEST(AutodiffContext, RaiiContextNestsAndEnds) {
  EXPECT_FALSE(kiln::in_gradient_context());
  {
    kiln::GradientContext outer;
    EXPECT_TRUE(kiln::in_gradient_context());
    {
      kiln::GradientContext inner;
      EXPECT_TRUE(kiln::in_gradient_context());
    }
    EXPECT_TRUE(kiln::in_gradient_context());
  }
  EXPECT_FALSE(kiln::in_gradient_context());
  kiln::start_gradient_context();
  EXPECT_TRUE(kiln::in_gradient_context());
  kiln::stop_gradient_context();
  EXPECT_FALSE(kiln::in_gradient_context());
}

TEST(AutodiffContext, WatchMarksAndUnmarks) {
  Tensor x = f64({1, 2});
  EXPECT_FALSE(x.is_watched());
  EXPECT_TRUE(x.watch().is_watched());
  Tensor copy = x;  // the mark belongs to the node
  EXPECT_TRUE(copy.is_watched());
  x.unwatch();
  EXPECT_FALSE(copy.is_watched());
}

// ---- hand-checked gradients ---------------------------------------------------------------------

TEST(AutodiffHand, MatmulChain) {
  Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = f64({1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor c = f64({1, 2, 3, 4}, {2, 2});
  a.watch();
  b.watch();
  c.watch();
  std::vector<Tensor> g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradients(kiln::sum(kiln::matmul(kiln::matmul(a, b), c)), {a, b, c});
  }
  ASSERT_EQ(g.size(), 3u);
  // d/d(AB) = ones @ C^T = [[3,7],[3,7]]; dA = that @ B^T; dB = A^T @ that; dC = (AB)^T @ ones.
  EXPECT_EQ(g[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(g[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(g[2].shape(), (Shape{2, 2}));
  expect_values(g[0], {3, 7, 10, 3, 7, 10});
  expect_values(g[1], {15, 35, 21, 49, 27, 63});
  expect_values(g[2], {14, 14, 16, 16});
}

TEST(AutodiffHand, MatmulBroadcastBatch) {
  Tensor a = f64({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  Tensor b = f64({1, 2, 3, 4}, {2, 2});
  a.watch();
  b.watch();
  std::vector<Tensor> g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradients(kiln::sum(kiln::matmul(a, b)), {a, b});
  }
  // dA: every row is B's row sums [3, 7]; dB: A^T @ ones summed over the batch.
  expect_values(g[0], {3, 7, 3, 7, 3, 7, 3, 7});
  EXPECT_EQ(g[1].shape(), (Shape{2, 2}));
  expect_values(g[1], {16, 16, 20, 20});
}

TEST(AutodiffHand, BroadcastInverseSumsTrailingDimensions) {
  // The example: A[2,3] * B[2] broadcasts B inversely; dB has shape [2].
  Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = f64({10, 20});
  a.watch();
  b.watch();
  std::vector<Tensor> g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradients(kiln::sum(a * b.inverse_broadcast()), {a, b});
  }
  EXPECT_EQ(g[1].shape(), (Shape{2}));
  expect_values(g[0], {10, 10, 10, 20, 20, 20});
  expect_values(g[1], {6, 15});
}

TEST(AutodiffHand, BroadcastNormalAndMarked) {
  Tensor a = f64({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  Tensor v = f64({1, 2, 3});
  a.watch();
  v.watch();
  std::vector<Tensor> normal, marked;
  {
    kiln::GradientContext ctx;
    normal = kiln::gradients(kiln::sum(a * v), {a, v});
    marked = kiln::gradients(kiln::sum(a * v.inverse_broadcast()), {a, v});
  }
  // Normal: v runs along the rows (columns summed); marked: v runs down (rows summed).
  expect_values(normal[0], {1, 2, 3, 1, 2, 3, 1, 2, 3});
  expect_values(normal[1], {12, 15, 18});
  expect_values(marked[0], {1, 1, 1, 2, 2, 2, 3, 3, 3});
  expect_values(marked[1], {6, 15, 24});
}

TEST(AutodiffHand, BroadcastOnesAndExpression) {
  Tensor p = f64({1, 2}, {2, 1});
  Tensor q = f64({1, 2, 3}, {1, 3});
  p.watch();
  q.watch();
  std::vector<Tensor> g;
  {
    kiln::GradientContext ctx;
    // y = sum(p*q + p - 2q) over the [2,3] grid.
    g = kiln::gradients(kiln::sum(p * q + p - q * 2.0), {p, q});
  }
  EXPECT_EQ(g[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(g[1].shape(), (Shape{1, 3}));
  expect_values(g[0], {6 + 3, 6 + 3});
  expect_values(g[1], {3 - 4, 3 - 4, 3 - 4});
}

TEST(AutodiffHand, SumMeanProd) {
  Tensor x = f64({2, 3, 4});
  Tensor m = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  x.watch();
  m.watch();
  kiln::GradientContext ctx;
  expect_values(kiln::gradient(kiln::prod(x), x), {12, 8, 6});
  expect_values(kiln::gradient(kiln::sum(m, {1}) * f64({1, 2}), m), {1, 1, 1, 2, 2, 2});
  expect_values(kiln::gradient(kiln::mean(m, {0}), m), {0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  expect_values(kiln::gradient(kiln::mean(m), m), F64(6, 1.0 / 6));
  // keepdims: the [2,1] result weighted by [[1],[3]].
  expect_values(kiln::gradient(kiln::sum(m, {-1}, true) * f64({1, 3}, {2, 1}), m),
                {1, 1, 1, 3, 3, 3});
}

TEST(AutodiffHand, ProdWithZeros) {
  Tensor one_zero = f64({2, 0, 4});
  Tensor two_zeros = f64({0, 3, 0});
  one_zero.watch();
  two_zeros.watch();
  kiln::GradientContext ctx;
  expect_values(kiln::gradient(kiln::prod(one_zero), one_zero), {0, 8, 0});
  expect_values(kiln::gradient(kiln::prod(two_zeros), two_zeros), {0, 0, 0});
  Tensor rows = f64({1, 0, 3, 2, 5, 7}, {2, 3});
  rows.watch();
  expect_values(kiln::gradient(kiln::prod(rows, {1}), rows), {0, 3, 0, 35, 14, 10});
}

TEST(AutodiffHand, MinMaxTiesShareEqually) {
  Tensor x = f64({1, 3, 3, 2});
  Tensor y = f64({2, 1, 1, 1});
  Tensor m = f64({1, 5, 5, 7, 2, 7}, {2, 3});
  x.watch();
  y.watch();
  m.watch();
  kiln::GradientContext ctx;
  expect_values(kiln::gradient(kiln::max(x), x), {0, 0.5, 0.5, 0});
  expect_values(kiln::gradient(kiln::min(y), y), {0, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  expect_values(kiln::gradient(kiln::max(m, {1}, true) * f64({1, 4}, {2, 1}), m),
                {0, 0.5, 0.5, 2, 0, 2});
  expect_values(kiln::gradient(kiln::min(m, {0}), m), {1, 0, 1, 0, 1, 0});
  // Elementwise: a tie gives each side half; the same operand twice gets all of it.
  Tensor a = f64({1, 2, 3});
  Tensor b = f64({1, 5, 0});
  a.watch();
  b.watch();
  const std::vector<Tensor> g = kiln::gradients(kiln::sum(kiln::maximum(a, b)), {a, b});
  expect_values(g[0], {0.5, 0, 1});
  expect_values(g[1], {0.5, 1, 0});
  const std::vector<Tensor> h = kiln::gradients(kiln::sum(kiln::minimum(a, b)), {a, b});
  expect_values(h[0], {0.5, 1, 0});
  expect_values(h[1], {0.5, 0, 1});
  expect_values(kiln::gradient(kiln::sum(kiln::maximum(a, a)), a), {1, 1, 1});
}

TEST(AutodiffHand, KinksAtZero) {
  Tensor x = f64({-2, 0, 3});
  x.watch();
  kiln::GradientContext ctx;
  expect_values(kiln::gradient(kiln::sum(kiln::abs(x)), x), {-1, 0, 1});
  expect_values(kiln::gradient(kiln::sum(kiln::relu(x)), x), {0, 0, 1});
}

TEST(AutodiffHand, Convolve) {
  Tensor a = f64({1, 2, 3, 4}, {4, 1});
  Tensor k = f64({3, -1}, {2, 1});
  a.watch();
  k.watch();
  kiln::GradientContext ctx;
  const Tensor out = kiln::convolve(a, k, {1});
  expect_values(out, {1, 3, 5});
  std::vector<Tensor> g = kiln::gradients(kiln::sum(out), {a, k});
  expect_values(g[0], {3, 2, 2, -1});
  expect_values(g[1], {6, 9});
  g = kiln::gradients(kiln::sum(out * f64({1, 2, 3})), {a, k});
  expect_values(g[0], {3, 5, 7, -3});
  expect_values(g[1], {14, 20});
  // Two filters, step 2: windows at 0 and 2 only.
  Tensor filters = f64({1, 1, 0, 2}, {2, 2, 1});
  filters.watch();
  g = kiln::gradients(kiln::sum(kiln::convolve(a, filters, {2})), {a, filters});
  expect_values(g[0], {1, 3, 1, 3});
  expect_values(g[1], {4, 6, 4, 6});
}

TEST(AutodiffHand, Conv2d) {
  F64 v(9);
  for (int i = 0; i < 9; ++i) v[i] = i + 1;
  Tensor x = f64(v, {1, 1, 3, 3});
  Tensor w = f64({1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor bias = f64({0.5});
  x.watch();
  w.watch();
  bias.watch();
  std::vector<Tensor> g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradients(kiln::sum(kiln::conv2d(x, w, bias)), {x, w, bias});
  }
  expect_values(g[0], {1, 2, 1, 2, 4, 2, 1, 2, 1});
  expect_values(g[1], {12, 16, 24, 28});
  expect_values(g[2], {4});
}

TEST(AutodiffHand, Pooling) {
  Tensor a = f64({1, 2, 3, 4}, {4, 1});
  Tensor b = f64({1, 3, 2, 5}, {4, 1});
  Tensor tie = f64({4, 4, 1}, {3, 1});
  a.watch();
  b.watch();
  tie.watch();
  kiln::GradientContext ctx;
  expect_values(kiln::gradient(kiln::sum(kiln::pooling_sum(a, {2}, {1})), a), {1, 2, 2, 1});
  expect_values(kiln::gradient(kiln::sum(kiln::pooling_sum(a, {2}, {2})), a), {1, 1, 1, 1});
  // Windows [1,3], [3,2], [2,5]: maxima 3, 3, 5.
  expect_values(kiln::gradient(kiln::sum(kiln::pooling_max(b, {2}, {1})), b), {0, 2, 0, 1});
  // Windows [4,4] (a tie) and [4,1].
  expect_values(kiln::gradient(kiln::sum(kiln::pooling_max(tie, {2}, {1})), tie), {0.5, 1.5, 0});

  F64 v(16);
  for (int i = 0; i < 16; ++i) v[i] = i + 1;
  Tensor img = f64(v, {1, 1, 4, 4});
  img.watch();
  expect_values(kiln::gradient(kiln::sum(kiln::max_pool2d(img, {2, 2})), img),
                {0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1});
  expect_values(kiln::gradient(kiln::sum(kiln::avg_pool2d(img, {2, 2})), img), F64(16, 0.25));
  // Overlapping windows (stride 1): the centre elements are in four windows.
  kiln::Pool2dOptions o;
  o.stride = {1, 1};
  expect_values(kiln::gradient(kiln::sum(kiln::avg_pool2d(img, {3, 3}, o)), img),
                {1. / 9, 2. / 9, 2. / 9, 1. / 9, 2. / 9, 4. / 9, 4. / 9, 2. / 9, 2. / 9, 4. / 9,
                 4. / 9, 2. / 9, 1. / 9, 2. / 9, 2. / 9, 1. / 9});
}

TEST(AutodiffHand, SlidingWindows) {
  Tensor a = f64({0, 1, 2, 3, 4});
  a.watch();
  kiln::GradientContext ctx;
  const Tensor w = kiln::sliding_window(a, {3}, {1});
  EXPECT_EQ(w.shape(), (Shape{3, 3}));
  expect_values(kiln::gradient(kiln::sum(w), a), {1, 2, 3, 2, 1});
  expect_values(kiln::gradient(kiln::sum(kiln::sliding_window(a, {3}, {2})), a), {1, 1, 2, 1, 1});
  // The gradient of unslide_window is each window reading back its positions.
  Tensor windows = f64({1, 1, 1, 1, 1, 1, 1, 1, 1}, {3, 3});
  windows.watch();
  const Tensor placed = kiln::unslide_window(windows, {5}, {1});
  expect_values(placed, {1, 2, 3, 2, 1});
  expect_values(kiln::gradient(kiln::sum(placed * f64({1, 2, 3, 4, 5})), windows),
                {1, 2, 3, 2, 3, 4, 3, 4, 5});
  // Gaps (step 3 with windows of 2): position 2 is in no window.
  Tensor two = f64({1, 1, 1, 1}, {2, 2});
  two.watch();
  expect_values(kiln::gradient(kiln::sum(kiln::unslide_window(two, {5}, {3}) *
                                         f64({1, 2, 3, 4, 5})),
                               two),
                {1, 2, 4, 5});
}

TEST(AutodiffHand, IndexingAccumulatesDuplicates) {
  Tensor a = f64({1, 2, 3});
  a.watch();
  kiln::GradientContext ctx;
  expect_values(kiln::gradient(kiln::sum(kiln::index(a, i64({0, 0, 2}, {3}))), a), {2, 0, 1});
  expect_values(kiln::gradient(kiln::sum(kiln::index_select(a, 0, i64({2, 2, 2, 1}, {4}))), a),
                {0, 1, 3});
  Tensor m = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  m.watch();
  expect_values(kiln::gradient(kiln::sum(kiln::gather(m, 1, i64({2, 2, 0, 1}, {2, 2}))), m),
                {0, 0, 2, 1, 1, 0});

  // index_set: positions that receive elements take their sum; the rest keep a.
  Tensor base = f64({1, 2, 3});
  Tensor b = f64({10, 20});
  base.watch();
  b.watch();
  const Tensor weights = f64({1, 2, 3});
  std::vector<Tensor> g =
      kiln::gradients(kiln::sum(kiln::index_set(base, b, i64({1, 1}, {2})) * weights), {base, b});
  expect_values(g[0], {1, 0, 3});
  expect_values(g[1], {2, 2});
  // A negative index drops its element: no gradient for it.
  g = kiln::gradients(kiln::sum(kiln::index_set(base, b, i64({1, -1}, {2})) * weights), {base, b});
  expect_values(g[0], {1, 0, 3});
  expect_values(g[1], {2, 0});

  // scatter_add: the target passes the gradient through; each source element reads its place.
  Tensor target = f64({0, 0, 0});
  Tensor src = f64({1, 1, 1, 1});
  target.watch();
  src.watch();
  g = kiln::gradients(
      kiln::sum(kiln::scatter_add(target, 0, i64({2, 0, 2, 1}, {4}), src) * weights),
      {target, src});
  expect_values(g[0], {1, 2, 3});
  expect_values(g[1], {3, 1, 3, 2});
}

TEST(AutodiffHand, ShapeOps) {
  Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  x.watch();
  kiln::GradientContext ctx;
  expect_values(kiln::gradient(kiln::sum(kiln::repeat(x, {2, 3})), x), F64(6, 6));
  expect_values(kiln::gradient(kiln::sum(kiln::pad(x, {1, 1}, {2, 0}, 7.0)), x), F64(6, 1));
  expect_values(kiln::gradient(kiln::sum(kiln::extend(x, {4, 7}, {1, 0}, {2, -2})), x),
                F64(6, 1));
  // concat with itself: each element appears twice.
  expect_values(kiln::gradient(kiln::sum(kiln::concat({x, x, x.slice({0, 0}, {2, 1})}, 1)), x),
                {3, 2, 2, 3, 2, 2});
  // A slice with a negative step, weighted by position.
  const Tensor s = x.slice({1, 2}, {-3, -4}, {-1, -2});  // rows 1,0; columns 2,0
  expect_values(s, {6, 4, 3, 1});
  expect_values(kiln::gradient(kiln::sum(s * f64({1, 2, 3, 4}, {2, 2})), x), {4, 0, 3, 2, 0, 1});
  expect_values(kiln::gradient(kiln::sum(kiln::permute(x, {1, 0}) * f64({1, 2, 3, 4, 5, 6},
                                                                        {3, 2})),
                               x),
                {1, 3, 5, 2, 4, 6});
}

TEST(AutodiffHand, SoftmaxAndCrossEntropy) {
  Tensor logits = f64({0, 0, 0, 0, 0, 0}, {2, 3});
  logits.watch();
  kiln::GradientContext ctx;
  // softmax rows sum to 1 whatever the input: zero gradient.
  expect_values(kiln::gradient(kiln::sum(kiln::softmax(logits)), logits), F64(6, 0), 1e-15);
  // (softmax - one_hot) / N.
  expect_values(kiln::gradient(kiln::cross_entropy(logits, i64({0, 2}, {2})), logits),
                {-1. / 3, 1. / 6, 1. / 6, 1. / 6, 1. / 6, -1. / 3}, 1e-14);
  // d logsumexp = softmax.
  Tensor x = f64({1, 2, 3});
  x.watch();
  const double z = std::exp(1) + std::exp(2) + std::exp(3);
  expect_values(kiln::gradient(kiln::logsumexp(x), x),
                {std::exp(1) / z, std::exp(2) / z, std::exp(3) / z}, 1e-14);
}

TEST(AutodiffHand, MapElementsWithDerivative) {
  Tensor x = f64({0.5, 1, 2});
  x.watch();
  kiln::GradientContext ctx;
  const Tensor y = kiln::map_elements(
      x, [](double v) { return v * v * v; }, [](double v) { return 3 * v * v; });
  expect_values(kiln::gradient(kiln::sum(y), x), {0.75, 3, 12});
}

// ---- second derivatives -------------------------------------------------------------------------

TEST(AutodiffSecondOrder, CubeSecondAndThirdDerivatives) {
  Tensor x = f64({1, 2, 3});
  x.watch();
  kiln::GradientContext ctx;
  const Tensor g = kiln::gradient(kiln::sum(x * x * x), x);
  expect_values(g, {3, 12, 27});
  const Tensor gg = kiln::gradient(kiln::sum(g), x);
  expect_values(gg, {6, 12, 18});
  const Tensor ggg = kiln::gradient(kiln::sum(gg), x);
  expect_values(ggg, {6, 6, 6});
}

TEST(AutodiffSecondOrder, MixedPartialsAndTanh) {
  Tensor x = f64({2}, {});
  Tensor z = f64({3}, {});
  x.watch();
  z.watch();
  kiln::GradientContext ctx;
  const Tensor y = x * x * z * z * z;  // x^2 z^3
  const std::vector<Tensor> g = kiln::gradients(y, {x, z});
  expect_values(g[0], {2 * 2 * 27});  // 2 x z^3
  expect_values(g[1], {4 * 3 * 9});   // 3 x^2 z^2
  // d/dz (2 x z^3) = 6 x z^2 = d/dx (3 x^2 z^2).
  expect_values(kiln::gradient(g[0], z), {108});
  expect_values(kiln::gradient(g[1], x), {108});
  expect_values(kiln::gradient(g[0], x), {2 * 27});  // 2 z^3

  Tensor t = f64({-0.7, 0.2, 1.3});
  t.watch();
  const Tensor dt = kiln::gradient(kiln::sum(kiln::tanh(t)), t);
  const Tensor d2t = kiln::gradient(kiln::sum(dt), t);
  F64 expected;
  for (double v : {-0.7, 0.2, 1.3}) expected.push_back(-2 * std::tanh(v) * (1 - std::tanh(v) * std::tanh(v)));
  expect_values(d2t, expected, 1e-12);
}

TEST(AutodiffSecondOrder, NeedsTheFirstGradientBuiltInAContext) {
  Tensor x = f64({1, 2});
  x.watch();
  Tensor y;
  {
    kiln::GradientContext ctx;
    y = kiln::sum(x * x);
  }
  const Tensor g = kiln::gradient(y, x);  // built outside any context
  expect_values(g, {2, 4});
  const Tensor s = kiln::sum(g);
  const kiln::Error e = error_of([&] { (void)kiln::gradient(s, x); });
  EXPECT_EQ(e.code(), ErrorCode::illegal_derive);
  EXPECT_TRUE(contains(e.what(), "gradient context")) << e.what();
}

TEST(AutodiffSecondOrder, MapElementsHasNoSecondDerivative) {
  Tensor x = f64({1, 2});
  x.watch();
  kiln::GradientContext ctx;
  const Tensor g = kiln::gradient(
      kiln::sum(kiln::map_elements(
          x, [](double v) { return v * v * v; }, [](double v) { return 3 * v * v; })),
      x);
  expect_values(g, {3, 12});
  const kiln::Error e = error_of([&] { (void)kiln::gradient(kiln::sum(g), x); });
  EXPECT_EQ(e.code(), ErrorCode::illegal_derive) << e.what();
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(AutodiffErrors, UnwatchedVariable) {
  Tensor x = f64({1, 2});
  x.set_name("weights");
  Tensor w = f64({3, 4});
  w.watch();
  Tensor y;
  {
    kiln::GradientContext ctx;
    y = kiln::sum(x * w);
  }
  const kiln::Error e = error_of([&] { (void)kiln::gradients(y, {w, x}); });
  EXPECT_EQ(e.code(), ErrorCode::illegal_derive);
  EXPECT_TRUE(contains(e.what(), "not watched")) << e.what();
  EXPECT_TRUE(contains(e.what(), "weights")) << e.what();
  // Unwatching takes the mark away again.
  w.unwatch();
  EXPECT_EQ(error_of([&] { (void)kiln::gradient(y, w); }).code(), ErrorCode::illegal_derive);
}

TEST(AutodiffErrors, OutputBuiltOutsideAContext) {
  Tensor x = f64({1, 2});
  x.watch();
  const Tensor y = kiln::sum(x * x);
  ASSERT_FALSE(kiln::in_gradient_context());
  const kiln::Error e = error_of([&] { (void)kiln::gradient(y, x); });
  EXPECT_EQ(e.code(), ErrorCode::illegal_derive);
  EXPECT_TRUE(contains(e.what(), "gradient context")) << e.what();
  // The message says which of the two problems it is.
  EXPECT_FALSE(contains(e.what(), "not watched")) << e.what();
  // backward() refuses it the same way.
  EXPECT_EQ(error_of([&] { y.backward(); }).code(), ErrorCode::illegal_derive);
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutodiffErrors, OpsWithoutDerivative) {
  Tensor x = f64({1, 2, 3, 4}, {2, 2});
  x.watch();
  kiln::GradientContext ctx;
  const Tensor m = kiln::map_elements(x, [](double v) { return v * 2; });
  kiln::Error e = error_of([&] { (void)kiln::gradient(kiln::sum(m), x); });
  EXPECT_EQ(e.code(), ErrorCode::illegal_derive);
  EXPECT_TRUE(contains(e.what(), "derivative")) << e.what();
  const Tensor r = kiln::reduce_rows(x, 1, [](std::span<const double> row, std::span<double> out) {
    out[0] = row[0] + row[1];
  });
  e = error_of([&] { (void)kiln::gradient(kiln::sum(r), x); });
  EXPECT_EQ(e.code(), ErrorCode::illegal_derive);
  EXPECT_TRUE(contains(e.what(), "reduce_rows")) << e.what();
}

TEST(AutodiffErrors, BackwardNeedsOneElement) {
  Tensor x = f64({1, 2});
  x.watch();
  kiln::GradientContext ctx;
  const Tensor y = x * x;
  EXPECT_EQ(error_of([&] { y.backward(); }).code(), ErrorCode::illegal_derive);
  // One element of any rank is fine.
  const Tensor one = kiln::sum(y, {0}, true);
  EXPECT_EQ(one.shape(), (Shape{1}));
  one.backward();
  expect_values(x.grad(), {2, 4});
}

// ---- backward(), grad(), zero_grad() ------------------------------------------------------------

TEST(AutodiffBackward, AccumulatesAndZeroes) {
  Tensor x = f64({1, 2, 3});
  Tensor w = f64({4, 5, 6});
  Tensor c = f64({1, 1, 1});  // not watched
  x.watch();
  w.watch();
  EXPECT_FALSE(x.grad().defined());
  kiln::GradientContext ctx;
  const Tensor y = kiln::sum(x * w + c);
  y.backward();
  expect_values(x.grad(), {4, 5, 6});
  expect_values(w.grad(), {1, 2, 3});
  EXPECT_FALSE(c.grad().defined());
  EXPECT_EQ(x.grad().shape(), (Shape{3}));
  EXPECT_EQ(x.grad().dtype(), DType::f64);
  EXPECT_TRUE(x.grad().is_evaluated());

  y.backward();  // accumulates
  expect_values(x.grad(), {8, 10, 12});
  expect_values(w.grad(), {2, 4, 6});

  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  expect_values(w.grad(), {2, 4, 6});
  y.backward();
  expect_values(x.grad(), {4, 5, 6});
  expect_values(w.grad(), {3, 6, 9});

  // Another output adds into the same grad().
  kiln::sum(x * x).backward();
  expect_values(x.grad(), {4 + 2, 5 + 4, 6 + 6});
  expect_values(w.grad(), {3, 6, 9});
}

TEST(AutodiffBackward, GradIsASnapshotNotTheGraph) {
  Tensor x = f64({2, 3});
  x.watch();
  kiln::GradientContext ctx;
  kiln::sum(kiln::exp(x)).backward();
  const Tensor g = x.grad();
  expect_values(g, {std::exp(2), std::exp(3)});
  EXPECT_TRUE(g.inputs().empty());  // a leaf
  // A later backward() replaces grad() but leaves the earlier handle's values alone.
  kiln::sum(x).backward();
  expect_values(g, {std::exp(2), std::exp(3)});
  expect_values(x.grad(), {std::exp(2) + 1, std::exp(3) + 1});
}

TEST(AutodiffBackward, Float32StaysFloat32) {
  Tensor x = f32({1.5f, -2.f}, {2});
  x.watch();
  kiln::GradientContext ctx;
  kiln::sum(x * x).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), DType::f32);
  const std::vector<float> g = x.grad().to_vector<float>();
  EXPECT_FLOAT_EQ(g[0], 3.f);
  EXPECT_FLOAT_EQ(g[1], -4.f);
}

// ---- dtype rules ------------------------------------------------------------------------------------

TEST(AutodiffTypes, FloatTypeOfTheGradient) {
  Tensor x32 = f32({1.f, 2.f}, {2});
  Tensor x64 = f64({1, 2});
  Tensor xi = Tensor::from(std::vector<std::int32_t>{1, 2});
  x32.watch();
  x64.watch();
  xi.watch();
  kiln::GradientContext ctx;
  // f32 output, f32 variable: f32.
  Tensor g = kiln::gradient(kiln::sum(x32 * x32 * 3.f), x32);
  EXPECT_EQ(g.dtype(), DType::f32);
  EXPECT_EQ(g.shape(), (Shape{2}));
  expect_values(g, {6, 12}, 1e-6);
  // f64 output, f32 variable: f64.
  g = kiln::gradient(kiln::sum(kiln::convert(x32, DType::f64) * 3.0), x32);
  EXPECT_EQ(g.dtype(), DType::f64);
  expect_values(g, {3, 3});
  // f32 output, f64 variable: f64.
  g = kiln::gradient(kiln::sum(kiln::convert(x64, DType::f32) * 2.f), x64);
  EXPECT_EQ(g.dtype(), DType::f64);
  expect_values(g, {2, 2});
  // An integer variable: f64.
  g = kiln::gradient(kiln::sum(kiln::convert(xi, DType::f32) * 2.f), xi);
  EXPECT_EQ(g.dtype(), DType::f64);
  EXPECT_EQ(g.shape(), (Shape{2}));
  // A variable the output does not depend on: zeros of its shape and the same type rule.
  const std::vector<Tensor> gs = kiln::gradients(kiln::sum(x32 * 2.f), {x32, x64});
  EXPECT_EQ(gs[1].dtype(), DType::f64);
  EXPECT_EQ(gs[1].shape(), (Shape{2}));
  expect_values(gs[1], {0, 0});
  Tensor other32 = f32({1.f, 1.f, 1.f}, {3});
  other32.watch();
  g = kiln::gradient(kiln::sum(x32), other32);
  EXPECT_EQ(g.dtype(), DType::f32);
  EXPECT_EQ(g.shape(), (Shape{3}));
  expect_values(g, {0, 0, 0});
}

TEST(AutodiffTypes, OutputThatIsTheVariable) {
  Tensor x = f64({1, 2, 3, 4}, {2, 2});
  x.watch();
  // A watched y may be built anywhere: dy/dy is ones.
  const Tensor g = kiln::gradient(x, x);
  EXPECT_EQ(g.shape(), (Shape{2, 2}));
  expect_values(g, {1, 1, 1, 1});
}

TEST(AutodiffTypes, GradientIsALazyGraphOfOrdinaryOps) {
  Tensor x = f64({0.5, 1.5});
  x.watch();
  Tensor g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradient(kiln::sum(kiln::sin(x) * x), x);
  }
  EXPECT_FALSE(g.is_evaluated());
  EXPECT_FALSE(g.inputs().empty());
  const std::string printed = kiln::graph_to_string(g);
  EXPECT_TRUE(contains(printed, "cos")) << printed;
  kiln::eval_all({g});
  EXPECT_TRUE(g.is_evaluated());
  expect_values(g, {std::cos(0.5) * 0.5 + std::sin(0.5), std::cos(1.5) * 1.5 + std::sin(1.5)});
}

// ---- non-differentiable ops ----------------------------------------------------------------------

// A gradient asked through index or boolean values used as data (argmax, comparisons, a
// conversion to integers) is refused, naming the op that cuts the path, as libtorch refuses it;
// silent zeros would look like a result.
TEST(AutodiffNonDifferentiable, AGradientOnlyThroughIndexOrBoolValuesIsAnError) {
  Tensor x = f64({-1.5, 0.5, 2.5, 3.0});
  x.watch();
  kiln::GradientContext ctx;
  const auto refused = [&](const Tensor& y, const std::string& op) {
    const kiln::Error e = kiln_test::error_of([&] { kiln::gradient(y, x); });
    EXPECT_EQ(e.code(), kiln::ErrorCode::illegal_derive) << op << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("only through " + op + " "), std::string::npos)
        << e.what();
  };
  refused(kiln::sum(kiln::convert(kiln::greater(x, 0.0), DType::f64)), "greater");
  refused(kiln::convert(kiln::argmax(x, 0), DType::f64), "argmax");
  refused(kiln::convert(kiln::argmin(x), DType::f64), "argmin");
  refused(kiln::sum(kiln::convert(kiln::convert(x, DType::i32), DType::f64)), "convert");
  refused(kiln::sum(kiln::convert(kiln::even(kiln::convert(x, DType::i64)), DType::f64)), "even");
  // The case: argmax of a matrix, as f32, summed.
  Tensor w = kiln::uniform({2, 3}, 4);
  w.watch();
  const kiln::Error argmax_error = kiln_test::error_of(
      [&] { kiln::gradients(kiln::argmax(w, 1).to(DType::f32).sum(), {w}); });
  EXPECT_EQ(argmax_error.code(), kiln::ErrorCode::illegal_derive);
  EXPECT_NE(std::string(argmax_error.what()).find("argmax i64[2]"), std::string::npos)
      << argmax_error.what();
  const F64 zero(4, 0.0);
  // A selector (where's condition, compare's choice of two constants) and a float-valued
  // piecewise constant op pass zeros, as libtorch's floor does; so does a variable the output
  // does not depend on at all.
  expect_values(
      kiln::gradient(kiln::sum(kiln::compare(x, f64({0, 0, 3, 3}), kiln::Comparison::less_equal,
                                             2.0, -1.0)),
                     x),
      zero);
  expect_values(kiln::gradient(kiln::sum(kiln::floor(x)), x), zero);
  expect_values(kiln::gradient(kiln::sum(f64({1, 2}) * 2.0), x), zero);
  // The value still flows where the op is combined with x itself.
  expect_values(kiln::gradient(kiln::sum(kiln::convert(kiln::sign(x), DType::f64) * x), x),
                {-1, 1, 1, 1});
  // A data-dependent condition carries no gradient; the chosen branch does.
  expect_values(kiln::gradient(kiln::sum(kiln::where(kiln::greater(x, 1.0), x * 3.0, x * -1.0)),
                               x),
                {-1, -1, 3, 3});
}

TEST(AutodiffNonDifferentiable, RandomValuesAreConstants) {
  Tensor x = f64({1, 2, 3, 4});
  x.watch();
  kiln::GradientContext ctx;
  const Tensor u = kiln::uniform({4}, 99);
  const Tensor n = kiln::random_normal({4}, 5);
  expect_values(kiln::gradient(kiln::sum(x * u + n), x), values(kiln::uniform({4}, 99)));
  expect_values(kiln::gradient(kiln::sum(x * 2.0 + kiln::uniform({4}, 3)), x), {2, 2, 2, 2});
  // permutate moves the elements: the gradient moves them back.
  const Tensor order = kiln::permutate(f64({0, 1, 2, 3}), 0, 17);
  const F64 p = values(order);
  const F64 w = {1, 10, 100, 1000};
  const F64 g = values(kiln::gradient(kiln::sum(kiln::permutate(x, 0, 17) * f64(w)), x));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(g[static_cast<std::size_t>(p[i])], w[i]) << i;
}

TEST(AutodiffNonDifferentiable, DropoutUsesTheSameMask) {
  F64 v(40);
  for (int i = 0; i < 40; ++i) v[i] = 1 + i;
  Tensor x = f64(v, {4, 10});
  x.watch();
  kiln::GradientContext ctx;
  const Tensor d = kiln::dropout(x, 0.5, 42);
  const F64 kept = values(d);
  const F64 g = values(kiln::gradient(kiln::sum(d * 3.0), x));
  int dropped = 0;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(g[i], kept[i] != 0 ? 3.0 * 2.0 : 0.0) << i;  // kept values are scaled by 1 / 0.5
    if (kept[i] == 0) ++dropped;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 40);
  // The same seed is the same mask in the gradient of a rebuilt dropout too.
  expect_values(kiln::gradient(kiln::sum(kiln::dropout(x, 0.5, 42)), x),
                values(kiln::dropout(kiln::ones({4, 10}, DType::f64), 0.5, 42)));
}

// ---- one variable used many times; long chains ---------------------------------------------------

TEST(AutodiffScale, VariableUsedManyTimes) {
  Tensor x = f64({0.5, 1.0, 1.1});
  x.watch();
  kiln::GradientContext ctx;
  Tensor z = x;
  for (int i = 0; i < 1000; ++i) z = z + x;
  expect_values(kiln::gradient(kiln::sum(z), x), {1001, 1001, 1001});
  // x^31 by repeated multiplication: 31 x^30.
  Tensor p = x;
  for (int i = 0; i < 30; ++i) p = p * x;
  F64 expected;
  for (double v : {0.5, 1.0, 1.1}) expected.push_back(31 * std::pow(v, 30));
  expect_values(kiln::gradient(kiln::sum(p), x), expected, 1e-12);
  // In many ops of one expression and in several outputs at once.
  const Tensor e = kiln::sum(kiln::concat({x, x * x, kiln::sin(x)}, 0)) + kiln::dot(x, x);
  F64 de;
  for (double v : {0.5, 1.0, 1.1}) de.push_back(1 + 2 * v + std::cos(v) + 2 * v);
  expect_values(kiln::gradient(e, x), de, 1e-12);
}

TEST(AutodiffScale, ExponentiallyManyPathsInLinearWork) {
  // z doubles 60 times through z + z: 2^60 paths from z to x, one node per step.
  Tensor x = f64({1.0});
  x.watch();
  Tensor g;
  {
    kiln::GradientContext ctx;
    Tensor z = x;
    for (int i = 0; i < 60; ++i) z = z + z;
    g = kiln::gradient(kiln::sum(z), x);
  }
  EXPECT_LT(kiln::topological_order(g).size(), 60u * 10);
  expect_values(g, {std::ldexp(1.0, 60)});
}

using kiln_test::slow_build;

TEST(AutodiffScale, ChainOf10000Ops) {
  constexpr int kSteps = 3334;  // three ops per step: sin, mul, add -> 10,002 ops
  const F64 start = {-1.0, 0.3, 2.0};
  Tensor x = f64(start);
  x.watch();
  const auto t0 = std::chrono::steady_clock::now();
  Tensor y, g;
  std::size_t forward_nodes = 0;
  {
    kiln::GradientContext ctx;
    Tensor z = x;
    for (int i = 0; i < kSteps; ++i) z = z + kiln::sin(z) * 0.001;
    y = kiln::sum(z);
    forward_nodes = kiln::topological_order(y).size();
    g = kiln::gradient(y, x);
  }
  const F64 got = values(g);
  const double value = y.item<double>();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Reference: the same recurrence and its derivative product in plain C++.
  double ref_value = 0;
  F64 ref_grad;
  for (double z : start) {
    double d = 1;
    for (int i = 0; i < kSteps; ++i) {
      d *= 1 + 0.001 * std::cos(z);
      z = z + std::sin(z) * 0.001;
    }
    ref_value += z;
    ref_grad.push_back(d);
  }
  EXPECT_NEAR(value, ref_value, 1e-9 * std::abs(ref_value));
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[i], ref_grad[i], 1e-9 * ref_grad[i]) << i;
  EXPECT_GT(ref_grad[1], 1.2);  // the gradient is far from trivial

  // Linear size: the backward graph has a bounded number of nodes per forward op.
  EXPECT_GE(forward_nodes, 10000u);
  EXPECT_LT(kiln::topological_order(g).size(), 10 * forward_nodes);
  // Building, differentiating and evaluating the whole chain is quick.
  EXPECT_LT(seconds, slow_build() ? 20.0 : 2.0) << "seconds: " << seconds;
}

TEST(AutodiffScale, LongChainBackwardAndDestruction) {
  Tensor x = f64({0.25, -0.5});
  x.watch();
  {
    kiln::GradientContext ctx;
    Tensor z = x;
    for (int i = 0; i < 10000; ++i) z = (i % 2 == 0) ? z * 1.0001 : z - 0.5;
    kiln::sum(z).backward();
  }  // the graph dies here without recursing through 10,000 nodes
  const double expected = std::pow(1.0001, 5000);
  expect_values(x.grad(), {expected, expected}, 1e-10);
}

}  // namespace
