// Sliding windows and what is built on them: sliding_window / unslide_window (Flint's
// fsliding_window / funslide_window with the spec's examples), convolve and pooling_sum /
// pooling_max (Flint's n-dimensional forms), and the PyTorch-style conv2d, max_pool2d and
// avg_pool2d. Hand values plus checks against direct nested-loop computations over random shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
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
using I64s = std::vector<std::int64_t>;

using kiln_test::code_of;

using kiln_test::numel_of;

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

std::vector<std::int64_t> unravel(std::int64_t pos, const Shape& s) {
  std::vector<std::int64_t> idx(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    idx[d] = pos % s[d];
    pos /= s[d];
  }
  return idx;
}

// 0, 1, 2, ... in shape `s` (f64).
Tensor iota(const Shape& s) {
  Vd v(static_cast<std::size_t>(numel_of(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from(v, s);
}

Vd iota_values(std::int64_t n, double start = 0) {
  Vd v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i);
  return v;
}

// Compares with a tolerance fitting the dtype: 1e-4 relative for f32, 1e-10 relative for f64.
::testing::AssertionResult close_values(const Vd& got, const Vd& want, DType t) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " instead of " << want.size();
  const double rel = t == DType::f32 ? 1e-4 : 1e-10;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tol = rel * std::max(1.0, std::abs(want[i]));
    if (!(std::abs(got[i] - want[i]) <= tol))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// ---- nested-loop references -----------------------------------------------------------------

std::int64_t window_count(std::int64_t n, std::int64_t k, std::int64_t s) {
  return (n - k) / s + 1;
}

// Reference sliding window: [count, size...], the innermost dimension moving fastest.
Vd ref_sliding(const Vd& a, const Shape& shape, const Shape& size, const I64s& steps,
               Shape* out_shape = nullptr) {
  const std::size_t r = shape.size();
  Shape counts(r);
  for (std::size_t d = 0; d < r; ++d) counts[d] = window_count(shape[d], size[d], steps[d]);
  const auto st = strides_of(shape);
  Vd out;
  for (std::int64_t w = 0; w < numel_of(counts); ++w) {
    const auto pos = unravel(w, counts);
    for (std::int64_t e = 0; e < numel_of(size); ++e) {
      const auto off = unravel(e, size);
      std::int64_t src = 0;
      for (std::size_t d = 0; d < r; ++d) src += (pos[d] * steps[d] + off[d]) * st[d];
      out.push_back(a[static_cast<std::size_t>(src)]);
    }
  }
  if (out_shape) {
    *out_shape = {numel_of(counts)};
    out_shape->insert(out_shape->end(), size.begin(), size.end());
  }
  return out;
}

// Reference unslide: windows [count, size...] summed back into `shape`.
Vd ref_unslide(const Vd& windows, const Shape& size, const Shape& shape, const I64s& steps) {
  const std::size_t r = shape.size();
  Shape counts(r);
  for (std::size_t d = 0; d < r; ++d) counts[d] = window_count(shape[d], size[d], steps[d]);
  const auto st = strides_of(shape);
  Vd out(static_cast<std::size_t>(numel_of(shape)), 0.0);
  std::size_t i = 0;
  for (std::int64_t w = 0; w < numel_of(counts); ++w) {
    const auto pos = unravel(w, counts);
    for (std::int64_t e = 0; e < numel_of(size); ++e, ++i) {
      const auto off = unravel(e, size);
      std::int64_t dst = 0;
      for (std::size_t d = 0; d < r; ++d) dst += (pos[d] * steps[d] + off[d]) * st[d];
      out[static_cast<std::size_t>(dst)] += windows[i];
    }
  }
  return out;
}

// Reference Flint convolve. kernel_shape has n (one filter) or n + 1 (filters first) dims.
Vd ref_convolve(const Vd& a, const Shape& shape, const Vd& k, const Shape& kshape,
                const I64s& steps, Shape* out_shape) {
  const std::size_t n = shape.size();
  const bool filters = kshape.size() == n + 1;
  const std::int64_t f = filters ? kshape[0] : 1;
  const Shape window(kshape.begin() + (filters ? 1 : 0), kshape.end());
  Shape counts(n - 1);
  for (std::size_t d = 0; d + 1 < n; ++d) counts[d] = window_count(shape[d], window[d], steps[d]);
  const auto st = strides_of(shape);
  const std::int64_t kn = numel_of(window);
  Vd out;
  for (std::int64_t w = 0; w < numel_of(counts); ++w) {
    const auto pos = unravel(w, counts);
    for (std::int64_t fi = 0; fi < f; ++fi) {
      double acc = 0;
      for (std::int64_t e = 0; e < kn; ++e) {
        const auto off = unravel(e, window);
        std::int64_t src = 0;
        for (std::size_t d = 0; d < n; ++d)
          src += ((d + 1 < n ? pos[d] * steps[d] : 0) + off[d]) * st[d];
        acc += a[static_cast<std::size_t>(src)] * k[static_cast<std::size_t>(fi * kn + e)];
      }
      out.push_back(acc);
    }
  }
  *out_shape = counts;
  if (filters) out_shape->push_back(f);
  return out;
}

// Reference Flint pooling (sum or max): windows over the first n - 1 dims, whole last dim.
Vd ref_pooling(const Vd& a, const Shape& shape, const Shape& window, const I64s& steps,
               bool is_max, Shape* out_shape) {
  const std::size_t n = shape.size();
  Shape counts(n - 1);
  for (std::size_t d = 0; d + 1 < n; ++d) counts[d] = window_count(shape[d], window[d], steps[d]);
  Shape full_window = window;
  full_window.push_back(shape.back());
  const auto st = strides_of(shape);
  Vd out;
  for (std::int64_t w = 0; w < numel_of(counts); ++w) {
    const auto pos = unravel(w, counts);
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (std::int64_t e = 0; e < numel_of(full_window); ++e) {
      const auto off = unravel(e, full_window);
      std::int64_t src = 0;
      for (std::size_t d = 0; d < n; ++d)
        src += ((d + 1 < n ? pos[d] * steps[d] : 0) + off[d]) * st[d];
      const double v = a[static_cast<std::size_t>(src)];
      acc = is_max ? std::max(acc, v) : acc + v;
    }
    out.push_back(acc);
  }
  *out_shape = counts;
  return out;
}

struct Conv2dCase {
  std::int64_t n, c, h, w, o, kh, kw;
  std::array<std::int64_t, 2> stride, padding, dilation;
  bool bias;
};

std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                      std::int64_t dil) {
  return (in + 2 * p - dil * (k - 1) - 1) / s + 1;
}

// Direct PyTorch conv2d: x [N,C,H,W], w [O,C,kH,kW], b [O] -> [N,O,oH,oW].
Vd ref_conv2d(const Vd& x, const Vd& w, const Vd& b, const Conv2dCase& p) {
  const std::int64_t oh = out_size(p.h, p.kh, p.stride[0], p.padding[0], p.dilation[0]);
  const std::int64_t ow = out_size(p.w, p.kw, p.stride[1], p.padding[1], p.dilation[1]);
  Vd out;
  for (std::int64_t n = 0; n < p.n; ++n)
    for (std::int64_t o = 0; o < p.o; ++o)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          double acc = p.bias ? b[static_cast<std::size_t>(o)] : 0.0;
          for (std::int64_t c = 0; c < p.c; ++c)
            for (std::int64_t u = 0; u < p.kh; ++u)
              for (std::int64_t v = 0; v < p.kw; ++v) {
                const std::int64_t y = i * p.stride[0] - p.padding[0] + u * p.dilation[0];
                const std::int64_t z = j * p.stride[1] - p.padding[1] + v * p.dilation[1];
                if (y < 0 || y >= p.h || z < 0 || z >= p.w) continue;
                acc += x[static_cast<std::size_t>(((n * p.c + c) * p.h + y) * p.w + z)] *
                       w[static_cast<std::size_t>(((o * p.c + c) * p.kh + u) * p.kw + v)];
              }
          out.push_back(acc);
        }
  return out;
}

struct Pool2dCase {
  std::int64_t n, c, h, w, kh, kw;
  std::array<std::int64_t, 2> stride;  // {0,0}: the kernel
  std::array<std::int64_t, 2> padding, dilation;
};

// Direct PyTorch max_pool2d (padding never wins) / avg_pool2d (count_include_pad=True).
Vd ref_pool2d(const Vd& x, const Pool2dCase& p, bool is_max, Shape* out_shape) {
  const std::array<std::int64_t, 2> s =
      (p.stride[0] == 0 && p.stride[1] == 0) ? std::array<std::int64_t, 2>{p.kh, p.kw} : p.stride;
  const std::int64_t oh = out_size(p.h, p.kh, s[0], p.padding[0], p.dilation[0]);
  const std::int64_t ow = out_size(p.w, p.kw, s[1], p.padding[1], p.dilation[1]);
  Vd out;
  for (std::int64_t n = 0; n < p.n; ++n)
    for (std::int64_t c = 0; c < p.c; ++c)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (std::int64_t u = 0; u < p.kh; ++u)
            for (std::int64_t v = 0; v < p.kw; ++v) {
              const std::int64_t y = i * s[0] - p.padding[0] + u * p.dilation[0];
              const std::int64_t z = j * s[1] - p.padding[1] + v * p.dilation[1];
              const bool inside = y >= 0 && y < p.h && z >= 0 && z < p.w;
              const double val =
                  inside ? x[static_cast<std::size_t>(((n * p.c + c) * p.h + y) * p.w + z)]
                         : (is_max ? -std::numeric_limits<double>::infinity() : 0.0);
              acc = is_max ? std::max(acc, val) : acc + val;
            }
          out.push_back(is_max ? acc : acc / static_cast<double>(p.kh * p.kw));
        }
  *out_shape = {p.n, p.c, oh, ow};
  return out;
}

// ---- sliding_window -----------------------------------------------------------------------

TEST(SlidingWindow, SpecExample1) {
  const Tensor a = kiln::tensor<std::int32_t>({{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  const Tensor w = kiln::sliding_window(a, {3, 2}, {1, 1});
  EXPECT_EQ(w.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(w.dtype(), DType::i32);
  EXPECT_EQ(w.to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 2, 3, 4, 5, 6, 7}));
}

TEST(SlidingWindow, SpecExample2) {
  const Tensor a = kiln::tensor<double>({{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}},
                                         {{1, 2, 3}, {2, 3, 4}, {3, 4, 5}},
                                         {{2, 3, 4}, {3, 4, 5}, {4, 5, 6}},
                                         {{3, 4, 5}, {4, 5, 6}, {5, 6, 7}}}, kiln::DType::f64);
  const Tensor w = kiln::sliding_window(a, {2, 2, 2}, {2, 1, 2});
  EXPECT_EQ(w.shape(), (Shape{4, 2, 2, 2}));
  // [[[[0,1],[1,2]],[[1,2],[2,3]]], [[[1,2],[2,3]],[[2,3],[3,4]]],
  //  [[[2,3],[3,4]],[[3,4],[4,5]]], [[[3,4],[4,5]],[[4,5],[5,6]]]]
  EXPECT_EQ(w.to_vector<double>(),
            (Vd{0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6}));
}

TEST(SlidingWindow, WindowEqualToInput) {
  const Tensor a = iota({3, 4});
  const Tensor w = kiln::sliding_window(a, {3, 4}, {1, 1});
  EXPECT_EQ(w.shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(w.to_vector<double>(), iota_values(12));
  // Any step gives the single window as well.
  const Tensor w2 = kiln::sliding_window(a, {3, 4}, {5, 7});
  EXPECT_EQ(w2.shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(w2.to_vector<double>(), iota_values(12));
}

TEST(SlidingWindow, StepLargerThanWindow1D) {
  // floor((10 - 2) / 3) + 1 = 3 windows at 0, 3, 6.
  const Tensor w = kiln::sliding_window(iota({10}), {2}, {3});
  EXPECT_EQ(w.shape(), (Shape{3, 2}));
  EXPECT_EQ(w.to_vector<double>(), (Vd{0, 1, 3, 4, 6, 7}));
}

TEST(SlidingWindow, StepLargerThanWindow2DInnermostFastest) {
  // [5,6]: rows at 0, 3; columns at 0, 4. Window order: (0,0), (0,4), (3,0), (3,4).
  const Tensor w = kiln::sliding_window(iota({5, 6}), {2, 2}, {3, 4});
  EXPECT_EQ(w.shape(), (Shape{4, 2, 2}));
  EXPECT_EQ(w.to_vector<double>(),
            (Vd{0, 1, 6, 7, 4, 5, 10, 11, 18, 19, 24, 25, 22, 23, 28, 29}));
}

TEST(SlidingWindow, AgainstNestedLoops) {
  std::mt19937 rng(1234);
  for (int t = 0; t < 12; ++t) {
    const std::size_t rank = 1 + rng() % 3;
    Shape shape(rank), size(rank);
    I64s steps(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      shape[d] = 1 + static_cast<std::int64_t>(rng() % 6);
      size[d] = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(shape[d]));
      steps[d] = 1 + static_cast<std::int64_t>(rng() % 3);
    }
    const Tensor a = kiln::uniform(shape, 100 + t, DType::f64);
    const Vd av = a.to_vector<double>();
    Shape ws;
    const Vd want = ref_sliding(av, shape, size, steps, &ws);
    const Tensor w = kiln::sliding_window(a, size, steps);
    SCOPED_TRACE("case " + std::to_string(t) + " shape " + kiln::shape_to_string(shape) +
                 " size " + kiln::shape_to_string(size) + " steps " +
                 kiln::shape_to_string(steps));
    EXPECT_EQ(w.shape(), ws);
    EXPECT_EQ(w.to_vector<double>(), want);
  }
}

TEST(SlidingWindow, WindowLargerThanInputIsInvalidSelect) {
  const Tensor a = iota({4, 2});
  EXPECT_EQ(code_of([&] { kiln::sliding_window(a, {5, 2}, {1, 1}); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::sliding_window(a, {2, 3}, {1, 1}); }),
            ErrorCode::invalid_select);
}

TEST(SlidingWindow, WrongLengthArgumentsAreErrors) {
  const Tensor a = iota({4, 2});
  EXPECT_NE(code_of([&] { kiln::sliding_window(a, {2}, {1, 1}); }), ErrorCode::none);
  EXPECT_NE(code_of([&] { kiln::sliding_window(a, {2, 2, 1}, {1, 1}); }), ErrorCode::none);
  EXPECT_NE(code_of([&] { kiln::sliding_window(a, {2, 2}, {1}); }), ErrorCode::none);
  EXPECT_NE(code_of([&] { kiln::sliding_window(a, {2, 2}, {1, 1, 1}); }), ErrorCode::none);
}

// ---- unslide_window -------------------------------------------------------------------------

TEST(UnslideWindow, InverseWhenWindowEqualsStep) {
  const Tensor x = iota({4, 6});
  const Tensor w = kiln::sliding_window(x, {2, 3}, {2, 3});
  EXPECT_EQ(w.shape(), (Shape{4, 2, 3}));
  const Tensor back = kiln::unslide_window(w, {4, 6}, {2, 3});
  EXPECT_EQ(back.shape(), (Shape{4, 6}));
  EXPECT_EQ(back.to_vector<double>(), iota_values(24));
}

TEST(UnslideWindow, OverlapsAreSummed) {
  // Windows [1,1] over [4] with step 1: 3 windows; coverage 1,2,2,1.
  const Tensor w = kiln::sliding_window(kiln::ones({4}, DType::f64), {2}, {1});
  EXPECT_EQ(kiln::unslide_window(w, {4}, {1}).to_vector<double>(), (Vd{1, 2, 2, 1}));
  // Windows given directly: [[1,2,3],[10,20,30]] over [4] with step 1.
  const Tensor direct = kiln::tensor<double>({{1, 2, 3}, {10, 20, 30}}, kiln::DType::f64);
  EXPECT_EQ(kiln::unslide_window(direct, {4}, {1}).to_vector<double>(), (Vd{1, 12, 23, 30}));
}

TEST(UnslideWindow, GapsAreZero) {
  // arange(7), windows of 2 at 0 and 3 (step 3): [0,1], [3,4].
  const Tensor w = kiln::sliding_window(iota({7}), {2}, {3});
  EXPECT_EQ(w.to_vector<double>(), (Vd{0, 1, 3, 4}));
  EXPECT_EQ(kiln::unslide_window(w, {7}, {3}).to_vector<double>(), (Vd{0, 1, 0, 3, 4, 0, 0}));
  // 2-D: [4,5] + 10 (so no element is 0 itself) with windows [1,2] and steps [2,3].
  const Tensor x = iota({4, 5}) + 10.0;
  const Tensor back =
      kiln::unslide_window(kiln::sliding_window(x, {1, 2}, {2, 3}), {4, 5}, {2, 3});
  EXPECT_EQ(back.to_vector<double>(), (Vd{10, 11, 0, 13, 14,  //
                                          0, 0, 0, 0, 0,      //
                                          20, 21, 0, 23, 24,  //
                                          0, 0, 0, 0, 0}));
}

TEST(UnslideWindow, RoundTripOfSpecExample1) {
  const Tensor a = kiln::tensor<std::int32_t>({{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  const Tensor back = kiln::unslide_window(kiln::sliding_window(a, {3, 2}, {1, 1}), {4, 2}, {1, 1});
  EXPECT_EQ(back.shape(), (Shape{4, 2}));
  // Rows 1 and 2 lie in both windows.
  EXPECT_EQ(back.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 4, 6, 8, 10, 6, 7}));
}

TEST(UnslideWindow, RoundTripOfSpecExample2) {
  const Tensor a = kiln::tensor<double>({{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}},
                                         {{1, 2, 3}, {2, 3, 4}, {3, 4, 5}},
                                         {{2, 3, 4}, {3, 4, 5}, {4, 5, 6}},
                                         {{3, 4, 5}, {4, 5, 6}, {5, 6, 7}}}, kiln::DType::f64);
  const Tensor back =
      kiln::unslide_window(kiln::sliding_window(a, {2, 2, 2}, {2, 1, 2}), {4, 3, 3}, {2, 1, 2});
  // Coverage per element: dim 0 once, dim 1 [1,2,1], dim 2 [1,1,0].
  const Vd av = a.to_vector<double>();
  Vd want(av.size());
  const double cov1[] = {1, 2, 1}, cov2[] = {1, 1, 0};
  for (std::size_t i = 0; i < av.size(); ++i) want[i] = av[i] * cov1[(i / 3) % 3] * cov2[i % 3];
  EXPECT_EQ(back.shape(), (Shape{4, 3, 3}));
  EXPECT_EQ(back.to_vector<double>(), want);
}

TEST(UnslideWindow, AgainstNestedLoops) {
  std::mt19937 rng(99);
  for (int t = 0; t < 10; ++t) {
    const std::size_t rank = 1 + rng() % 3;
    Shape shape(rank), size(rank);
    I64s steps(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      shape[d] = 1 + static_cast<std::int64_t>(rng() % 6);
      size[d] = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(shape[d]));
      steps[d] = 1 + static_cast<std::int64_t>(rng() % 3);
    }
    std::int64_t count = 1;
    for (std::size_t d = 0; d < rank; ++d) count *= window_count(shape[d], size[d], steps[d]);
    Shape wshape{count};
    wshape.insert(wshape.end(), size.begin(), size.end());
    const Tensor w = kiln::uniform(wshape, 300 + t, DType::f64);
    const Vd want = ref_unslide(w.to_vector<double>(), size, shape, steps);
    SCOPED_TRACE("case " + std::to_string(t));
    const Tensor got = kiln::unslide_window(w, shape, steps);
    EXPECT_EQ(got.shape(), shape);
    EXPECT_TRUE(close_values(got.to_vector<double>(), want, DType::f64));
  }
}

TEST(UnslideWindow, WrongArgumentsAreErrors) {
  const Tensor w = kiln::sliding_window(iota({4, 2}), {3, 2}, {1, 1});  // [2,3,2]
  EXPECT_NE(code_of([&] { kiln::unslide_window(w, {4}, {1}); }), ErrorCode::none);
  EXPECT_NE(code_of([&] { kiln::unslide_window(w, {4, 2}, {1}); }), ErrorCode::none);
  // 2 windows do not fit [6,2] with steps [1,1] (that would be 4).
  EXPECT_NE(code_of([&] { kiln::unslide_window(w, {6, 2}, {1, 1}); }), ErrorCode::none);
}

// ---- convolve ---------------------------------------------------------------------------------

TEST(Convolve, OneFilterHandValues) {
  // a [4,2], kernel [2,2]: windows of rows (i, i+1), last dimension reduced completely.
  const Tensor a = kiln::tensor<double>({{1, 2}, {3, 4}, {5, 6}, {7, 8}}, kiln::DType::f64);
  const Tensor k = kiln::tensor<double>({{1, 0}, {0, 1}}, kiln::DType::f64);
  const Tensor r = kiln::convolve(a, k, {1});
  EXPECT_EQ(r.shape(), (Shape{3}));
  EXPECT_EQ(r.to_vector<double>(), (Vd{5, 9, 13}));

  // a [3,3,1] = 0..8, kernel [2,2,1] of ones: sums of the 2x2 blocks.
  const Tensor r2 = kiln::convolve(iota({3, 3, 1}), kiln::ones({2, 2, 1}, DType::f64), {1, 1});
  EXPECT_EQ(r2.shape(), (Shape{2, 2}));
  EXPECT_EQ(r2.to_vector<double>(), (Vd{8, 12, 20, 24}));
}

TEST(Convolve, SeveralFilters) {
  // kernel [2, 2,2,1]: filter 0 all ones, filter 1 [[1,0],[0,-1]].
  const Tensor k = kiln::tensor<double>({{{{1}, {1}}, {{1}, {1}}}, {{{1}, {0}}, {{0}, {-1}}}}, kiln::DType::f64);
  ASSERT_EQ(k.shape(), (Shape{2, 2, 2, 1}));
  const Tensor r = kiln::convolve(iota({3, 3, 1}), k, {1, 1});
  EXPECT_EQ(r.shape(), (Shape{2, 2, 2}));
  // Filter index is the last dimension: a[i][j] - a[i+1][j+1] = -4 everywhere.
  EXPECT_EQ(r.to_vector<double>(), (Vd{8, -4, 12, -4, 20, -4, 24, -4}));
}

TEST(Convolve, Steps) {
  // a[r][c] = 5r + c over [5,5,1], ones [2,2,1], steps [2,3]: positions (0,0), (0,3), (2,0),
  // (2,3) with block sum 20r + 4c + 12.
  const Tensor r = kiln::convolve(iota({5, 5, 1}), kiln::ones({2, 2, 1}, DType::f64), {2, 3});
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(r.to_vector<double>(), (Vd{12, 24, 52, 64}));
}

TEST(Convolve, LastDimensionReducedCompletely) {
  // a [3,2], kernel [2,2], step 2: floor((3 - 2) / 2) + 1 = 1 window spanning rows 0..1 and the
  // whole last dimension.
  const Tensor a = kiln::tensor<double>({{1, 2}, {3, 4}, {5, 6}}, kiln::DType::f64);
  const Tensor k = kiln::tensor<double>({{1, 10}, {100, 1000}}, kiln::DType::f64);
  const Tensor r = kiln::convolve(a, k, {2});
  EXPECT_EQ(r.shape(), (Shape{1}));
  EXPECT_EQ(r.to_vector<double>(), (Vd{1 + 20 + 300 + 4000}));
}

TEST(Convolve, AgainstNestedLoops) {
  std::mt19937 rng(4242);
  for (int t = 0; t < 16; ++t) {
    const DType dt = (t % 2) ? DType::f32 : DType::f64;
    const std::size_t n = 2 + rng() % 2;  // 2 or 3 dimensions
    const bool filters = (t / 2) % 2 == 1;
    Shape shape(n), window(n);
    I64s steps(n - 1);
    for (std::size_t d = 0; d < n; ++d) {
      shape[d] = 1 + static_cast<std::int64_t>(rng() % 6);
      window[d] = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(shape[d]));
    }
    window[n - 1] = shape[n - 1];
    for (auto& s : steps) s = 1 + static_cast<std::int64_t>(rng() % 3);
    Shape kshape = window;
    if (filters) kshape.insert(kshape.begin(), 1 + static_cast<std::int64_t>(rng() % 3));
    const Tensor a = kiln::uniform(shape, 500 + t, dt);
    const Tensor k = kiln::uniform(kshape, 600 + t, dt);
    Shape want_shape;
    const Vd want = ref_convolve(a.to_vector<double>(), shape, k.to_vector<double>(), kshape,
                                 steps, &want_shape);
    SCOPED_TRACE("case " + std::to_string(t) + " a " + kiln::shape_to_string(shape) +
                 " kernel " + kiln::shape_to_string(kshape) + " steps " +
                 kiln::shape_to_string(steps));
    const Tensor r = kiln::convolve(a, k, steps);
    EXPECT_EQ(r.shape(), want_shape);
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_TRUE(close_values(r.to_vector<double>(), want, dt));
  }
}

TEST(Convolve, Errors) {
  const Tensor a = iota({4, 3});
  // Last dimensions differ.
  EXPECT_NE(code_of([&] { kiln::convolve(a, iota({2, 2}), {1}); }), ErrorCode::none);
  // Kernel larger than the input.
  EXPECT_NE(code_of([&] { kiln::convolve(a, iota({5, 3}), {1}); }), ErrorCode::none);
  // Kernel rank neither n nor n + 1.
  EXPECT_NE(code_of([&] { kiln::convolve(a, iota({3}), {1}); }), ErrorCode::none);
  // steps needs n - 1 entries.
  EXPECT_NE(code_of([&] { kiln::convolve(a, iota({2, 3}), {1, 1}); }), ErrorCode::none);
}

// ---- pooling_sum / pooling_max ----------------------------------------------------------------

TEST(Pooling, HandValues) {
  const Tensor a = kiln::tensor<double>({{1, 2}, {3, 4}, {5, 6}, {7, 8}}, kiln::DType::f64);
  const Tensor s = kiln::pooling_sum(a, {2}, {1});
  EXPECT_EQ(s.shape(), (Shape{3}));
  EXPECT_EQ(s.to_vector<double>(), (Vd{10, 18, 26}));
  EXPECT_EQ(kiln::pooling_max(a, {2}, {1}).to_vector<double>(), (Vd{4, 6, 8}));
  EXPECT_EQ(kiln::pooling_sum(a, {2}, {2}).to_vector<double>(), (Vd{10, 26}));
  EXPECT_EQ(kiln::pooling_max(a, {2}, {2}).to_vector<double>(), (Vd{4, 8}));
  // Negative values: the maximum is not clipped at 0.
  const Tensor neg = -a;
  EXPECT_EQ(kiln::pooling_max(neg, {2}, {2}).to_vector<double>(), (Vd{-1, -5}));
  // 3-D: [3,3,2], windows [2,2] steps [1,1] -> [2,2].
  const Tensor b = iota({3, 3, 2});
  const Tensor bs = kiln::pooling_sum(b, {2, 2}, {1, 1});
  EXPECT_EQ(bs.shape(), (Shape{2, 2}));
  // Block at (r,c): elements 6r+2c + {0,1,2,3,6,7,8,9}: 8*(6r+2c) + 36.
  EXPECT_EQ(bs.to_vector<double>(), (Vd{36, 52, 84, 100}));
  EXPECT_EQ(kiln::pooling_max(b, {2, 2}, {1, 1}).to_vector<double>(), (Vd{9, 11, 15, 17}));
}

TEST(Pooling, IntegerTypeKept) {
  const Tensor a = kiln::tensor<std::int32_t>({{1, -2}, {3, -4}, {-5, 6}});
  const Tensor s = kiln::pooling_sum(a, {2}, {1});
  const Tensor m = kiln::pooling_max(a, {2}, {1});
  EXPECT_EQ(s.dtype(), DType::i32);
  EXPECT_EQ(m.dtype(), DType::i32);
  EXPECT_EQ(s.to_vector<std::int32_t>(), (std::vector<std::int32_t>{-2, 0}));
  EXPECT_EQ(m.to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 6}));
}

TEST(Pooling, AgainstNestedLoops) {
  std::mt19937 rng(777);
  for (int t = 0; t < 16; ++t) {
    const DType dt = (t % 2) ? DType::f32 : DType::f64;
    const bool is_max = (t / 2) % 2 == 1;
    const std::size_t n = 2 + rng() % 3;  // 2..4 dimensions
    Shape shape(n), window(n - 1);
    I64s steps(n - 1);
    for (std::size_t d = 0; d < n; ++d) shape[d] = 1 + static_cast<std::int64_t>(rng() % 5);
    for (std::size_t d = 0; d + 1 < n; ++d) {
      window[d] = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(shape[d]));
      steps[d] = 1 + static_cast<std::int64_t>(rng() % 3);
    }
    const Tensor a = kiln::uniform(shape, 700 + t, dt) - (dt == DType::f32 ? kiln::Scalar(0.5f)
                                                                           : kiln::Scalar(0.5));
    Shape want_shape;
    const Vd want = ref_pooling(a.to_vector<double>(), shape, window, steps, is_max, &want_shape);
    SCOPED_TRACE("case " + std::to_string(t) + (is_max ? " max " : " sum ") +
                 kiln::shape_to_string(shape) + " window " + kiln::shape_to_string(window) +
                 " steps " + kiln::shape_to_string(steps));
    const Tensor r = is_max ? kiln::pooling_max(a, window, steps) : kiln::pooling_sum(a, window, steps);
    EXPECT_EQ(r.shape(), want_shape);
    EXPECT_EQ(r.dtype(), dt);
    // Sums of values of both signs can cancel: compare with an absolute floor of 1e-5.
    const Vd got = r.to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], (dt == DType::f32 ? 1e-4 : 1e-10) * std::max(1.0, std::abs(want[i])))
          << i;
  }
}

TEST(Pooling, Errors) {
  const Tensor a = iota({4, 3});
  EXPECT_NE(code_of([&] { kiln::pooling_sum(a, {2, 2}, {1}); }), ErrorCode::none);
  EXPECT_NE(code_of([&] { kiln::pooling_max(a, {2}, {1, 1}); }), ErrorCode::none);
  EXPECT_EQ(code_of([&] { kiln::pooling_sum(a, {5}, {1}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::pooling_max(a, {5}, {1}); }), ErrorCode::invalid_select);
}

// ---- conv2d -------------------------------------------------------------------------------------

TEST(Conv2d, HandValues) {
  // x [1,1,3,3] = 0..8, w [1,1,2,2] = [[1,2],[3,4]], bias 10.
  const Tensor x = iota({1, 1, 3, 3});
  const Tensor w = kiln::tensor<double>({{{{1, 2}, {3, 4}}}}, kiln::DType::f64);
  const Tensor b = kiln::tensor<double>({10}, kiln::DType::f64);
  const Tensor r = kiln::conv2d(x, w, b);
  EXPECT_EQ(r.shape(), (Shape{1, 1, 2, 2}));
  // (0,0): 0+2+9+16 = 27; (0,1): 1+4+12+20 = 37; (1,0): 3+8+18+28 = 57; (1,1): 67.
  EXPECT_EQ(r.to_vector<double>(), (Vd{37, 47, 67, 77}));
  // Without bias.
  EXPECT_EQ(kiln::conv2d(x, w).to_vector<double>(), (Vd{27, 37, 57, 67}));
  // Padding 1: output [4,4]; corner (0,0) sees only x[0][0] under w[1][1]: 0*4 = 0;
  // (0,1): x[0][0]*3 + x[0][1]*4 = 4.
  kiln::Conv2dOptions o;
  o.padding = {1, 1};
  const Tensor p = kiln::conv2d(x, w, Tensor(), o);
  EXPECT_EQ(p.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(p.at<double>({0, 0, 0, 0}), 0);
  EXPECT_EQ(p.at<double>({0, 0, 0, 1}), 4);
  EXPECT_EQ(p.at<double>({0, 0, 3, 3}), 8 * 1);
  // Dilation 2 on the 3x3 input with a 2x2 kernel: one output, the corners.
  kiln::Conv2dOptions d;
  d.dilation = {2, 2};
  const Tensor dr = kiln::conv2d(x, w, Tensor(), d);
  EXPECT_EQ(dr.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(dr.to_vector<double>(), (Vd{0 * 1 + 2 * 2 + 6 * 3 + 8 * 4}));
}

TEST(Conv2d, ThreeDimensionalInput) {
  const Tensor x = kiln::uniform({2, 5, 4}, 11, DType::f64);  // [C,H,W]
  const Tensor w = kiln::uniform({3, 2, 2, 2}, 12, DType::f64);
  const Tensor b = kiln::uniform({3}, 13, DType::f64);
  const Tensor r = kiln::conv2d(x, w, b);
  EXPECT_EQ(r.shape(), (Shape{3, 4, 3}));
  const Vd want = ref_conv2d(x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>(),
                             {1, 2, 5, 4, 3, 2, 2, {1, 1}, {0, 0}, {1, 1}, true});
  EXPECT_TRUE(close_values(r.to_vector<double>(), want, DType::f64));
}

TEST(Conv2d, AgainstNestedLoops) {
  std::mt19937 rng(2024);
  int checked = 0;
  for (int t = 0; checked < 16; ++t) {
    ASSERT_LT(t, 1000);
    Conv2dCase p{};
    p.n = 1 + rng() % 2;
    p.c = 1 + rng() % 3;
    p.h = 3 + rng() % 6;
    p.w = 3 + rng() % 6;
    p.o = 1 + rng() % 3;
    p.kh = 1 + rng() % 3;
    p.kw = 1 + rng() % 3;
    p.stride = {1 + static_cast<std::int64_t>(rng() % 2), 1 + static_cast<std::int64_t>(rng() % 3)};
    p.padding = {static_cast<std::int64_t>(rng() % 3), static_cast<std::int64_t>(rng() % 2)};
    p.dilation = {1 + static_cast<std::int64_t>(rng() % 2), 1 + static_cast<std::int64_t>(rng() % 2)};
    p.bias = rng() % 2 == 0;
    if (p.h + 2 * p.padding[0] < p.dilation[0] * (p.kh - 1) + 1) continue;
    if (p.w + 2 * p.padding[1] < p.dilation[1] * (p.kw - 1) + 1) continue;
    const DType dt = (checked % 2) ? DType::f32 : DType::f64;
    const Tensor x = kiln::uniform({p.n, p.c, p.h, p.w}, 1000 + t, dt);
    const Tensor w = kiln::uniform({p.o, p.c, p.kh, p.kw}, 2000 + t, dt);
    const Tensor b = p.bias ? kiln::uniform({p.o}, 3000 + t, dt) : Tensor();
    const Vd want = ref_conv2d(x.to_vector<double>(), w.to_vector<double>(),
                               p.bias ? b.to_vector<double>() : Vd{}, p);
    kiln::Conv2dOptions o;
    o.stride = p.stride;
    o.padding = p.padding;
    o.dilation = p.dilation;
    SCOPED_TRACE("case " + std::to_string(t));
    const Tensor r = kiln::conv2d(x, w, b, o);
    EXPECT_EQ(r.shape(), (Shape{p.n, p.o, out_size(p.h, p.kh, p.stride[0], p.padding[0], p.dilation[0]),
                               out_size(p.w, p.kw, p.stride[1], p.padding[1], p.dilation[1])}));
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_TRUE(close_values(r.to_vector<double>(), want, dt));
    ++checked;
  }
}

TEST(Conv2d, Errors) {
  const Tensor x = kiln::zeros({1, 2, 4, 4});
  // Channel mismatch.
  EXPECT_NE(code_of([&] { kiln::conv2d(x, kiln::zeros({1, 3, 2, 2})); }), ErrorCode::none);
  // Bias of the wrong length.
  EXPECT_NE(code_of([&] { kiln::conv2d(x, kiln::zeros({4, 2, 2, 2}), kiln::zeros({3})); }),
            ErrorCode::none);
  // Kernel larger than the (unpadded) input.
  EXPECT_NE(code_of([&] { kiln::conv2d(x, kiln::zeros({1, 2, 5, 2})); }), ErrorCode::none);
  // Input rank 2.
  EXPECT_NE(code_of([&] { kiln::conv2d(kiln::zeros({4, 4}), kiln::zeros({1, 1, 2, 2})); }),
            ErrorCode::none);
}

// ---- max_pool2d / avg_pool2d ------------------------------------------------------------------

TEST(Pool2d, StrideDefaultsToKernel) {
  const Tensor x = iota({1, 1, 4, 4});
  const Tensor m = kiln::max_pool2d(x, {2, 2});
  EXPECT_EQ(m.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(m.to_vector<double>(), (Vd{5, 7, 13, 15}));
  const Tensor a = kiln::avg_pool2d(x, {2, 2});
  EXPECT_EQ(a.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(a.to_vector<double>(), (Vd{2.5, 4.5, 10.5, 12.5}));
  // Kernel [1,3] with the default stride over W = 4: one window per row.
  const Tensor m13 = kiln::max_pool2d(x, {1, 3});
  EXPECT_EQ(m13.shape(), (Shape{1, 1, 4, 1}));
  EXPECT_EQ(m13.to_vector<double>(), (Vd{2, 6, 10, 14}));
}

TEST(Pool2d, ExplicitStride) {
  const Tensor x = iota({1, 1, 4, 4});
  kiln::Pool2dOptions o;
  o.stride = {1, 1};
  const Tensor m = kiln::max_pool2d(x, {2, 2}, o);
  EXPECT_EQ(m.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(m.to_vector<double>(), (Vd{5, 6, 7, 9, 10, 11, 13, 14, 15}));
}

TEST(Pool2d, PaddingMaxIgnoresPadAvgCountsZeros) {
  // x = ones [1,1,2,2], kernel 2, stride 2, padding 1: every window holds one real element.
  const Tensor x = kiln::ones({1, 1, 2, 2}, DType::f64);
  kiln::Pool2dOptions o;
  o.padding = {1, 1};
  const Tensor a = kiln::avg_pool2d(x, {2, 2}, o);
  EXPECT_EQ(a.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(a.to_vector<double>(), (Vd{0.25, 0.25, 0.25, 0.25}));
  // Negative values: max pooling must not pick the padding.
  const Tensor neg = kiln::tensor<double>({{{{-1, -2}, {-3, -4}}}}, kiln::DType::f64);
  const Tensor m = kiln::max_pool2d(neg, {2, 2}, o);
  EXPECT_EQ(m.to_vector<double>(), (Vd{-1, -2, -3, -4}));
  // Padding in one direction only, kernel [1,2]: avg of (pad, x) pairs.
  kiln::Pool2dOptions w;
  w.padding = {0, 1};
  w.stride = {1, 1};
  const Tensor aw = kiln::avg_pool2d(neg, {1, 2}, w);
  EXPECT_EQ(aw.shape(), (Shape{1, 1, 2, 3}));
  EXPECT_EQ(aw.to_vector<double>(), (Vd{-0.5, -1.5, -1, -1.5, -3.5, -2}));
}

TEST(Pool2d, ThreeDimensionalInput) {
  const Tensor x = iota({2, 4, 4});
  const Tensor m = kiln::max_pool2d(x, {2, 2});
  EXPECT_EQ(m.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(m.to_vector<double>(), (Vd{5, 7, 13, 15, 21, 23, 29, 31}));
  EXPECT_EQ(kiln::avg_pool2d(x, {4, 4}).to_vector<double>(), (Vd{7.5, 23.5}));
}

TEST(Pool2d, AgainstNestedLoops) {
  std::mt19937 rng(31337);
  int checked = 0;
  for (int t = 0; checked < 24; ++t) {
    ASSERT_LT(t, 1000);
    Pool2dCase p{};
    p.n = 1 + rng() % 2;
    p.c = 1 + rng() % 3;
    p.h = 2 + rng() % 7;
    p.w = 2 + rng() % 7;
    p.kh = 1 + rng() % 3;
    p.kw = 1 + rng() % 3;
    if (rng() % 3 == 0)
      p.stride = {0, 0};
    else
      p.stride = {1 + static_cast<std::int64_t>(rng() % 3), 1 + static_cast<std::int64_t>(rng() % 3)};
    // PyTorch's rule: padding at most half the kernel.
    p.padding = {static_cast<std::int64_t>(rng() % (p.kh / 2 + 1)),
                 static_cast<std::int64_t>(rng() % (p.kw / 2 + 1))};
    const bool is_max = checked % 2 == 0;
    p.dilation = is_max ? std::array<std::int64_t, 2>{1 + static_cast<std::int64_t>(rng() % 2),
                                                      1 + static_cast<std::int64_t>(rng() % 2)}
                        : std::array<std::int64_t, 2>{1, 1};
    if (p.h + 2 * p.padding[0] < p.dilation[0] * (p.kh - 1) + 1) continue;
    if (p.w + 2 * p.padding[1] < p.dilation[1] * (p.kw - 1) + 1) continue;
    const DType dt = (checked / 2) % 2 ? DType::f32 : DType::f64;
    const Tensor x = kiln::uniform({p.n, p.c, p.h, p.w}, 4000 + t, dt) -
                     (dt == DType::f32 ? kiln::Scalar(2.0f) : kiln::Scalar(2.0));  // all < 0
    Shape want_shape;
    const Vd want = ref_pool2d(x.to_vector<double>(), p, is_max, &want_shape);
    kiln::Pool2dOptions o;
    o.stride = p.stride;
    o.padding = p.padding;
    o.dilation = p.dilation;
    SCOPED_TRACE("case " + std::to_string(t) + (is_max ? " max" : " avg"));
    const Tensor r = is_max ? kiln::max_pool2d(x, {p.kh, p.kw}, o) : kiln::avg_pool2d(x, {p.kh, p.kw}, o);
    EXPECT_EQ(r.shape(), want_shape);
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_TRUE(close_values(r.to_vector<double>(), want, dt));
    ++checked;
  }
}

}  // namespace
