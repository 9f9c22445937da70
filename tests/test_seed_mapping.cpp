// Checks every row of docs/seed-mapping.md on concrete numbers: each Nerv matrix method
// (NervMapping.<method>) and each cl-waffe2 function or family (WaffeMapping.<function>) is
// computed with the kiln expression the table gives and compared with the source's semantics
// written out by hand or with plain loops. Rows marked "not applicable" have no test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::Comparison;
using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using Vd = std::vector<double>;
using Vf = std::vector<float>;
using I64 = std::vector<std::int64_t>;

using kiln_test::code_of;

::testing::AssertionResult all_near(const Vd& got, const Vd& want, double tol = 1e-12) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i]))))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", expected " << want[i];
  return ::testing::AssertionSuccess();
}

// A Nerv-style row-major matrix filled by gen(i, j) (f64 unless told).
Tensor matrix(std::int64_t nrow, std::int64_t ncol, const std::function<double(int, int)>& gen,
              DType dt = DType::f64) {
  Vd v;
  for (int i = 0; i < nrow; ++i)
    for (int j = 0; j < ncol; ++j) v.push_back(gen(i, j));
  return Tensor::from(v, Shape{nrow, ncol}).convert(dt);
}

// The Nerv example's matrix: m[i][j] = i / (j + 1).
Tensor nerv_example(DType dt = DType::f64) {
  return matrix(4, 4, [](int i, int j) { return static_cast<double>(i) / (j + 1); }, dt);
}

// A matrix with distinct, signed values: m[i][j] = (i * ncol + j) * 0.5 - 3.
Tensor distinct(std::int64_t nrow, std::int64_t ncol) {
  return matrix(nrow, ncol,
                [ncol](int i, int j) { return static_cast<double>(i * ncol + j) * 0.5 - 3; });
}

// cl-waffe2's (ax+b shape a b): element k (row-major) is a * k + b, as f32.
Tensor ax_b(Shape shape, float a, float b) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return kiln::reshape(kiln::arange(n), shape).convert(DType::f32) * a + b;
}

Vd row_of(const Vd& m, std::int64_t ncol, std::int64_t r) {
  return Vd(m.begin() + r * ncol, m.begin() + (r + 1) * ncol);
}

// Plain loop matrix product of op(a) [n,k] and op(b) [k,m].
Vd ref_matmul(const Vd& a, const Vd& b, std::int64_t n, std::int64_t k, std::int64_t m) {
  Vd c(static_cast<std::size_t>(n * m), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j)
      for (std::int64_t l = 0; l < k; ++l) c[i * m + j] += a[i * k + l] * b[l * m + j];
  return c;
}

Vd transposed(const Vd& a, std::int64_t nrow, std::int64_t ncol) {
  Vd t(a.size());
  for (std::int64_t i = 0; i < nrow; ++i)
    for (std::int64_t j = 0; j < ncol; ++j) t[j * nrow + i] = a[i * ncol + j];
  return t;
}

// ================================ Nerv matrix methods ==========================================

TEST(NervMapping, constructor) {
  // Matrix(nrow, ncol): MMatrixFloat / CuMatrixFloat f32, ...Double f64, MMatrixInt i64.
  const Tensor f = kiln::zeros({3, 4}, DType::f32);
  const Tensor d = kiln::zeros({3, 4}, DType::f64);
  const Tensor i = kiln::zeros({3, 4}, DType::i64);
  EXPECT_EQ(f.shape(), (Shape{3, 4}));
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(f.to_vector<double>(), Vd(12, 0.0));
}

TEST(NervMapping, get_elem) {
  const Tensor m = distinct(3, 4);
  EXPECT_EQ(kiln::flatten(m).at<double>({5}), 5 * 0.5 - 3);
  EXPECT_EQ(kiln::flatten(m).at<double>({11}), 11 * 0.5 - 3);
}

TEST(NervMapping, set_elem) {
  Tensor m = distinct(3, 4);
  const std::int64_t index = 6;
  const double value = 42.5;
  m = kiln::reshape(kiln::index_set(kiln::flatten(m), kiln::full({1}, value, m.dtype()),
                                    kiln::tensor<std::int64_t>({index})),
                    m.shape());
  EXPECT_EQ(m.shape(), (Shape{3, 4}));
  const Vd v = m.to_vector<double>();
  for (std::size_t k = 0; k < v.size(); ++k)
    EXPECT_EQ(v[k], k == 6 ? 42.5 : static_cast<double>(k) * 0.5 - 3) << k;
}

TEST(NervMapping, ncol_nrow) {
  const Tensor m = distinct(3, 5);
  EXPECT_EQ(m.size(1), 5);
  EXPECT_EQ(m.size(0), 3);
}

TEST(NervMapping, index) {
  // __index__ on a matrix with several rows: the row as a [1, ncol] matrix (a view).
  const Tensor m = distinct(3, 4);
  const Tensor row = kiln::slice_axis(m, 0, 2, 3);
  EXPECT_EQ(row.shape(), (Shape{1, 4}));
  EXPECT_EQ(row.to_vector<double>(), (Vd{1, 1.5, 2, 2.5}));
  // On a one-row matrix: the element.
  EXPECT_EQ(row.at<double>({0, 3}), 2.5);
}

TEST(NervMapping, newindex) {
  // __newindex__(i, v) on a row vector: the same expression as set_elem.
  Tensor r = kiln::tensor<double>({{1, 2, 3}}, kiln::DType::f64);
  r = kiln::reshape(kiln::index_set(kiln::flatten(r), kiln::full({1}, 9.0, r.dtype()),
                                    kiln::tensor<std::int64_t>({std::int64_t{1}})),
                    r.shape());
  EXPECT_EQ(r.shape(), (Shape{1, 3}));
  EXPECT_EQ(r.to_vector<double>(), (Vd{1, 9, 3}));
}

TEST(NervMapping, create) {
  const Tensor a = distinct(2, 3).convert(DType::f32);
  const Tensor c = kiln::zeros(a.shape(), a.dtype());
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(c.dtype(), DType::f32);
}

TEST(NervMapping, colsum) {
  const Tensor m = distinct(3, 4);
  const Tensor r = kiln::sum(m, {0}, true);
  EXPECT_EQ(r.shape(), (Shape{1, 4}));
  // Column j: sum over i of (4i + j) * 0.5 - 3 = (12 + 3j) * 0.5 - 9.
  EXPECT_EQ(r.to_vector<double>(), (Vd{-3, -1.5, 0, 1.5}));
}

TEST(NervMapping, rowsum) {
  const Tensor m = distinct(3, 4);
  const Tensor r = kiln::sum(m, {1}, true);
  EXPECT_EQ(r.shape(), (Shape{3, 1}));
  // Row i: (16i + 6) * 0.5 - 12.
  EXPECT_EQ(r.to_vector<double>(), (Vd{-9, -1, 7}));
}

TEST(NervMapping, rowmax) {
  const Tensor m = kiln::tensor<double>({{1, 7, 3}, {-2, -5, -1}}, kiln::DType::f64);
  const Tensor r = kiln::max(m, {1}, true);
  EXPECT_EQ(r.shape(), (Shape{2, 1}));
  EXPECT_EQ(r.to_vector<double>(), (Vd{7, -1}));
}

TEST(NervMapping, rowmax_idx) {
  const Tensor m = kiln::tensor<double>({{1, 7, 3}, {-2, -5, -1}, {4, 4, 0}}, kiln::DType::f64);
  const Tensor values = kiln::max(m, {1}, true);
  const Tensor columns = kiln::argmax(m, 1, true);
  EXPECT_EQ(values.shape(), (Shape{3, 1}));
  EXPECT_EQ(columns.shape(), (Shape{3, 1}));
  EXPECT_EQ(values.to_vector<double>(), (Vd{7, -1, 4}));
  EXPECT_EQ(columns.to_vector<std::int64_t>(), (I64{1, 2, 0}));
}

TEST(NervMapping, trans) {
  const Tensor m = distinct(2, 3);
  const Tensor t = kiln::reverse_dims(m);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.to_vector<double>(), transposed(m.to_vector<double>(), 2, 3));
  EXPECT_EQ(kiln::contiguous(t).to_vector<double>(), t.to_vector<double>());
}

TEST(NervMapping, copy_fromh_fromd_toh_tod) {
  const Tensor a = distinct(2, 3).convert(DType::f32);
  const Tensor self = kiln::contiguous(a);
  EXPECT_FALSE(self.same_node(a));
  EXPECT_EQ(self.shape(), a.shape());
  EXPECT_EQ(self.dtype(), DType::f32);
  EXPECT_EQ(self.to_vector<float>(), a.to_vector<float>());
  // A host copy as plain values and back.
  const Tensor back = Tensor::from(a.to_vector<float>(), a.shape());
  EXPECT_EQ(back.to_vector<float>(), a.to_vector<float>());
}

TEST(NervMapping, copy_rows_fromh_by_idx) {
  // self[i] = ma[idx[i + idx_begin]], idx an MMatrixInt row vector.
  const Tensor ma = distinct(5, 3);
  const Tensor idx = kiln::tensor<std::int64_t>({{4, 0, 2, 2, 1, 3}});
  const std::int64_t b = 2;
  const Tensor self0 = kiln::zeros({3, 3}, DType::f64);
  const Tensor self = kiln::index(
      ma, kiln::slice_axis(kiln::flatten(idx).convert(DType::i64), 0, b, b + self0.size(0)));
  EXPECT_EQ(self.shape(), (Shape{3, 3}));
  const Vd mv = ma.to_vector<double>();
  Vd want;
  for (std::int64_t r : {2, 2, 1}) {
    const Vd row = row_of(mv, 3, r);
    want.insert(want.end(), row.begin(), row.end());
  }
  EXPECT_EQ(self.to_vector<double>(), want);
}

TEST(NervMapping, copy_rows_fromd_by_idx) {
  // The CuMatrix variant: idx is a float row vector; the indices are converted to integers.
  const Tensor mb = distinct(4, 2).convert(DType::f32);
  const Tensor idx = kiln::tensor<float>({{3.f, 1.f, 0.f, 3.f}});
  const std::int64_t b = 1;
  const Tensor self = kiln::index(
      mb, kiln::slice_axis(kiln::flatten(idx).convert(DType::i64), 0, b, b + 3));
  EXPECT_EQ(self.dtype(), DType::f32);
  const Vd mv = mb.to_vector<double>();
  Vd want;
  for (std::int64_t r : {1, 0, 3}) {
    const Vd row = row_of(mv, 2, r);
    want.insert(want.end(), row.begin(), row.end());
  }
  EXPECT_EQ(self.to_vector<double>(), want);
  // Without the conversion float indices are refused.
  EXPECT_EQ(code_of([&] { kiln::index(mb, kiln::flatten(idx)); }), ErrorCode::wrong_type);
}

TEST(NervMapping, update_select_rows) {
  // self[idx[i]] = self[idx[i]] * (1 - beta * alpha) + alpha * err[i] (distinct indices).
  Tensor self = distinct(4, 3);
  const Vd old = self.to_vector<double>();
  const Tensor err = kiln::tensor<double>({{1, 2, 3}, {10, 20, 30}}, kiln::DType::f64);
  const Tensor idx = kiln::tensor<double>({{3, 1}}, kiln::DType::f64);
  const double alpha = 0.5, beta = 0.1;
  const Tensor i = kiln::flatten(idx).convert(DType::i64);
  self = kiln::index_set(self, kiln::index(self, i) * (1 - beta * alpha) + alpha * err, i);
  Vd want = old;
  const Vd ev = err.to_vector<double>();
  const int rows[] = {3, 1};
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 3; ++j)
      want[rows[k] * 3 + j] = old[rows[k] * 3 + j] * (1 - beta * alpha) + alpha * ev[k * 3 + j];
  EXPECT_TRUE(all_near(self.to_vector<double>(), want));
}

TEST(NervMapping, add) {
  const Tensor ma = distinct(2, 3), mb = nerv_example().slice({0, 0}, {2, 3});
  const double alpha = 2, beta = -0.5;
  const Tensor self = alpha * ma + beta * mb;
  const Vd a = ma.to_vector<double>(), b = mb.to_vector<double>();
  Vd want(a.size());
  for (std::size_t k = 0; k < a.size(); ++k) want[k] = alpha * a[k] + beta * b[k];
  EXPECT_TRUE(all_near(self.to_vector<double>(), want));
  // Float matrices with float alpha/beta stay f32.
  const Tensor f = 2.0f * ma.convert(DType::f32) + -0.5f * mb.convert(DType::f32);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_TRUE(all_near(f.to_vector<double>(), want, 1e-6));
}

TEST(NervMapping, mul) {
  // self = beta * self + alpha * op(ma) * op(mb), op = transpose when 'T'.
  const Tensor self0 = matrix(2, 4, [](int i, int j) { return i - j; });
  const Tensor a23 = distinct(2, 3);
  const Tensor b34 = matrix(3, 4, [](int i, int j) { return 0.25 * (i + 2 * j) - 1; });
  const Tensor b43 = kiln::contiguous(kiln::reverse_dims(b34));
  const double alpha = 1.5, beta = 0.5;
  const Vd s = self0.to_vector<double>();
  const Vd prod = ref_matmul(a23.to_vector<double>(), b34.to_vector<double>(), 2, 3, 4);
  Vd want(s.size());
  for (std::size_t k = 0; k < s.size(); ++k) want[k] = beta * s[k] + alpha * prod[k];
  // 'N', 'N'
  EXPECT_TRUE(all_near((beta * self0 + alpha * kiln::matmul(a23, b34)).to_vector<double>(), want));
  // 'T', 'N': ma is given as [3,2] and used transposed.
  const Tensor a32t = kiln::contiguous(kiln::reverse_dims(a23));
  EXPECT_TRUE(all_near(
      (beta * self0 + alpha * kiln::matmul(kiln::reverse_dims(a32t), b34)).to_vector<double>(),
      want));
  // 'N', 'T'
  EXPECT_TRUE(all_near(
      (beta * self0 + alpha * kiln::matmul(a23, kiln::reverse_dims(b43))).to_vector<double>(),
      want));
  // 'T', 'T'
  EXPECT_TRUE(all_near(
      (beta * self0 + alpha * kiln::matmul(kiln::reverse_dims(a32t), kiln::reverse_dims(b43)))
          .to_vector<double>(),
      want));
}

TEST(NervMapping, add_row) {
  // Add beta * va to every row.
  const Tensor self0 = distinct(3, 2);
  const Tensor va = kiln::tensor<double>({{10, 100}}, kiln::DType::f64);
  const double beta = 0.5;
  const Tensor self = self0 + beta * va;
  const Vd s = self0.to_vector<double>();
  Vd want(s.size());
  for (std::size_t k = 0; k < s.size(); ++k) want[k] = s[k] + beta * (k % 2 ? 100 : 10);
  EXPECT_EQ(self.to_vector<double>(), want);
}

TEST(NervMapping, fill) {
  const Tensor self0 = distinct(2, 3).convert(DType::f32);
  const Tensor self = kiln::full(self0.shape(), 7.25, self0.dtype());
  EXPECT_EQ(self.dtype(), DType::f32);
  EXPECT_EQ(self.shape(), (Shape{2, 3}));
  EXPECT_EQ(self.to_vector<double>(), Vd(6, 7.25));
}

TEST(NervMapping, sigmoid) {
  const Tensor ma = distinct(3, 3);
  const Vd a = ma.to_vector<double>();
  Vd want;
  for (double x : a) want.push_back(1 / (1 + std::exp(-x)));
  EXPECT_TRUE(all_near(kiln::sigmoid(ma).to_vector<double>(), want));
}

TEST(NervMapping, sigmoid_grad) {
  const Tensor err = distinct(2, 3);
  const Tensor output = kiln::sigmoid(nerv_example().slice({0, 0}, {2, 3}));
  const Tensor self = err * output * (1 - output);
  const Vd e = err.to_vector<double>(), o = output.to_vector<double>();
  Vd want;
  for (std::size_t k = 0; k < e.size(); ++k) want.push_back(e[k] * o[k] * (1 - o[k]));
  EXPECT_TRUE(all_near(self.to_vector<double>(), want));
}

TEST(NervMapping, softmax) {
  // The Nerv example: fs:softmax(fm) for fm[i][j] = i / (j + 1), in f32 and f64.
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor a = nerv_example(dt);
    const Tensor self = kiln::softmax(a, 1);
    const Tensor max_index = kiln::argmax(a, 1, true);
    EXPECT_EQ(self.dtype(), dt);
    EXPECT_EQ(max_index.shape(), (Shape{4, 1}));
    const Vd av = a.to_vector<double>(), sv = self.to_vector<double>();
    for (int i = 0; i < 4; ++i) {
      double z = 0;
      for (int j = 0; j < 4; ++j) z += std::exp(av[i * 4 + j]);
      for (int j = 0; j < 4; ++j)
        EXPECT_NEAR(sv[i * 4 + j], std::exp(av[i * 4 + j]) / z, dt == DType::f32 ? 1e-6 : 1e-14);
    }
    // Row 0 is all 0 (first maximum: column 0); the other rows are largest in column 0.
    EXPECT_EQ(max_index.to_vector<std::int64_t>(), (I64{0, 0, 0, 0}));
  }
  const Tensor b = kiln::tensor<double>({{1, 3, 2}, {5, 0, 9}}, kiln::DType::f64);
  EXPECT_EQ(kiln::argmax(b, 1, true).to_vector<std::int64_t>(), (I64{1, 2}));
}

TEST(NervMapping, mul_elem) {
  const Tensor fs = kiln::softmax(nerv_example(), 1);
  const Tensor a = fs * fs;
  const Vd f = fs.to_vector<double>();
  Vd want;
  for (double x : f) want.push_back(x * x);
  EXPECT_TRUE(all_near(a.to_vector<double>(), want));
}

TEST(NervMapping, log_elem) {
  const Tensor fs = kiln::softmax(nerv_example(), 1);
  const Vd f = fs.to_vector<double>();
  Vd want;
  for (double x : f) want.push_back(std::log(x));
  EXPECT_TRUE(all_near(kiln::log(fs).to_vector<double>(), want));
  // Nerv's CUDA kernel clamps at FLT_MIN first; that variant for inputs that may be 0:
  const Vd clamped =
      kiln::log(kiln::maximum(kiln::tensor<double>({0, 1}, kiln::DType::f64), static_cast<double>(FLT_MIN)))
          .to_vector<double>();
  EXPECT_TRUE(all_near(clamped, {std::log(static_cast<double>(FLT_MIN)), 0}));
}

TEST(NervMapping, expand_frm) {
  // self[i] = (a[i-c] ... a[i] ... a[i+c]), rows clamped to [0, nrow-1].
  const Tensor a = distinct(4, 2);
  const std::int64_t context = 1, n = a.size(0), w = 2 * context + 1;
  const Tensor self = kiln::reshape(
      kiln::index(a,
                  kiln::flatten(kiln::minimum(
                      kiln::maximum(kiln::arange({n, w}, 0) + kiln::arange({n, w}, 1) - context, 0),
                      n - 1))),
      {n, a.size(1) * w});
  EXPECT_EQ(self.shape(), (Shape{4, 6}));
  const Vd av = a.to_vector<double>();
  Vd want;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = -context; k <= context; ++k) {
      const std::int64_t r = std::clamp(i + k, std::int64_t{0}, n - 1);
      want.push_back(av[r * 2]);
      want.push_back(av[r * 2 + 1]);
    }
  EXPECT_EQ(self.to_vector<double>(), want);
  // Context 2 on 3 rows: every row clamps somewhere.
  const Tensor b = distinct(3, 1);
  const std::int64_t c2 = 2, w2 = 5, n2 = 3;
  const Tensor s2 = kiln::reshape(
      kiln::index(b,
                  kiln::flatten(kiln::minimum(
                      kiln::maximum(kiln::arange({n2, w2}, 0) + kiln::arange({n2, w2}, 1) - c2, 0),
                      n2 - 1))),
      {n2, b.size(1) * w2});
  const Vd bv = b.to_vector<double>();
  EXPECT_EQ(s2.to_vector<double>(), (Vd{bv[0], bv[0], bv[0], bv[1], bv[2],  //
                                        bv[0], bv[0], bv[1], bv[2], bv[2],  //
                                        bv[0], bv[1], bv[2], bv[2], bv[2]}));
}

TEST(NervMapping, rearrange_frm) {
  // self[i][j] = a[i][j / step + (j % step) * (ncol / step)].
  const Tensor a = distinct(2, 6);
  const std::int64_t step = 2, n = a.size(0);
  const Tensor self = kiln::reshape(
      kiln::transpose(kiln::reshape(a, {n, step, a.size(1) / step}), 1, 2), {n, a.size(1)});
  const Vd av = a.to_vector<double>();
  Vd want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 6; ++j) want.push_back(av[i * 6 + j / 2 + (j % 2) * 3]);
  EXPECT_EQ(self.shape(), (Shape{2, 6}));
  EXPECT_EQ(self.to_vector<double>(), want);
  // step 3 on 6 columns.
  const Tensor s3 =
      kiln::reshape(kiln::transpose(kiln::reshape(a, {n, 3, a.size(1) / 3}), 1, 2), {n, a.size(1)});
  Vd want3;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 6; ++j) want3.push_back(av[i * 6 + j / 3 + (j % 3) * 2]);
  EXPECT_EQ(s3.to_vector<double>(), want3);
}

TEST(NervMapping, scale_row) {
  // Scale each column j of self by scale[0][j].
  const Tensor self0 = distinct(3, 3);
  const Tensor scale = kiln::tensor<double>({{1, -2, 0.5}}, kiln::DType::f64);
  const Tensor self = self0 * scale;
  const Vd s = self0.to_vector<double>();
  const double f[] = {1, -2, 0.5};
  Vd want;
  for (std::size_t k = 0; k < s.size(); ++k) want.push_back(s[k] * f[k % 3]);
  EXPECT_EQ(self.to_vector<double>(), want);
}

TEST(NervMapping, add_sub_operators) {
  const Tensor fs = kiln::softmax(nerv_example(), 1);
  const Vd f = fs.to_vector<double>();
  Vd twice;
  for (double x : f) twice.push_back(2 * x);
  EXPECT_TRUE(all_near((fs + fs).to_vector<double>(), twice));
  EXPECT_EQ((fs - fs).to_vector<double>(), Vd(16, 0.0));
}

TEST(NervMapping, mul_operator) {
  // __mul__ is the matrix product (Nerv implements it with mul(self, b, 1.0, 0.0, 'N', 'N')).
  const Tensor a = distinct(2, 3);
  const Tensor b = matrix(3, 2, [](int i, int j) { return i + 10 * j; });
  const Tensor c = kiln::matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_TRUE(all_near(c.to_vector<double>(),
                       ref_matmul(a.to_vector<double>(), b.to_vector<double>(), 2, 3, 2)));
}

TEST(NervMapping, new_from_host_new_to_host) {
  const Tensor m = nerv_example(DType::f32);
  const Tensor copy = kiln::contiguous(m);
  EXPECT_EQ(copy.dtype(), DType::f32);
  EXPECT_EQ(copy.to_vector<float>(), m.to_vector<float>());
}

TEST(NervMapping, tostring) {
  const std::string s = kiln::to_string(kiln::tensor<double>({{1.5, 2}, {3, 4}}, kiln::DType::f64));
  EXPECT_NE(s.find("[2,2]"), std::string::npos) << s;
  EXPECT_NE(s.find("1.5"), std::string::npos) << s;
  EXPECT_NE(s.find("4"), std::string::npos) << s;
}

TEST(NervMapping, copy_from) {
  // Rows [b_begin, b_end) of mb into ma starting at row a_begin.
  const Tensor ma = distinct(5, 2);
  const Tensor mb = matrix(4, 2, [](int i, int j) { return 100 + 10 * i + j; });
  const std::int64_t b_begin = 1, b_end = 3, a_begin = 2;
  const Tensor r = kiln::index_set(ma, kiln::slice_axis(mb, 0, b_begin, b_end),
                                   kiln::arange(b_end - b_begin) + a_begin);
  Vd want = ma.to_vector<double>();
  want[4] = 110;
  want[5] = 111;
  want[6] = 120;
  want[7] = 121;
  EXPECT_EQ(r.to_vector<double>(), want);
  // Defaults: all of mb at row 0.
  const Tensor r0 = kiln::index_set(ma, mb, kiln::arange(mb.size(0)));
  Vd want0 = mb.to_vector<double>();
  const Vd mav = ma.to_vector<double>();
  want0.push_back(mav[8]);
  want0.push_back(mav[9]);
  EXPECT_EQ(r0.to_vector<double>(), want0);
}

// ================================ cl-waffe2 functions ==========================================

TEST(WaffeMapping, matrix_arith) {
  // !matrix-add / !matrix-sub / !matrix-mul / !matrix-div
  const Tensor x = ax_b({2, 2}, 1, 1), y = ax_b({2, 2}, 2, 1);  // [1,2,3,4], [1,3,5,7]
  EXPECT_EQ((x + y).to_vector<float>(), (Vf{2, 5, 8, 11}));
  EXPECT_EQ((x - y).to_vector<float>(), (Vf{0, -1, -2, -3}));
  EXPECT_EQ((x * y).to_vector<float>(), (Vf{1, 6, 15, 28}));
  EXPECT_EQ((x / y).to_vector<float>(), (Vf{1, 2.f / 3, 3.f / 5, 4.f / 7}));
  EXPECT_EQ((x + y).dtype(), DType::f32);
}

TEST(WaffeMapping, inverse) {
  const Tensor x = kiln::tensor<float>({1.f, 2.f, 4.f, -0.5f});
  EXPECT_EQ(kiln::reciprocal(x).to_vector<float>(), (Vf{1, 0.5f, 0.25f, -2}));
  EXPECT_EQ((1.0f / x).to_vector<float>(), (Vf{1, 0.5f, 0.25f, -2}));
}

TEST(WaffeMapping, scalar_arith) {
  // !scalar-add / -sub / -mul / -div: X op scalar.
  const Tensor x = kiln::tensor<float>({1.f, 2.f, 3.f});
  EXPECT_EQ((x + 2.0f).to_vector<float>(), (Vf{3, 4, 5}));
  EXPECT_EQ((x - 2.0f).to_vector<float>(), (Vf{-1, 0, 1}));
  EXPECT_EQ((x * 2.0f).to_vector<float>(), (Vf{2, 4, 6}));
  EXPECT_EQ((x / 2.0f).to_vector<float>(), (Vf{0.5f, 1, 1.5f}));
  EXPECT_EQ((x / 2.0f).dtype(), DType::f32);
}

TEST(WaffeMapping, sas_arith) {
  // !sas-add / -sub / -mul / -div on two scalars: 0-d tensors.
  const Tensor x = kiln::scalar(6.0), y = kiln::scalar(4.0);
  EXPECT_EQ((x + y).rank(), 0);
  EXPECT_EQ((x + y).item<double>(), 10);
  EXPECT_EQ((x - y).item<double>(), 2);
  EXPECT_EQ((x * y).item<double>(), 24);
  EXPECT_EQ((x / y).item<double>(), 1.5);
}

TEST(WaffeMapping, generic_arith) {
  // !add / !sub / !mul / !div dispatch on tensor/scalar: kiln's overloads.
  const Tensor t = kiln::tensor<double>({1, 2}, kiln::DType::f64);
  EXPECT_EQ(kiln::add(t, t).to_vector<double>(), (Vd{2, 4}));
  EXPECT_EQ(kiln::sub(t, 1.0).to_vector<double>(), (Vd{0, 1}));
  EXPECT_EQ(kiln::mul(3.0, t).to_vector<double>(), (Vd{3, 6}));
  EXPECT_EQ(kiln::div(kiln::scalar(1.0), kiln::scalar(4.0)).item<double>(), 0.25);
}

TEST(WaffeMapping, fold_arith) {
  // !+ / !- / !* / !/ = (reduce #'!add numbers) ...: left folds.
  const Tensor one = kiln::scalar(1.0, DType::f64);
  EXPECT_EQ((one + 2.0 + 3.0 + 4.0 + 5.0).item<double>(), 15);
  EXPECT_EQ((one - 2.0 - 3.0 - 4.0 - 5.0).item<double>(), -13);
  EXPECT_EQ((one * 2.0 * 3.0 * 4.0 * 5.0).item<double>(), 120);
  EXPECT_DOUBLE_EQ((one / 2.0 / 3.0 / 4.0 / 5.0).item<double>(), 1.0 / 120);
  // Of tensors.
  const std::vector<Tensor> ts = {kiln::tensor<double>({1, 2}, kiln::DType::f64), kiln::tensor<double>({3, 4}, kiln::DType::f64),
                                  kiln::tensor<double>({5, 6}, kiln::DType::f64)};
  const Tensor sum = std::accumulate(ts.begin() + 1, ts.end(), ts[0],
                                     [](const Tensor& a, const Tensor& b) { return a + b; });
  EXPECT_EQ(sum.to_vector<double>(), (Vd{9, 12}));
}

TEST(WaffeMapping, move) {
  // (!move place tensor): place takes tensor's visible elements.
  Tensor place = kiln::zeros({2, 3}, DType::f32);
  const Tensor tensor = kiln::reverse_dims(ax_b({3, 2}, 1, 0));
  place = kiln::contiguous(tensor);
  EXPECT_EQ(place.shape(), (Shape{2, 3}));
  EXPECT_EQ(place.to_vector<float>(), (Vf{0, 2, 4, 1, 3, 5}));
}

TEST(WaffeMapping, copy) {
  const Tensor t = ax_b({2, 2}, 1, 0);
  const Tensor c = kiln::contiguous(t);
  EXPECT_FALSE(c.same_node(t));
  EXPECT_EQ(c.to_vector<float>(), t.to_vector<float>());
}

TEST(WaffeMapping, permute) {
  const Tensor a = ax_b({2, 3, 4}, 1, 0);
  // (!permute tensor :~ 0 1): the last two axes swapped.
  const Tensor t = kiln::transpose(a, -2, -1);
  EXPECT_EQ(t.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(t.at<float>({1, 3, 2}), a.at<float>({1, 2, 3}));
  // (!permute tensor (torch-order 2 0 1)).
  const Tensor p = kiln::permute(a, {2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.at<float>({3, 1, 2}), a.at<float>({1, 2, 3}));
}

TEST(WaffeMapping, reshape) {
  const Tensor r = kiln::random_normal({3, 3}, 1, DType::f32);
  EXPECT_EQ(kiln::reshape(r, {1, 9}).shape(), (Shape{1, 9}));   // (!reshape x 1 9)
  EXPECT_EQ(kiln::reshape(r, {-1}).shape(), (Shape{9}));        // (!reshape x t)
  const Tensor x = kiln::zeros({2, 3, 4, 5});
  EXPECT_EQ(kiln::reshape(x, {-1, x.size(3)}).shape(), (Shape{24, 5}));  // (* N C H) W
  const Tensor y = ax_b({5, 3, 2}, 1, 0);
  Shape rev = y.shape();
  std::reverse(rev.begin(), rev.end());
  const Tensor z = kiln::reshape(y, rev);  // (compose #'reverse #'shape)
  EXPECT_EQ(z.shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(z.to_vector<float>(), y.to_vector<float>());
}

TEST(WaffeMapping, view) {
  const Tensor a = ax_b({4, 8}, 1, 0);
  // (!view A 2 t): row 2 as a (1 8) view.
  const Tensor b = kiln::slice_axis(a, 0, 2, 3);
  EXPECT_EQ(b.shape(), (Shape{1, 8}));
  EXPECT_EQ(b.to_vector<float>(), (Vf{16, 17, 18, 19, 20, 21, 22, 23}));
  // (start end) and (start end step) with a negative step.
  EXPECT_EQ(kiln::slice_axis(a, 1, 2, 5).shape(), (Shape{4, 3}));
  EXPECT_EQ(kiln::slice(a, {0, 7}, {1, -9}, {1, -3}).to_vector<float>(), (Vf{7, 4, 1}));
  // (:broadcast N) on an axis of size 1.
  const Tensor r = kiln::broadcast_to(b, {3, 8});
  EXPECT_EQ(r.shape(), (Shape{3, 8}));
  EXPECT_EQ(r.at<float>({2, 5}), 21);
}

TEST(WaffeMapping, flatten) {
  const Tensor a = ax_b({2, 3}, 1, 0);
  EXPECT_EQ(kiln::flatten(a).shape(), (Shape{6}));
  EXPECT_EQ(kiln::flatten(a).to_vector<float>(), (Vf{0, 1, 2, 3, 4, 5}));
}

TEST(WaffeMapping, rankup) {
  // (!rankup (randn `(3 3)) 3 :at 1) -> (3 1 1 1 3); then (!rankup * -3 :at 1) -> (3 3).
  const Tensor x = kiln::random_normal({3, 3}, 2, DType::f32);
  const Tensor up = kiln::unsqueeze(kiln::unsqueeze(kiln::unsqueeze(x, 1), 1), 1);
  EXPECT_EQ(up.shape(), (Shape{3, 1, 1, 1, 3}));
  const Tensor down = kiln::squeeze(kiln::squeeze(kiln::squeeze(up, 1), 1), 1);
  EXPECT_EQ(down.shape(), (Shape{3, 3}));
  EXPECT_EQ(down.to_vector<float>(), x.to_vector<float>());
  // Reducing an axis that is not 1 is an error.
  EXPECT_NE(code_of([&] { kiln::squeeze(x, 1); }), ErrorCode::none);
}

TEST(WaffeMapping, to_scal_to_mat) {
  // ->scal: a tensor of one element to a scalar; ->mat :dims d: a scalar to a d-dim matrix.
  const Tensor m = kiln::tensor<float>({{2.5f}});
  const Tensor s = kiln::reshape(m, {});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.item<float>(), 2.5f);
  const Tensor back = kiln::reshape(s, Shape(3, 1));
  EXPECT_EQ(back.shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(back.item<float>(), 2.5f);
}

TEST(WaffeMapping, t) {
  // !t transposes the last two axes (also of a batch).
  const Tensor a = ax_b({2, 2, 3}, 1, 0);
  const Tensor t = kiln::transpose(a, -2, -1);
  EXPECT_EQ(t.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(t.to_vector<float>(), (Vf{0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11}));
}

TEST(WaffeMapping, contiguous) {
  // (->contiguous (!t (ax+b `(3 3) 1 0))) then tensor-vec: #(0 3 6 1 4 7 2 5 8).
  const Tensor c = kiln::contiguous(kiln::transpose(ax_b({3, 3}, 1, 0), -2, -1));
  EXPECT_EQ(c.to_vector<float>(), (Vf{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(WaffeMapping, proceed) {
  const Tensor y = kiln::sum(ax_b({3, 3}, 1, 0));
  EXPECT_FALSE(y.is_evaluated());
  y.eval();
  EXPECT_TRUE(y.is_evaluated());
  EXPECT_EQ(y.item<float>(), 36);
}

TEST(WaffeMapping, proceed_backward) {
  // (proceed-backward y): forward and backward; the gradients land in the watched variables.
  kiln::GradientContext ctx;
  const Tensor x = kiln::tensor<double>({1, 2, 3}, kiln::DType::f64);
  x.watch();
  const Tensor y = kiln::sum(x * x);
  y.backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().to_vector<double>(), (Vd{2, 4, 6}));
  EXPECT_EQ(y.item<double>(), 14);
}

TEST(WaffeMapping, transform) {
  // (%transform A[i j] -> A[j i]) and (%transform A[~ i j] -> [j i]).
  const Tensor a = ax_b({2, 3}, 1, 0);
  EXPECT_EQ(kiln::reverse_dims(a).to_vector<float>(), (Vf{0, 3, 1, 4, 2, 5}));
  const Tensor b = ax_b({2, 2, 3}, 1, 0);
  EXPECT_EQ(kiln::transpose(b, -2, -1).shape(), (Shape{2, 3, 2}));
  // (%transform A[i j] -> A[~ i j]): a broadcastable leading axis is implicit.
  EXPECT_EQ((kiln::zeros({4, 2, 3}) + a).shape(), (Shape{4, 2, 3}));
}

TEST(WaffeMapping, flexible) {
  const Tensor z = kiln::zeros({3, 3}, DType::f32);
  const Tensor v = ax_b({3}, 1, 0);
  // (!add (ax+b `(3 3) 0 0) (!flexible (ax+b `(3) 1 0))): rows [0 1 2].
  EXPECT_EQ((z + v).to_vector<float>(), (Vf{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  // ... :at -1: columns [0 1 2].
  EXPECT_EQ((z + v.inverse_broadcast()).to_vector<float>(), (Vf{0, 0, 0, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ((z + kiln::unsqueeze(v, -1)).to_vector<float>(), (Vf{0, 0, 0, 1, 1, 1, 2, 2, 2}));
}

TEST(WaffeMapping, unary_math) {
  // !abs !sign !sqrt !square !sin !cos !tan !asin !acos !atan !sinh !cosh !tanh !asinh !acosh
  // !atanh !exp !log2 !log10 !loge !log1p.
  const Vd xs = {0.1, 0.25, 0.5, 0.9};
  const Tensor x = Tensor::from(xs);
  const Tensor big = x + 1.0;  // for acosh
  const std::vector<std::pair<Tensor, std::function<double(double)>>> cases = {
      {kiln::sqrt(x), [](double v) { return std::sqrt(v); }},
      {kiln::square(x), [](double v) { return v * v; }},
      {kiln::sin(x), [](double v) { return std::sin(v); }},
      {kiln::cos(x), [](double v) { return std::cos(v); }},
      {kiln::tan(x), [](double v) { return std::tan(v); }},
      {kiln::asin(x), [](double v) { return std::asin(v); }},
      {kiln::acos(x), [](double v) { return std::acos(v); }},
      {kiln::atan(x), [](double v) { return std::atan(v); }},
      {kiln::sinh(x), [](double v) { return std::sinh(v); }},
      {kiln::cosh(x), [](double v) { return std::cosh(v); }},
      {kiln::tanh(x), [](double v) { return std::tanh(v); }},
      {kiln::asinh(x), [](double v) { return std::asinh(v); }},
      {kiln::acosh(big), [](double v) { return std::acosh(v + 1); }},
      {kiln::atanh(x), [](double v) { return std::atanh(v); }},
      {kiln::exp(x), [](double v) { return std::exp(v); }},
      {kiln::log2(x), [](double v) { return std::log2(v); }},
      {kiln::log10(x), [](double v) { return std::log10(v); }},
      {kiln::log(x), [](double v) { return std::log(v); }},
      {kiln::log1p(x), [](double v) { return std::log1p(v); }},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    Vd want;
    for (double v : xs) want.push_back(cases[c].second(v));
    EXPECT_TRUE(all_near(cases[c].first.to_vector<double>(), want, 1e-14)) << "case " << c;
  }
  const Tensor s = kiln::tensor<double>({-2, 0, 3}, kiln::DType::f64);
  EXPECT_EQ(kiln::abs(s).to_vector<double>(), (Vd{2, 0, 3}));
  // cl-waffe2's !sign is the usual sign, as kiln's C++ sign (the C API's fsign is 1 at 0).
  EXPECT_EQ(kiln::sign(s).to_vector<double>(), (Vd{-1, 0, 1}));
}

TEST(WaffeMapping, expt) {
  const Tensor x = kiln::tensor<double>({1, 2, 3}, kiln::DType::f64);
  EXPECT_EQ(kiln::pow(x, 3.0).to_vector<double>(), (Vd{1, 8, 27}));
  EXPECT_TRUE(all_near(kiln::pow(x, kiln::scalar(0.5)).to_vector<double>(),
                       {1, std::sqrt(2.0), std::sqrt(3.0)}));
}

TEST(WaffeMapping, sum_mean) {
  const Tensor a = ax_b({2, 3}, 1, 0);
  EXPECT_EQ(kiln::sum(a).item<float>(), 15);                        // :axis t
  EXPECT_EQ(kiln::sum(a, {1}, true).shape(), (Shape{2, 1}));        // :axis 1 :keepdims t
  EXPECT_EQ(kiln::sum(a, {-1}).to_vector<float>(), (Vf{3, 12}));    // :axis -1
  EXPECT_EQ(kiln::mean(a, {0}).to_vector<float>(), (Vf{1.5f, 2.5f, 3.5f}));
  EXPECT_EQ(kiln::mean(a).item<float>(), 2.5f);
}

TEST(WaffeMapping, argmax_argmin_max_min) {
  // :axis -1, the reduced axis kept as 1 ("dimensions behind axis replaced with 1").
  const Tensor a = kiln::tensor<float>({{1.f, 9.f, 3.f}, {7.f, -1.f, 7.f}});
  EXPECT_EQ(kiln::argmax(a, -1, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(kiln::argmax(a, -1, true).to_vector<std::int64_t>(), (I64{1, 0}));
  EXPECT_EQ(kiln::argmin(a, -1, true).to_vector<std::int64_t>(), (I64{0, 1}));
  EXPECT_EQ(kiln::max(a, {-1}, true).to_vector<float>(), (Vf{9, 7}));
  EXPECT_EQ(kiln::min(a, {-1}, true).to_vector<float>(), (Vf{1, -1}));
  EXPECT_EQ(kiln::min(a, {-1}, true).shape(), (Shape{2, 1}));
}

TEST(WaffeMapping, matmul) {
  const Tensor x = distinct(2, 3), y = distinct(3, 4);
  const Vd want = ref_matmul(x.to_vector<double>(), y.to_vector<double>(), 2, 3, 4);
  EXPECT_TRUE(all_near(kiln::matmul(x, y).to_vector<double>(), want));
  // :transpose-x t / :transpose-y t.
  const Tensor xt = kiln::contiguous(kiln::reverse_dims(x)),
               yt = kiln::contiguous(kiln::reverse_dims(y));
  EXPECT_TRUE(all_near(kiln::matmul(kiln::transpose(xt, -2, -1), y).to_vector<double>(), want));
  EXPECT_TRUE(all_near(kiln::matmul(x, kiln::transpose(yt, -2, -1)).to_vector<double>(), want));
}

TEST(WaffeMapping, dot) {
  // (!dot (randn `(100)) (randn `(10 10))): kiln's dot takes two vectors, so flatten.
  const Tensor x = kiln::random_normal({100}, 3, DType::f64),
               y = kiln::random_normal({10, 10}, 4, DType::f64);
  const Tensor d = kiln::dot(x, kiln::flatten(y));
  EXPECT_EQ(d.rank(), 0);
  const Vd xv = x.to_vector<double>(), yv = y.to_vector<double>();
  EXPECT_NEAR(d.item<double>(), std::inner_product(xv.begin(), xv.end(), yv.begin(), 0.0), 1e-10);
}

TEST(WaffeMapping, lazy) {
  // (lazy #'sin (randn `(3 3)) :diff #'cos)
  const Tensor x = kiln::random_normal({3, 3}, 6, DType::f32);
  const Tensor y = kiln::map_elements(x, [](double v) { return std::sin(v); },
                                      [](double v) { return std::cos(v); });
  EXPECT_EQ(y.dtype(), DType::f32);
  const Vd xv = x.to_vector<double>(), yv = y.to_vector<double>();
  for (std::size_t k = 0; k < xv.size(); ++k) EXPECT_NEAR(yv[k], std::sin(xv[k]), 1e-6);
}

TEST(WaffeMapping, lazy_diff) {
  // The :diff of (lazy #'sin x :diff #'cos) is what autodiff uses: d/dx sum(sin x) = cos x.
  kiln::GradientContext ctx;
  const Tensor x = kiln::tensor<double>({0.1, 0.5, 1.0}, kiln::DType::f64);
  x.watch();
  const Tensor y = kiln::sum(kiln::map_elements(x, [](double v) { return std::sin(v); },
                                                [](double v) { return std::cos(v); }));
  EXPECT_TRUE(all_near(kiln::gradient(y, x).to_vector<double>(),
                       {std::cos(0.1), std::cos(0.5), std::cos(1.0)}));
}

TEST(WaffeMapping, lazy_reduce) {
  // (lazy-reduce (topk 3) (ax+b `(10 10) 1 0) :reduce-to 3) and (lazy-reduce #'max ...).
  const Tensor a = ax_b({10, 10}, 1, 0);
  const Tensor top = kiln::reduce_rows(a, 3, [](std::span<const double> row, std::span<double> out) {
    Vd v(row.begin(), row.end());
    std::partial_sort(v.begin(), v.begin() + 3, v.end(), std::greater<>());
    std::copy(v.begin(), v.begin() + 3, out.begin());
  });
  EXPECT_EQ(top.shape(), (Shape{10, 3}));
  EXPECT_EQ(kiln::slice_axis(top, 0, 4, 5).to_vector<double>(), (Vd{49, 48, 47}));
  const Tensor mx = kiln::reduce_rows(a, 1, [](std::span<const double> row, std::span<double> out) {
    out[0] = *std::max_element(row.begin(), row.end());
  });
  EXPECT_EQ(mx.shape(), (Shape{10, 1}));
  EXPECT_EQ(mx.to_vector<double>(), (Vd{9, 19, 29, 39, 49, 59, 69, 79, 89, 99}));
}

TEST(WaffeMapping, where) {
  // (!where x #'evenp :true-then 5 :false-then -5)
  const Tensor x = kiln::tensor<std::int32_t>({0, 1, 2, 7, 8});
  EXPECT_EQ(kiln::where(kiln::even(x), kiln::scalar(5), kiln::scalar(-5))
                .to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{5, -5, 5, -5, 5}));
  // Any condition through a user kernel: (!where x (lambda (v) (> v 0.5)) :true-then 1.5).
  const Tensor f = kiln::tensor<double>({0.2, 0.7, 0.5}, kiln::DType::f64);
  const Tensor r = kiln::where(kiln::map_elements(f, [](double v) { return v > 0.5 ? 1.0 : 0.0; }),
                               kiln::scalar(1.5), kiln::scalar(0.0));
  EXPECT_EQ(r.to_vector<double>(), (Vd{0, 1.5, 0}));
}

TEST(WaffeMapping, compare) {
  // (!compare x y #'> :true-then 2 :false-then -2)
  const Tensor x = kiln::tensor<double>({1, 5, 3}, kiln::DType::f64), y = kiln::tensor<double>({2, 4, 3}, kiln::DType::f64);
  EXPECT_EQ(kiln::compare(x, y, Comparison::greater, 2, -2).to_vector<double>(),
            (Vd{-2, 2, -2}));
}

TEST(WaffeMapping, a_op_scal) {
  // a>scal a<scal a>=scal a<=scal a=scal with :true-then 1 :false-then 0 and chosen values.
  const Tensor a = kiln::tensor<double>({1, 2, 3}, kiln::DType::f64);
  const double s = 2;
  EXPECT_EQ(kiln::compare(a, kiln::scalar(s), Comparison::greater, 1, 0).to_vector<double>(),
            (Vd{0, 0, 1}));
  EXPECT_EQ(kiln::compare(a, kiln::scalar(s), Comparison::less, 1, 0).to_vector<double>(),
            (Vd{1, 0, 0}));
  EXPECT_EQ(kiln::compare(a, kiln::scalar(s), Comparison::greater_equal, 1, 0).to_vector<double>(),
            (Vd{0, 1, 1}));
  EXPECT_EQ(kiln::compare(a, kiln::scalar(s), Comparison::less_equal, 1, 0).to_vector<double>(),
            (Vd{1, 1, 0}));
  EXPECT_EQ(kiln::compare(a, kiln::scalar(s), Comparison::equal, 9, -9).to_vector<double>(),
            (Vd{-9, 9, -9}));
}

TEST(WaffeMapping, a_op_b) {
  // a>b a<b a>=b a<=b a=b
  const Tensor a = kiln::tensor<double>({1, 2, 3}, kiln::DType::f64), b = kiln::tensor<double>({3, 2, 1}, kiln::DType::f64);
  EXPECT_EQ(kiln::compare(a, b, Comparison::greater, 1, 0).to_vector<double>(), (Vd{0, 0, 1}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::less, 1, 0).to_vector<double>(), (Vd{1, 0, 0}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::greater_equal, 1, 0).to_vector<double>(),
            (Vd{0, 1, 1}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::less_equal, 1, 0).to_vector<double>(), (Vd{1, 1, 0}));
  EXPECT_EQ(kiln::compare(a, b, Comparison::equal, 0.5, 0.25).to_vector<double>(),
            (Vd{0.25, 0.5, 0.25}));
}

TEST(WaffeMapping, padding) {
  // (padding (ax+b `(3 3) 0 1) `((1 1) (1 1))): ones inside a frame of zeros.
  const Tensor p = kiln::pad(ax_b({3, 3}, 0, 1), {1, 1}, {1, 1});
  EXPECT_EQ(p.shape(), (Shape{5, 5}));
  EXPECT_EQ(p.to_vector<float>(), (Vf{0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0,
                                      0, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(p.dtype(), DType::f32);
  // (padding (ax+b `(1 3) 0 1) `((1 1) (1 1))) and a `t` entry (that axis unpadded).
  EXPECT_EQ(kiln::pad(ax_b({1, 3}, 0, 1), {1, 1}, {1, 1}).shape(), (Shape{3, 5}));
  EXPECT_EQ(kiln::pad(ax_b({1, 3}, 0, 1), {0, 2}, {0, 1}).shape(), (Shape{1, 6}));
}

TEST(WaffeMapping, broadcast_to) {
  // (!mul x (!view (!sum x :axis 1) (broadcast-to x)))
  const Tensor x = ax_b({3, 3}, 1, 0);
  const Tensor r = x * kiln::broadcast_to(kiln::sum(x, {1}, true), x.shape());
  EXPECT_EQ(r.to_vector<float>(), (Vf{0, 3, 6, 36, 48, 60, 126, 147, 168}));
  // Broadcasting happens implicitly too.
  EXPECT_EQ((x * kiln::sum(x, {1}, true)).to_vector<float>(), r.to_vector<float>());
}

TEST(WaffeMapping, creation_helpers) {
  // ax+b and randn as used in the examples.
  EXPECT_EQ(ax_b({2, 2}, 2, 1).to_vector<float>(), (Vf{1, 3, 5, 7}));
  const Tensor r = kiln::random_normal({3, 3}, 10, DType::f32);
  EXPECT_EQ(r.shape(), (Shape{3, 3}));
  EXPECT_EQ(r.dtype(), DType::f32);
}

}  // namespace
