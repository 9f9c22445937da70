// Shape ops with hand-computed values: reshape, flatten, permute, transpose, slice, extend, pad,
// concat, expand, repeat, squeeze/unsqueeze, contiguous; 0-d and zero-size tensors; errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <tuple>
#include <utility>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using Vd = std::vector<double>;
using Vi64 = std::vector<std::int64_t>;

using kiln_test::code_of;

// Checks that f() throws kiln::Error with `code` and that the message contains every one of
// `words` (typically the op's name).
template <class F>
::testing::AssertionResult throws(F f, kiln::ErrorCode code,
                                  std::vector<std::string> words = {}) {
  try {
    f();
  } catch (const kiln::Error& e) {
    if (e.code() != code) {
      return ::testing::AssertionFailure()
             << "kiln::Error with code " << static_cast<int>(e.code()) << " (expected "
             << static_cast<int>(code) << "), message: " << e.what();
    }
    const std::string msg = e.what();
    for (const auto& w : words) {
      if (msg.find(w) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message \"" << msg << "\" does not contain \"" << w << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-kiln exception: " << e.what();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw something that is not std::exception";
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// As `throws`, for any error code.
template <class F> ::testing::AssertionResult throws_any(F f, std::string word = "") {
  try {
    f();
  } catch (const kiln::Error& e) {
    if (!word.empty() && std::string(e.what()).find(word) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message \"" << e.what() << "\" does not contain \"" << word << "\"";
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-kiln exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

std::string message_of_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

Tensor f64(Vd v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor f64(Vd v) { return Tensor::from(v); }
Vd vals(const Tensor& t) { return t.to_vector<double>(); }

Vd iota(std::int64_t n, double first = 0.0) {
  Vd v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = first + double(i);
  return v;
}

// The spec's flatten example: [[[3,1,4],[2,1,5]],[[0,4,2],[4,7,9]]].
Tensor spec3d() { return f64({3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9}, {2, 2, 3}); }

// [[0,1,2,3],[4,5,6,7],[8,9,10,11]]
Tensor m34() { return f64(iota(12), {3, 4}); }

// ---------------------------------------------------------------------------------------------
// reshape
// ---------------------------------------------------------------------------------------------

TEST(Reshape, KeepsRowMajorOrder) {
  Tensor a = f64(iota(6), {2, 3});
  Tensor r = kiln::reshape(a, {3, 2});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_EQ(vals(r), iota(6));
  EXPECT_DOUBLE_EQ(r.at<double>({2, 0}), 4.0);
  EXPECT_DOUBLE_EQ(r.at<double>({1, 1}), 3.0);

  Tensor r3 = kiln::reshape(a, {1, 6, 1});
  EXPECT_EQ(r3.shape(), (Shape{1, 6, 1}));
  EXPECT_EQ(vals(r3), iota(6));
  EXPECT_DOUBLE_EQ(r3.at<double>({0, 5, 0}), 5.0);
}

TEST(Reshape, InfersOneMinusOne) {
  Tensor a = f64(iota(24), {2, 3, 4});
  EXPECT_EQ(kiln::reshape(a, {-1}).shape(), (Shape{24}));
  EXPECT_EQ(kiln::reshape(a, {4, -1}).shape(), (Shape{4, 6}));
  EXPECT_EQ(kiln::reshape(a, {-1, 8}).shape(), (Shape{3, 8}));
  EXPECT_EQ(kiln::reshape(a, {2, -1, 3}).shape(), (Shape{2, 4, 3}));
  Tensor r = kiln::reshape(a, {6, -1});
  EXPECT_EQ(r.shape(), (Shape{6, 4}));
  EXPECT_EQ(vals(r), iota(24));
  EXPECT_DOUBLE_EQ(r.at<double>({5, 3}), 23.0);
  EXPECT_DOUBLE_EQ(r.at<double>({1, 0}), 4.0);
}

TEST(Reshape, MethodForm) {
  Tensor a = f64(iota(6), {2, 3});
  Tensor r = a.reshape({3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(r), iota(6));
}

TEST(Reshape, KeepsDtype) {
  Tensor a = Tensor::from(std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}, {2, 2});
  Tensor r = kiln::reshape(a, {4});
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}));
  Tensor b = Tensor::from(std::vector<std::int32_t>{7, -8, 9, -10, 11, -12}, {3, 2});
  Tensor rb = kiln::reshape(b, {2, 3});
  EXPECT_EQ(rb.dtype(), DType::i32);
  EXPECT_EQ(rb.to_vector<std::int32_t>(), (std::vector<std::int32_t>{7, -8, 9, -10, 11, -12}));
}

TEST(Reshape, Errors) {
  Tensor a = f64(iota(6), {2, 3});
  EXPECT_TRUE(throws([&] { (void)kiln::reshape(a, {-1, -1}); }, ErrorCode::incompatible_shapes,
                     {"reshape"}));
  EXPECT_TRUE(throws([&] { (void)kiln::reshape(a, {-1, 2, -1}); },
                     ErrorCode::incompatible_shapes, {"reshape"}));
  EXPECT_TRUE(throws([&] { (void)kiln::reshape(a, {4, 2}); }, ErrorCode::incompatible_shapes,
                     {"reshape", kiln::shape_to_string(a.shape())}));
  EXPECT_TRUE(throws([&] { (void)kiln::reshape(a, {7}); }, ErrorCode::incompatible_shapes,
                     {"reshape"}));
  // -1 cannot be inferred when the rest does not divide numel.
  EXPECT_TRUE(throws([&] { (void)kiln::reshape(a, {4, -1}); }, ErrorCode::incompatible_shapes,
                     {"reshape"}));
  EXPECT_TRUE(throws([&] { (void)a.reshape({5, -1}); }, ErrorCode::incompatible_shapes,
                     {"reshape"}));
  EXPECT_EQ(code_of([&] { (void)kiln::reshape(a, {6}); }), ErrorCode::none);
}

// ---------------------------------------------------------------------------------------------
// flatten
// ---------------------------------------------------------------------------------------------

TEST(Flatten, All) {
  Tensor t = spec3d();
  Tensor f = kiln::flatten(t);
  EXPECT_EQ(f.shape(), (Shape{12}));
  EXPECT_EQ(vals(f), (Vd{3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9}));
  Tensor fm = t.flatten();
  EXPECT_EQ(fm.shape(), (Shape{12}));
  EXPECT_EQ(vals(fm), (Vd{3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9}));
  // A permuted view flattens in its own (logical) row-major order.
  Tensor ft = kiln::flatten(kiln::reverse_dims(f64(iota(6), {2, 3})));
  EXPECT_EQ(ft.shape(), (Shape{6}));
  EXPECT_EQ(vals(ft), (Vd{0, 3, 1, 4, 2, 5}));
}

TEST(Flatten, AlongDimensionSpecExample) {
  Tensor t = spec3d();
  Tensor f1 = kiln::flatten_dimension(t, 1);
  EXPECT_EQ(f1.shape(), (Shape{4, 3}));
  EXPECT_EQ(vals(f1), (Vd{3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9}));
  EXPECT_DOUBLE_EQ(f1.at<double>({2, 1}), 4.0);  // [0,4,2][1]
  EXPECT_DOUBLE_EQ(f1.at<double>({3, 2}), 9.0);

  Tensor f2 = kiln::flatten_dimension(t, 2);
  EXPECT_EQ(f2.shape(), (Shape{2, 6}));
  EXPECT_EQ(vals(f2), (Vd{3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9}));
  EXPECT_DOUBLE_EQ(f2.at<double>({1, 3}), 4.0);
  EXPECT_DOUBLE_EQ(f2.at<double>({0, 5}), 5.0);

  // On a permuted input: permute {1,0,2} gives [[[3,1,4],[0,4,2]],[[2,1,5],[4,7,9]]].
  Tensor f3 = kiln::flatten_dimension(kiln::permute(t, {1, 0, 2}), 1);
  EXPECT_EQ(f3.shape(), (Shape{4, 3}));
  EXPECT_EQ(vals(f3), (Vd{3, 1, 4, 0, 4, 2, 2, 1, 5, 4, 7, 9}));
}

TEST(Flatten, Errors) {
  Tensor t = spec3d();
  EXPECT_TRUE(throws([&] { (void)kiln::flatten_dimension(t, 0); }, ErrorCode::illegal_dimension,
                     {"flatten"}));
  EXPECT_TRUE(throws([&] { (void)kiln::flatten_dimension(t, 3); }, ErrorCode::illegal_dimension,
                     {"flatten"}));
  EXPECT_TRUE(throws(
      [&] {
        (void)kiln::flatten_dimension(f64({1, 2, 3}), 1);
      },
      ErrorCode::illegal_dimension, {"flatten"}));
}

// ---------------------------------------------------------------------------------------------
// permute / transpose
// ---------------------------------------------------------------------------------------------

TEST(Permute, Matrix) {
  Tensor a = f64(iota(6), {2, 3});  // [[0,1,2],[3,4,5]]
  Tensor p = kiln::permute(a, {1, 0});
  EXPECT_EQ(p.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(p), (Vd{0, 3, 1, 4, 2, 5}));
  Tensor id = kiln::permute(a, {0, 1});
  EXPECT_EQ(id.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(id), iota(6));
  Tensor pm = a.permute({1, 0});
  EXPECT_EQ(vals(pm), (Vd{0, 3, 1, 4, 2, 5}));
}

TEST(Permute, ResultDimIIsInputDimPermI) {
  Tensor t = f64(iota(24), {2, 3, 4});  // t[i][j][k] = 12i + 4j + k
  Tensor p = kiln::permute(t, {1, 2, 0});
  // result dim 0 = input dim 1 (3), dim 1 = input dim 2 (4), dim 2 = input dim 0 (2)
  EXPECT_EQ(p.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(vals(p), (Vd{0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17,
                         6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23}));
  // p[a][b][c] = t[c][a][b]
  for (std::int64_t a = 0; a < 3; ++a)
    for (std::int64_t b = 0; b < 4; ++b)
      for (std::int64_t c = 0; c < 2; ++c)
        EXPECT_DOUBLE_EQ(p.at<double>({a, b, c}), double(12 * c + 4 * a + b));

  Tensor q = kiln::permute(t, {2, 0, 1});  // q[a][b][c] = t[b][c][a], shape [4,2,3]
  EXPECT_EQ(q.shape(), (Shape{4, 2, 3}));
  Vd expect;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) expect.push_back(12 * b + 4 * c + a);
  EXPECT_EQ(vals(q), expect);

  // Permuting back with the inverse permutation gives the original.
  Tensor back = kiln::permute(p, {2, 0, 1});
  EXPECT_EQ(back.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(vals(back), iota(24));
}

TEST(Permute, Errors) {
  Tensor t = f64(iota(24), {2, 3, 4});
  EXPECT_TRUE(throws([&] { (void)kiln::permute(t, {0, 0, 1}); }, ErrorCode::illegal_dimension,
                     {"permute"}));
  EXPECT_TRUE(throws([&] { (void)kiln::permute(t, {0, 1, 3}); }, ErrorCode::illegal_dimension,
                     {"permute", kiln::shape_to_string(t.shape())}));
  EXPECT_TRUE(throws([&] { (void)kiln::permute(t, {2, 2, 2}); }, ErrorCode::illegal_dimension,
                     {"permute"}));
  EXPECT_TRUE(throws([&] { (void)kiln::permute(t, {0, 1}); }, ErrorCode::illegal_dimensionality,
                     {"permute"}));
  EXPECT_TRUE(throws([&] { (void)kiln::permute(t, {0, 1, 2, 3}); },
                     ErrorCode::illegal_dimensionality, {"permute"}));
  EXPECT_TRUE(throws([&] { (void)t.permute({1, 0}); }, ErrorCode::illegal_dimensionality,
                     {"permute"}));
}

TEST(Transpose, ReversesAllDims) {
  Tensor m = f64(iota(6), {2, 3});
  Tensor tm = kiln::reverse_dims(m);
  EXPECT_EQ(tm.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(tm), (Vd{0, 3, 1, 4, 2, 5}));

  Tensor t = f64(iota(24), {2, 3, 4});
  Tensor tt = kiln::reverse_dims(t);
  EXPECT_EQ(tt.shape(), (Shape{4, 3, 2}));
  Vd expect;  // tt[a][b][c] = t[c][b][a]
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c) expect.push_back(12 * c + 4 * b + a);
  EXPECT_EQ(vals(tt), expect);
  EXPECT_EQ(kiln_test::code_of([&] { (void)t.t(); }), kiln::ErrorCode::illegal_dimensionality);
  EXPECT_EQ(vals(m.t()), (Vd{0, 3, 1, 4, 2, 5}));  // libtorch's t(): matrices only

  Tensor v = f64({1, 2, 3});
  EXPECT_EQ(kiln::reverse_dims(v).shape(), (Shape{3}));
  EXPECT_EQ(vals(kiln::reverse_dims(v)), (Vd{1, 2, 3}));
}

TEST(Transpose, TwoAxes) {
  Tensor t = f64(iota(24), {2, 3, 4});
  Tensor s = kiln::transpose(t, 0, 2);
  EXPECT_EQ(s.shape(), (Shape{4, 3, 2}));
  Vd expect;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c) expect.push_back(12 * c + 4 * b + a);
  EXPECT_EQ(vals(s), expect);

  Tensor s12 = kiln::transpose(t, 1, 2);  // s12[a][b][c] = t[a][c][b], shape [2,4,3]
  EXPECT_EQ(s12.shape(), (Shape{2, 4, 3}));
  Vd e12;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 3; ++c) e12.push_back(12 * a + 4 * c + b);
  EXPECT_EQ(vals(s12), e12);
  // Negative axes and the method form.
  EXPECT_EQ(vals(kiln::transpose(t, -1, -2)), e12);
  EXPECT_EQ(vals(t.transpose(2, 1)), e12);
  EXPECT_EQ(kiln::transpose(t, -1, 1).shape(), (Shape{2, 4, 3}));
}

TEST(Transpose, Errors) {
  Tensor t = f64(iota(6), {2, 3});
  for (auto [a, b] : std::vector<std::pair<int, int>>{{0, 2}, {-3, 0}, {5, 1}}) {
    std::string msg;
    EXPECT_EQ(code_of([&] { (void)kiln::transpose(t, a, b); }), ErrorCode::illegal_dimension)
        << a << "," << b;
    msg = message_of_error([&] { (void)kiln::transpose(t, a, b); });
    EXPECT_TRUE(msg.find("transpose") != std::string::npos ||
                msg.find("permute") != std::string::npos)
        << msg;
  }
}

// ---------------------------------------------------------------------------------------------
// slice
// ---------------------------------------------------------------------------------------------

struct Slice1 {
  std::int64_t start, stop, step;
  Vd expect;
};

TEST(Slice, OneDimensionPythonSemantics) {
  const Tensor a = f64(iota(5));  // [0,1,2,3,4]
  const std::vector<Slice1> cases = {
      {1, 4, 1, {1, 2, 3}},
      {-3, -1, 1, {2, 3}},
      {-1, 5, 1, {4}},
      {0, 10, 1, {0, 1, 2, 3, 4}},    // stop clamped
      {-10, 2, 1, {0, 1}},            // start clamped
      {0, 5, 2, {0, 2, 4}},
      {1, 5, 3, {1, 4}},
      {-1, -6, -1, {4, 3, 2, 1, 0}},  // -6 + 5 = -1: before the first element
      {4, 0, -2, {4, 2}},
      {4, -6, -2, {4, 2, 0}},
      {-1, -6, -2, {4, 2, 0}},
      {10, -10, -1, {4, 3, 2, 1, 0}},  // both clamped
      {3, 1, -1, {3, 2}},
      {-2, -4, -1, {3, 2}},
      {2, -7, -3, {2}},
      {4, 3, -5, {4}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << "start " << c.start << " stop " << c.stop << " step "
                                      << c.step);
    Tensor s = kiln::slice(a, {c.start}, {c.stop}, {c.step});
    EXPECT_EQ(s.shape(), (Shape{static_cast<std::int64_t>(c.expect.size())}));
    EXPECT_EQ(vals(s), c.expect);
    if (c.step == 1) {
      Tensor s2 = kiln::slice(a, {c.start}, {c.stop});
      EXPECT_EQ(s2.shape(), s.shape());
      EXPECT_EQ(vals(s2), c.expect);
    }
    Tensor s3 = kiln::slice_axis(a, 0, c.start, c.stop, c.step);
    EXPECT_EQ(vals(s3), c.expect);
  }
}

TEST(Slice, EmptyResults) {
  const Tensor a = f64(iota(5));
  for (auto [start, stop, step] : std::vector<std::tuple<std::int64_t, std::int64_t,
                                                         std::int64_t>>{
           {3, 1, 1}, {1, 3, -1}, {7, 9, 1}, {2, 2, 1}, {-1, 4, 1}, {0, 5, -1}, {-9, -7, 1}}) {
    SCOPED_TRACE(::testing::Message() << start << ":" << stop << ":" << step);
    Tensor s = kiln::slice(a, {start}, {stop}, {step});
    EXPECT_EQ(s.shape(), (Shape{0}));
    EXPECT_EQ(s.numel(), 0);
    EXPECT_TRUE(vals(s).empty());
  }
  // An empty dimension in a 2-D slice leaves the other dimension intact.
  Tensor e = kiln::slice(m34(), {0, 3}, {3, 1});
  EXPECT_EQ(e.shape(), (Shape{3, 0}));
  EXPECT_TRUE(vals(e).empty());
}

TEST(Slice, TwoDimensions) {
  Tensor m = m34();  // [[0,1,2,3],[4,5,6,7],[8,9,10,11]]
  Tensor s = kiln::slice(m, {1, 1}, {3, 3});
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(s), (Vd{5, 6, 9, 10}));

  Tensor neg = kiln::slice(m, {-2, -3}, {3, -1});
  EXPECT_EQ(neg.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(neg), (Vd{5, 6, 9, 10}));

  Tensor st = kiln::slice(m, {0, -1}, {3, -5}, {2, -2});
  EXPECT_EQ(st.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(st), (Vd{3, 1, 11, 9}));

  Tensor rev = kiln::slice(m, {-1, 0}, {-4, 4}, {-1, 1});
  EXPECT_EQ(rev.shape(), (Shape{3, 4}));
  EXPECT_EQ(vals(rev), (Vd{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3}));

  Tensor meth = m.slice({0, 0}, {2, 4}, {1, 3});
  EXPECT_EQ(meth.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(meth), (Vd{0, 3, 4, 7}));
  Tensor meth2 = m.slice({2, 1}, {3, 4});
  EXPECT_EQ(vals(meth2), (Vd{9, 10, 11}));
}

TEST(Slice, SliceAxis) {
  Tensor m = m34();
  Tensor c = kiln::slice_axis(m, 1, 1, 3);
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(c), (Vd{1, 2, 5, 6, 9, 10}));
  Tensor r = kiln::slice_axis(m, -2, -1, -4, -1);
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_EQ(vals(r), (Vd{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3}));
  Tensor s = kiln::slice_axis(m, -1, 3, -5, -2);
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(s), (Vd{3, 1, 7, 5, 11, 9}));
}

TEST(Slice, SliceOfSlice) {
  Tensor a = f64(iota(10));
  Tensor s = kiln::slice(kiln::slice(a, {1}, {9}, {2}), {-1}, {-5}, {-1});  // [1,3,5,7] reversed
  EXPECT_EQ(vals(s), (Vd{7, 5, 3, 1}));
}

TEST(Slice, Errors) {
  Tensor m = m34();
  EXPECT_TRUE(throws([&] { (void)kiln::slice(m, {0, 0}, {3, 4}, {1, 0}); },
                     ErrorCode::invalid_select, {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice(f64(iota(5)), {0}, {5}, {0}); },
                     ErrorCode::invalid_select, {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice(m, {0}, {3, 4}); },
                     ErrorCode::illegal_dimensionality, {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice(m, {0, 0}, {3}); },
                     ErrorCode::illegal_dimensionality, {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice(m, {0, 0, 0}, {3, 4, 1}); },
                     ErrorCode::illegal_dimensionality, {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice(m, {0, 0}, {3, 4}, {1}); },
                     ErrorCode::illegal_dimensionality, {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice(m, {0, 0}, {3, 4}, {1, 1, 1}); },
                     ErrorCode::illegal_dimensionality, {"slice"}));
  EXPECT_TRUE(throws([&] { (void)m.slice({0, 0}, {3, 4}, {0, 1}); },
                     ErrorCode::invalid_select, {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice_axis(m, 1, 0, 4, 0); }, ErrorCode::invalid_select,
                     {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice_axis(m, 2, 0, 1); }, ErrorCode::illegal_dimension,
                     {"slice"}));
  EXPECT_TRUE(throws([&] { (void)kiln::slice_axis(m, -3, 0, 1); }, ErrorCode::illegal_dimension,
                     {"slice"}));
}

// ---------------------------------------------------------------------------------------------
// extend
// ---------------------------------------------------------------------------------------------

TEST(Extend, EmbedsInZeros) {
  Tensor a = f64({1, 2, 3, 4}, {2, 2});
  Tensor e = kiln::extend(a, {3, 4}, {1, 1});
  EXPECT_EQ(e.shape(), (Shape{3, 4}));
  EXPECT_EQ(e.dtype(), DType::f64);
  EXPECT_EQ(vals(e), (Vd{0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0}));

  Tensor corner = kiln::extend(a, {3, 3}, {0, 0});
  EXPECT_EQ(vals(corner), (Vd{1, 2, 0, 3, 4, 0, 0, 0, 0}));
  Tensor exact = kiln::extend(a, {2, 2}, {0, 0});
  EXPECT_EQ(vals(exact), (Vd{1, 2, 3, 4}));
  Tensor v = kiln::extend(f64({5, 6}), {5}, {3});
  EXPECT_EQ(vals(v), (Vd{0, 0, 0, 5, 6}));
}

TEST(Extend, WithSteps) {
  Tensor a = f64({1, 2, 3});
  Tensor e2 = kiln::extend(a, {7}, {1}, {2});
  EXPECT_EQ(e2.shape(), (Shape{7}));
  EXPECT_EQ(vals(e2), (Vd{0, 1, 0, 2, 0, 3, 0}));
  Tensor en2 = kiln::extend(a, {7}, {1}, {-2});
  EXPECT_EQ(vals(en2), (Vd{0, 3, 0, 2, 0, 1, 0}));
  EXPECT_EQ(vals(kiln::extend(a, {5}, {0}, {2})), (Vd{1, 0, 2, 0, 3}));
  EXPECT_EQ(vals(kiln::extend(a, {4}, {1}, {-1})), (Vd{0, 3, 2, 1}));
  EXPECT_EQ(vals(kiln::extend(a, {4}, {0}, {1})), (Vd{1, 2, 3, 0}));
  EXPECT_EQ(vals(kiln::extend(f64({1, 2}), {6}, {0}, {3})), (Vd{1, 0, 0, 2, 0, 0}));

  // 2-D: rows spread by 2, columns reversed.
  Tensor m = f64({1, 2, 3, 4}, {2, 2});
  Tensor e = kiln::extend(m, {3, 3}, {0, 1}, {2, -1});
  EXPECT_EQ(e.shape(), (Shape{3, 3}));
  EXPECT_EQ(vals(e), (Vd{0, 2, 1, 0, 0, 0, 0, 4, 3}));
}

TEST(Extend, Errors) {
  Tensor a = f64({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(throws([&] { (void)kiln::extend(a, {3, 3}, {1, 2}); }, ErrorCode::invalid_select,
                     {"extend"}));
  EXPECT_TRUE(throws([&] { (void)kiln::extend(a, {1, 4}, {0, 0}); }, ErrorCode::invalid_select,
                     {"extend"}));
  EXPECT_TRUE(throws([&] { (void)kiln::extend(a, {4, 4}, {3, 0}); }, ErrorCode::invalid_select,
                     {"extend"}));
  // [1,2,3] with step 2 needs 5 places.
  EXPECT_TRUE(throws([&] { (void)kiln::extend(f64({1, 2, 3}), {4}, {0}, {2}); },
                     ErrorCode::invalid_select, {"extend"}));
  EXPECT_TRUE(throws([&] { (void)kiln::extend(f64({1, 2, 3}), {5}, {1}, {-2}); },
                     ErrorCode::invalid_select, {"extend"}));
  // Argument vectors of the wrong length.
  EXPECT_TRUE(throws_any([&] { (void)kiln::extend(a, {3, 3, 3}, {0, 0}); }, "extend"));
  EXPECT_TRUE(throws_any([&] { (void)kiln::extend(a, {3, 3}, {0}); }, "extend"));
}

// ---------------------------------------------------------------------------------------------
// pad
// ---------------------------------------------------------------------------------------------

TEST(Pad, AllAroundWithValue) {
  Tensor a = f64({1, 2, 3, 4}, {2, 2});
  Tensor p = kiln::pad(a, {1, 1}, {1, 1}, 9.0);
  EXPECT_EQ(p.shape(), (Shape{4, 4}));
  EXPECT_EQ(p.dtype(), DType::f64);
  EXPECT_EQ(vals(p), (Vd{9, 9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9, 9, 9, 9}));
}

TEST(Pad, Asymmetric) {
  EXPECT_EQ(vals(kiln::pad(f64({1, 2, 3}), {2}, {0})), (Vd{0, 0, 1, 2, 3}));
  EXPECT_EQ(vals(kiln::pad(f64({1, 2, 3}), {0}, {1}, -1.5)), (Vd{1, 2, 3, -1.5}));
  Tensor a = f64({1, 2, 3, 4}, {2, 2});
  Tensor p = kiln::pad(a, {0, 2}, {1, 0}, 7.0);
  EXPECT_EQ(p.shape(), (Shape{3, 4}));
  EXPECT_EQ(vals(p), (Vd{7, 7, 1, 2, 7, 7, 3, 4, 7, 7, 7, 7}));
  Tensor none = kiln::pad(a, {0, 0}, {0, 0}, 5.0);
  EXPECT_EQ(none.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(none), (Vd{1, 2, 3, 4}));
}

TEST(Pad, IntegerKeepsType) {
  Tensor a = Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4}, {2, 2});
  Tensor p = kiln::pad(a, {1, 0}, {0, 1}, 5);
  EXPECT_EQ(p.dtype(), DType::i32);
  EXPECT_EQ(p.shape(), (Shape{3, 3}));
  EXPECT_EQ(p.to_vector<std::int32_t>(), (std::vector<std::int32_t>{5, 5, 5, 1, 2, 5, 3, 4, 5}));
}

TEST(Pad, Errors) {
  Tensor a = f64({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(throws([&] { (void)kiln::pad(a, {-1, 0}, {0, 0}); }, ErrorCode::invalid_select,
                     {"pad"}));
  EXPECT_TRUE(throws([&] { (void)kiln::pad(a, {0, 0}, {0, -2}); }, ErrorCode::invalid_select,
                     {"pad"}));
  EXPECT_TRUE(throws_any([&] { (void)kiln::pad(a, {1}, {1, 1}); }, "pad"));
  EXPECT_TRUE(throws_any([&] { (void)kiln::pad(a, {1, 1}, {1, 1, 1}); }, "pad"));
}

// ---------------------------------------------------------------------------------------------
// concat
// ---------------------------------------------------------------------------------------------

TEST(Concat, SpecExamples) {
  Tensor a = f64({0, 1, 2, 3}, {2, 2});
  Tensor b = f64({4, 5, 6, 7}, {2, 2});
  Tensor c0 = kiln::concat(a, b, 0);
  EXPECT_EQ(c0.shape(), (Shape{4, 2}));
  EXPECT_EQ(vals(c0), (Vd{0, 1, 2, 3, 4, 5, 6, 7}));
  Tensor c1 = kiln::concat(a, b, 1);
  EXPECT_EQ(c1.shape(), (Shape{2, 4}));
  EXPECT_EQ(vals(c1), (Vd{0, 1, 4, 5, 2, 3, 6, 7}));
  Tensor cv = kiln::concat(std::vector<Tensor>{a, b}, 1);
  EXPECT_EQ(vals(cv), (Vd{0, 1, 4, 5, 2, 3, 6, 7}));
  Tensor cn = kiln::concat(a, b, -1);
  EXPECT_EQ(cn.shape(), (Shape{2, 4}));
  EXPECT_EQ(vals(cn), (Vd{0, 1, 4, 5, 2, 3, 6, 7}));
  // Nested-list construction gives the same.
  Tensor ta = kiln::tensor<double>({{0, 1}, {2, 3}}, kiln::DType::f64);
  Tensor tb = kiln::tensor<double>({{4, 5}, {6, 7}}, kiln::DType::f64);
  EXPECT_EQ(vals(kiln::concat(ta, tb, 0)), (Vd{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Concat, ThreeDAlongEachAxis) {
  Tensor a = f64({1, 2, 3, 4}, {1, 2, 2});
  Tensor b = f64({5, 6, 7, 8}, {1, 2, 2});
  Tensor c0 = kiln::concat(a, b, 0);
  EXPECT_EQ(c0.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals(c0), (Vd{1, 2, 3, 4, 5, 6, 7, 8}));
  Tensor c1 = kiln::concat(a, b, 1);
  EXPECT_EQ(c1.shape(), (Shape{1, 4, 2}));
  EXPECT_EQ(vals(c1), (Vd{1, 2, 3, 4, 5, 6, 7, 8}));
  Tensor c2 = kiln::concat(a, b, 2);
  EXPECT_EQ(c2.shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(vals(c2), (Vd{1, 2, 5, 6, 3, 4, 7, 8}));
}

TEST(Concat, ThreeParts) {
  Tensor a = f64({1, 2}, {2, 1});
  Tensor b = f64({3, 4, 5, 6}, {2, 2});
  Tensor c = f64({7, 8}, {2, 1});
  Tensor r = kiln::concat({a, b, c}, 1);
  EXPECT_EQ(r.shape(), (Shape{2, 4}));
  EXPECT_EQ(vals(r), (Vd{1, 3, 4, 7, 2, 5, 6, 8}));

  Tensor x = f64({1, 2}, {1, 2});
  Tensor y = f64({3, 4, 5, 6}, {2, 2});
  Tensor z = f64({7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor r0 = kiln::concat({x, y, z}, 0);
  EXPECT_EQ(r0.shape(), (Shape{6, 2}));
  EXPECT_EQ(vals(r0), iota(12, 1));

  // Parts that are views.
  Tensor m = f64(iota(6), {2, 3});
  Tensor rv = kiln::concat(
      {kiln::reverse_dims(m), kiln::slice(kiln::reverse_dims(m), {-1, 0}, {-4, 2}, {-1, 1}),
       f64({9, 9}, {1, 2})},
      0);
  EXPECT_EQ(rv.shape(), (Shape{7, 2}));
  EXPECT_EQ(vals(rv), (Vd{0, 3, 1, 4, 2, 5, 2, 5, 1, 4, 0, 3, 9, 9}));
}

TEST(Concat, MixedDtypesPromote) {
  Tensor i = Tensor::from(std::vector<std::int32_t>{0, 1, 2, 3}, {2, 2});
  Tensor d = f64({4.5, 5.5, 6.5, 7.5}, {2, 2});
  Tensor r = kiln::concat(i, d, 0);
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_EQ(vals(r), (Vd{0, 1, 2, 3, 4.5, 5.5, 6.5, 7.5}));

  Tensor l = Tensor::from(std::vector<std::int64_t>{4, 5, 6, 7}, {2, 2});
  Tensor il = kiln::concat(i, l, 1);
  EXPECT_EQ(il.dtype(), DType::i64);
  EXPECT_EQ(il.to_vector<std::int64_t>(), (Vi64{0, 1, 4, 5, 2, 3, 6, 7}));

  Tensor f = Tensor::from(std::vector<float>{0.5f, 1.5f}, {1, 2});
  Tensor three = kiln::concat({l, f, i}, 0);
  EXPECT_EQ(three.dtype(), DType::f32);
  EXPECT_EQ(three.shape(), (Shape{5, 2}));
  EXPECT_EQ(three.to_vector<float>(),
            (std::vector<float>{4, 5, 6, 7, 0.5f, 1.5f, 0, 1, 2, 3}));
}

TEST(Concat, Errors) {
  Tensor a = f64(iota(4), {2, 2});
  Tensor b = f64(iota(6), {2, 3});
  Tensor v = f64(iota(2));
  EXPECT_TRUE(throws([&] { (void)kiln::concat(a, b, 0); }, ErrorCode::incompatible_shapes,
                     {"concat"}));
  EXPECT_EQ(code_of([&] { (void)kiln::concat(a, b, 1); }), ErrorCode::none);
  EXPECT_TRUE(throws([&] { (void)kiln::concat({a, a, b}, 0); }, ErrorCode::incompatible_shapes,
                     {"concat"}));
  EXPECT_TRUE(throws([&] { (void)kiln::concat(a, v, 0); }, ErrorCode::illegal_dimensionality,
                     {"concat"}));
  EXPECT_TRUE(throws([&] { (void)kiln::concat({a, a, v}, 1); },
                     ErrorCode::illegal_dimensionality, {"concat"}));
  EXPECT_TRUE(throws([&] { (void)kiln::concat(a, a, 2); }, ErrorCode::illegal_dimension,
                     {"concat"}));
}

// ---------------------------------------------------------------------------------------------
// expand / repeat
// ---------------------------------------------------------------------------------------------

TEST(Expand, InsertsRepeatedDimension) {
  Tensor v = f64({1, 2, 3});
  Tensor e0 = kiln::unsqueeze_expand(v, 0, 2);
  EXPECT_EQ(e0.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(e0), (Vd{1, 2, 3, 1, 2, 3}));
  Tensor e1 = kiln::unsqueeze_expand(v, 1, 2);
  EXPECT_EQ(e1.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(e1), (Vd{1, 1, 2, 2, 3, 3}));

  Tensor m = f64({1, 2, 3, 4}, {2, 2});
  Tensor m0 = kiln::unsqueeze_expand(m, 0, 2);
  EXPECT_EQ(m0.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals(m0), (Vd{1, 2, 3, 4, 1, 2, 3, 4}));
  Tensor m1 = kiln::unsqueeze_expand(m, 1, 3);
  EXPECT_EQ(m1.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(vals(m1), (Vd{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  Tensor m2 = kiln::unsqueeze_expand(m, 2, 2);
  EXPECT_EQ(m2.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals(m2), (Vd{1, 1, 2, 2, 3, 3, 4, 4}));
  Tensor one = kiln::unsqueeze_expand(m, 1, 1);
  EXPECT_EQ(one.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(vals(one), (Vd{1, 2, 3, 4}));
}

TEST(Expand, Errors) {
  Tensor m = f64({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(throws([&] { (void)kiln::unsqueeze_expand(m, 3, 2); }, ErrorCode::illegal_dimension,
                     {"expand"}));
  EXPECT_TRUE(throws([&] { (void)kiln::unsqueeze_expand(m, 7, 2); }, ErrorCode::illegal_dimension,
                     {"expand"}));
}

TEST(Repeat, SpecExampleTotalCopies) {
  Tensor a = f64({0, 1, 2, 3}, {2, 2});
  Tensor r = kiln::repeat(a, {2, 3});
  EXPECT_EQ(r.shape(), (Shape{4, 6}));
  EXPECT_EQ(vals(r), (Vd{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
  Tensor id = kiln::repeat(a, {1, 1});
  EXPECT_EQ(id.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(id), (Vd{0, 1, 2, 3}));
  Tensor rows = kiln::repeat(a, {3, 1});
  EXPECT_EQ(rows.shape(), (Shape{6, 2}));
  EXPECT_EQ(vals(rows), (Vd{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(vals(kiln::repeat(f64({1, 2}), {3})), (Vd{1, 2, 1, 2, 1, 2}));
}

TEST(Repeat, ThreeD) {
  Tensor a = f64({1, 2, 3, 4}, {2, 1, 2});
  Tensor r = kiln::repeat(a, {1, 2, 2});
  EXPECT_EQ(r.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(vals(r), (Vd{1, 2, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 3, 4}));
}

TEST(Repeat, Errors) {
  Tensor a = f64({0, 1, 2, 3}, {2, 2});
  EXPECT_TRUE(throws([&] { (void)kiln::repeat(a, {0, 1}); }, ErrorCode::invalid_select,
                     {"repeat"}));
  EXPECT_TRUE(throws([&] { (void)kiln::repeat(a, {2, 0}); }, ErrorCode::invalid_select,
                     {"repeat"}));
  EXPECT_TRUE(throws([&] { (void)kiln::repeat(a, {-1, 2}); }, ErrorCode::invalid_select,
                     {"repeat"}));
  EXPECT_TRUE(throws_any([&] { (void)kiln::repeat(a, {2}); }, "repeat"));
}

// ---------------------------------------------------------------------------------------------
// squeeze / unsqueeze
// ---------------------------------------------------------------------------------------------

TEST(Squeeze, DropsSizeOneDims) {
  Tensor t = f64(iota(6), {1, 3, 1, 2});
  Tensor all = kiln::squeeze(t);
  EXPECT_EQ(all.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(all), iota(6));
  EXPECT_EQ(t.squeeze().shape(), (Shape{3, 2}));
  EXPECT_EQ(kiln::squeeze(t, 0).shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(kiln::squeeze(t, 2).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(kiln::squeeze(t, -2).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(kiln::squeeze(t, -4).shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(t.squeeze(2).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(vals(kiln::squeeze(t, 2)), iota(6));
  // Nothing to squeeze.
  Tensor m = f64(iota(6), {2, 3});
  EXPECT_EQ(kiln::squeeze(m).shape(), (Shape{2, 3}));
  // All dims of size 1: a 0-d tensor.
  Tensor s = kiln::squeeze(f64({42}, {1, 1}));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_DOUBLE_EQ(s.item<double>(), 42.0);
}

TEST(Squeeze, Errors) {
  Tensor t = f64(iota(6), {1, 3, 1, 2});
  EXPECT_TRUE(throws([&] { (void)kiln::squeeze(t, 1); }, ErrorCode::illegal_dimension,
                     {"squeeze"}));
  EXPECT_TRUE(throws([&] { (void)kiln::squeeze(t, -1); }, ErrorCode::illegal_dimension,
                     {"squeeze"}));
  EXPECT_TRUE(throws([&] { (void)kiln::squeeze(t, 4); }, ErrorCode::illegal_dimension,
                     {"squeeze"}));
  EXPECT_TRUE(throws([&] { (void)kiln::squeeze(t, -5); }, ErrorCode::illegal_dimension,
                     {"squeeze"}));
}

TEST(Unsqueeze, PositiveAndNegativeAxes) {
  Tensor m = f64(iota(6), {2, 3});
  EXPECT_EQ(kiln::unsqueeze(m, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(kiln::unsqueeze(m, 1).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(kiln::unsqueeze(m, 2).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(kiln::unsqueeze(m, -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(kiln::unsqueeze(m, -2).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(kiln::unsqueeze(m, -3).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(m.unsqueeze(1).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(vals(kiln::unsqueeze(m, -2)), iota(6));
  EXPECT_DOUBLE_EQ(kiln::unsqueeze(m, 1).at<double>({1, 0, 2}), 5.0);
  Tensor s = kiln::unsqueeze(kiln::scalar(3.5), 0);
  EXPECT_EQ(s.shape(), (Shape{1}));
  EXPECT_EQ(vals(s), (Vd{3.5}));
  EXPECT_EQ(kiln::unsqueeze(kiln::scalar(3.5), -1).shape(), (Shape{1}));
}

TEST(Unsqueeze, Errors) {
  Tensor m = f64(iota(6), {2, 3});
  EXPECT_TRUE(throws([&] { (void)kiln::unsqueeze(m, 3); }, ErrorCode::illegal_dimension,
                     {"unsqueeze"}));
  EXPECT_TRUE(throws([&] { (void)kiln::unsqueeze(m, -4); }, ErrorCode::illegal_dimension,
                     {"unsqueeze"}));
}

// ---------------------------------------------------------------------------------------------
// contiguous
// ---------------------------------------------------------------------------------------------

TEST(Contiguous, SameValuesAndOpName) {
  // cl-waffe2's ->contiguous example: the transpose of a 3x3 0..8 matrix.
  Tensor m = f64(iota(9), {3, 3});
  Tensor t = kiln::reverse_dims(m);
  Tensor c = kiln::contiguous(t);
  EXPECT_EQ(c.op_name(), "contiguous");
  EXPECT_EQ(c.shape(), (Shape{3, 3}));
  EXPECT_EQ(c.dtype(), DType::f64);
  EXPECT_EQ(vals(c), (Vd{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  EXPECT_EQ(vals(t), (Vd{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  Tensor cm = t.contiguous();
  EXPECT_EQ(cm.op_name(), "contiguous");
  EXPECT_EQ(vals(cm), (Vd{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  // Views on top of a contiguous copy.
  EXPECT_EQ(vals(kiln::slice(c, {0, 2}, {3, 3})), (Vd{6, 7, 8}));
  // Of a plain tensor and of an integer tensor.
  EXPECT_EQ(vals(kiln::contiguous(m)), iota(9));
  Tensor i = Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor ci = kiln::contiguous(kiln::slice(i, {0, -1}, {2, -4}, {1, -1}));
  EXPECT_EQ(ci.dtype(), DType::i32);
  EXPECT_EQ(ci.to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 2, 1, 6, 5, 4}));
}

// ---------------------------------------------------------------------------------------------
// 0-d tensors and zero-size dimensions
// ---------------------------------------------------------------------------------------------

TEST(ZeroD, ReshapePermuteSlice) {
  Tensor s = kiln::scalar(2.5);
  ASSERT_EQ(s.shape(), Shape{});
  Tensor r1 = kiln::reshape(s, {1});
  EXPECT_EQ(r1.shape(), (Shape{1}));
  EXPECT_EQ(vals(r1), (Vd{2.5}));
  Tensor r11 = kiln::reshape(s, {1, 1, 1});
  EXPECT_EQ(r11.shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(vals(r11), (Vd{2.5}));
  Tensor back = kiln::reshape(r11, {});
  EXPECT_EQ(back.shape(), Shape{});
  EXPECT_DOUBLE_EQ(back.item<double>(), 2.5);
  EXPECT_EQ(kiln::reshape(s, {-1}).shape(), (Shape{1}));
  EXPECT_EQ(kiln::reshape(r1, {}).shape(), Shape{});
  EXPECT_EQ(kiln::flatten(s).shape(), (Shape{1}));
  EXPECT_TRUE(throws([&] { (void)kiln::reshape(s, {2}); }, ErrorCode::incompatible_shapes,
                     {"reshape"}));

  Tensor p = kiln::permute(s, {});
  EXPECT_EQ(p.shape(), Shape{});
  EXPECT_DOUBLE_EQ(p.item<double>(), 2.5);
  EXPECT_TRUE(throws([&] { (void)kiln::permute(s, {0}); }, ErrorCode::illegal_dimensionality,
                     {"permute"}));
  Tensor t = kiln::reverse_dims(s);
  EXPECT_EQ(t.shape(), Shape{});
  EXPECT_DOUBLE_EQ(t.item<double>(), 2.5);

  Tensor sl = kiln::slice(s, {}, {});
  EXPECT_EQ(sl.shape(), Shape{});
  EXPECT_DOUBLE_EQ(sl.item<double>(), 2.5);
  Tensor sls = kiln::slice(s, {}, {}, {});
  EXPECT_DOUBLE_EQ(sls.item<double>(), 2.5);
  EXPECT_TRUE(throws([&] { (void)kiln::slice(s, {0}, {1}); }, ErrorCode::illegal_dimensionality,
                     {"slice"}));
}

TEST(ZeroD, ConcatOfZeroDFails) {
  Tensor s = kiln::scalar(1.0);
  EXPECT_TRUE(throws_any([&] { (void)kiln::concat(s, s, 0); }, "concat"));
}

TEST(ZeroSize, ReshapePermuteSliceConcat) {
  Tensor z = kiln::zeros({2, 0, 3}, DType::f64);
  ASSERT_EQ(z.numel(), 0);
  Tensor r = kiln::reshape(z, {0, 6});
  EXPECT_EQ(r.shape(), (Shape{0, 6}));
  EXPECT_TRUE(vals(r).empty());
  EXPECT_EQ(kiln::reshape(z, {3, 0, 5}).shape(), (Shape{3, 0, 5}));
  EXPECT_TRUE(throws([&] { (void)kiln::reshape(z, {1}); }, ErrorCode::incompatible_shapes,
                     {"reshape"}));

  Tensor p = kiln::permute(z, {2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{3, 2, 0}));
  EXPECT_TRUE(vals(p).empty());

  Tensor s = kiln::slice(z, {1, 0, -2}, {2, 0, 3});
  EXPECT_EQ(s.shape(), (Shape{1, 0, 2}));
  EXPECT_TRUE(vals(s).empty());
  Tensor sn = kiln::slice(z, {-1, 0, -1}, {-3, 5, -4}, {-1, 1, -1});
  EXPECT_EQ(sn.shape(), (Shape{2, 0, 3}));

  // Concatenating an empty part contributes nothing.
  Tensor w = f64(iota(6), {2, 1, 3});
  Tensor c = kiln::concat(z, w, 1);
  EXPECT_EQ(c.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(vals(c), iota(6));
  Tensor c2 = kiln::concat({w, z, w}, 1);
  EXPECT_EQ(c2.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(vals(c2), (Vd{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  Tensor e0 = kiln::zeros({0, 3}, DType::f64);
  Tensor c3 = kiln::concat(e0, e0, 0);
  EXPECT_EQ(c3.shape(), (Shape{0, 3}));
  EXPECT_TRUE(vals(c3).empty());
  Tensor c4 = kiln::concat(e0, f64({1, 2, 3}, {1, 3}), 0);
  EXPECT_EQ(c4.shape(), (Shape{1, 3}));
  EXPECT_EQ(vals(c4), (Vd{1, 2, 3}));
}

}  // namespace
