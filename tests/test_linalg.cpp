// The linalg ops (kiln/linalg.hpp) on hand values: known inverses and determinants, the
// decompositions reconstructing their input, batches, vectors on the right, types and errors.
// Every executor runs the same LAPACK code (RegistryOps compares them); gradients are checked in
// test_gradcheck.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

Tensor m64(std::vector<double> v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor mT(const Tensor& x) { return kiln::transpose(x, -1, -2); }

void expect_near(const Tensor& got, const std::vector<double>& want, double tol = 1e-12) {
  const auto v = kiln::convert(got, DType::f64).to_vector<double>();
  ASSERT_EQ(v.size(), want.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], tol) << "element " << i;
}
void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  ASSERT_EQ(a.shape(), b.shape());
  expect_near(a, kiln::convert(b, DType::f64).to_vector<double>(), tol);
}

// A singular 3 x 3: det = 2 (3 - 2) - 0 + 1 (1 - 3) = 0.
const std::vector<double> kA3 = {2, 0, 1, 1, 3, 2, 1, 1, 1};
// A 3 x 3 with known inverse (the adjugate over 9) and determinant.
const std::vector<double> kB3 = {4, 7, 2, 3, 6, 1, 2, 5, 3};  // det = 4*13 - 7*7 + 2*3 = 9

TEST(Linalg, InverseAndDeterminantOfKnownMatrices) {
  const Tensor a = m64({4, 7, 2, 6}, {2, 2});
  expect_near(kiln::det(a), {10});
  expect_near(kiln::inv(a), {0.6, -0.7, -0.2, 0.4});
  const Tensor b = m64(kB3, {3, 3});
  expect_near(kiln::det(b), {9});
  // The adjugate over 9.
  expect_near(kiln::inv(b) * 9.0, {13, -11, -5, -7, 8, 2, 3, -6, 3}, 1e-11);
  // A row exchange flips the sign.
  expect_near(kiln::det(m64({0, 1, 1, 0}, {2, 2})), {-1});
  // An exactly singular matrix has determinant 0 (no error).
  expect_near(kiln::det(m64(kA3, {3, 3})), {0});
  expect_near(kiln::det(m64({}, {0, 0})), {1});
}

TEST(Linalg, SolveMatricesVectorsAndBatches) {
  const Tensor a = m64(kB3, {3, 3});
  const Tensor x = m64({1, 2, -1, 0, 3, 1}, {3, 2});
  expect_close(kiln::solve(a, kiln::matmul(a, x)), x, 1e-12);
  // A vector on the right gives a vector.
  const Tensor v = m64({1, -2, 0.5}, {3});
  const Tensor sv = kiln::solve(a, kiln::matmul(a, v.reshape({3, 1})).reshape({3}));
  EXPECT_EQ(sv.shape(), (Shape{3}));
  expect_close(sv, v, 1e-12);
  // Batched A [2, 3, 3] with a broadcast B [3, 2]; batched vectors [2, 3].
  const Tensor a2 = kiln::stack({a, a + kiln::eye(3, 3, DType::f64) * 2.0}, 0);
  const Tensor b = m64({1, 0, 0, 1, 1, 1}, {3, 2});
  const Tensor xs = kiln::solve(a2, b);
  EXPECT_EQ(xs.shape(), (Shape{2, 3, 2}));
  expect_close(kiln::matmul(a2, xs), kiln::broadcast_to(b, {2, 3, 2}), 1e-12);
  const Tensor bv = m64({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor xv = kiln::solve(a2, bv);
  EXPECT_EQ(xv.shape(), (Shape{2, 3}));
  expect_close(kiln::matmul(a2, xv.unsqueeze(-1)).reshape({2, 3}), bv, 1e-12);
  // inv of a batch; f32 works and mixes with f64 (promoted).
  expect_close(kiln::matmul(a2, kiln::inv(a2)), kiln::broadcast_to(kiln::eye(3, 3, DType::f64), {2, 3, 3}), 1e-12);
  const Tensor a32 = kiln::convert(a, DType::f32);
  EXPECT_EQ(kiln::inv(a32).dtype(), DType::f32);
  expect_near(kiln::inv(a32) * 9.0, {13, -11, -5, -7, 8, 2, 3, -6, 3}, 1e-4);
  EXPECT_EQ(kiln::solve(a32, x).dtype(), DType::f64);
}

TEST(Linalg, CholeskyReconstructs) {
  const Tensor a = m64({4, 12, -16, 12, 37, -43, -16, -43, 98}, {3, 3});
  const Tensor l = kiln::cholesky(a);
  expect_near(l, {2, 0, 0, 6, 1, 0, -8, 5, 3});
  expect_close(kiln::matmul(l, mT(l)), a, 1e-12);
  // Only the lower triangle is read.
  expect_near(kiln::cholesky(kiln::tril(a)), {2, 0, 0, 6, 1, 0, -8, 5, 3});
  // A batch, in f32.
  const Tensor b = kiln::convert(kiln::stack({a, a * 4.0}, 0), DType::f32);
  const Tensor lb = kiln::cholesky(b);
  expect_near(lb, {2, 0, 0, 6, 1, 0, -8, 5, 3, 4, 0, 0, 12, 2, 0, -16, 10, 6}, 1e-5);
}

TEST(Linalg, QrReconstructsTallWideAndBatched) {
  for (Shape s : {Shape{5, 3}, Shape{3, 5}, Shape{4, 4}, Shape{2, 3, 4, 2}}) {
    const Tensor a = kiln::uniform(s, 7, DType::f64) - 0.5;
    const kiln::QR f = kiln::qr(a);
    const std::int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
    EXPECT_EQ(f.q.shape().back(), k);
    EXPECT_EQ(f.r.shape()[f.r.rank() - 2], k);
    expect_close(kiln::matmul(f.q, f.r), a, 1e-12);
    expect_close(kiln::matmul(mT(f.q), f.q),
                 kiln::broadcast_to(kiln::eye(k, k, DType::f64), f.r.shape().size() == 2
                                                                      ? Shape{k, k}
                                                                      : Shape{2, 3, k, k}),
                 1e-12);
    expect_close(kiln::triu(f.r), f.r, 0);
  }
}

TEST(Linalg, SvdReconstructsWithDescendingValues) {
  // Singular values of a known matrix: diag(3, 2) rotated.
  const Tensor d = m64({0, 2, 3, 0}, {2, 2});
  expect_near(kiln::svd(d).s, {3, 2});
  for (Shape s : {Shape{5, 3}, Shape{3, 5}, Shape{2, 4, 4}}) {
    const Tensor a = kiln::uniform(s, 11, DType::f64) - 0.5;
    const kiln::SVD f = kiln::svd(a);
    expect_close(kiln::matmul(f.u * f.s.unsqueeze(-2), f.vh), a, 1e-12);
    const auto sv = f.s.to_vector<double>();
    const std::size_t k = static_cast<std::size_t>(f.s.shape().back());
    for (std::size_t i = 0; i < sv.size(); ++i) {
      EXPECT_GE(sv[i], 0);
      if (i % k != 0) EXPECT_LE(sv[i], sv[i - 1]);
    }
  }
  const Tensor a32 = kiln::uniform({4, 3}, 2, DType::f32);
  const kiln::SVD f = kiln::svd(a32);
  EXPECT_EQ(f.u.dtype(), DType::f32);
  expect_close(kiln::matmul(f.u * f.s.unsqueeze(-2), f.vh), a32, 1e-5);
}

TEST(Linalg, EighReconstructsWithAscendingValues) {
  const Tensor a = m64({2, 1, 1, 2}, {2, 2});
  const kiln::Eigh e = kiln::eigh(a);
  expect_near(e.eigenvalues, {1, 3});
  expect_near(kiln::abs(e.eigenvectors), {std::sqrt(0.5), std::sqrt(0.5), std::sqrt(0.5),
                                          std::sqrt(0.5)});
  const Tensor m = kiln::uniform({3, 4, 4}, 5, DType::f64) - 0.5;
  const Tensor s = m + mT(m);
  const kiln::Eigh f = kiln::eigh(s);
  const Tensor& v = f.eigenvectors;
  expect_close(kiln::matmul(v * f.eigenvalues.unsqueeze(-2), mT(v)), s, 1e-12);
  const auto w = f.eigenvalues.to_vector<double>();
  for (std::size_t i = 0; i < w.size(); ++i)
    if (i % 4 != 0) EXPECT_GE(w[i], w[i - 1]);
}

TEST(Linalg, LstsqSolvesExactAndOverdeterminedSystems) {
  // y = 1 + 2 t fitted exactly, and with noise its normal equations hold.
  const Tensor a = m64({1, 0, 1, 1, 1, 2, 1, 3}, {4, 2});
  expect_near(kiln::lstsq(a, m64({1, 3, 5, 7}, {4})), {1, 2}, 1e-12);
  const Tensor b = m64({1.1, 2.9, 5.2, 6.8, 0, 1, 0, 1}, {2, 4}).transpose(0, 1);
  const Tensor x = kiln::lstsq(a, b);
  EXPECT_EQ(x.shape(), (Shape{2, 2}));
  expect_close(kiln::matmul(mT(a), kiln::matmul(a, x) - b), kiln::zeros({2, 2}, DType::f64),
               1e-12);
  // Batched, and a square system is solve.
  const Tensor sq = kiln::stack({m64(kB3, {3, 3}), m64(kB3, {3, 3}) * 2.0}, 0);
  const Tensor rhs = m64({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_close(kiln::lstsq(sq, rhs), kiln::solve(sq, rhs), 1e-12);
  // Underdetermined: the minimum-norm solution of x + y = 2 is (1, 1).
  expect_near(kiln::lstsq(m64({1, 1}, {1, 2}), m64({2}, {1})), {1, 1}, 1e-12);
}

TEST(Linalg, ErrorsOfShapesAndTypes) {
  using kiln::ErrorCode;
  using kiln_test::code_of;
  const Tensor rect = kiln::zeros({2, 3}, DType::f64);
  const Tensor vec = kiln::zeros({3}, DType::f64);
  for (auto f : {+[](const Tensor& t) { (void)kiln::inv(t); },
                 +[](const Tensor& t) { (void)kiln::det(t); },
                 +[](const Tensor& t) { (void)kiln::cholesky(t); },
                 +[](const Tensor& t) { (void)kiln::eigh(t); }}) {
    EXPECT_EQ(code_of([&] { f(rect); }), ErrorCode::illegal_dimensionality);
    EXPECT_EQ(code_of([&] { f(vec); }), ErrorCode::illegal_dimensionality);
  }
  EXPECT_EQ(code_of([&] { (void)kiln::svd(vec); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { (void)kiln::qr(vec); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { (void)kiln::solve(rect, vec); }), ErrorCode::illegal_dimensionality);
  const Tensor sq = kiln::eye(3, 3, DType::f64);
  EXPECT_EQ(code_of([&] { (void)kiln::solve(sq, kiln::zeros({4, 2}, DType::f64)); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { (void)kiln::solve(kiln::zeros({2, 3, 3}, DType::f64),
                                            kiln::zeros({4, 3, 1}, DType::f64)); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { (void)kiln::lstsq(rect, kiln::zeros({3}, DType::f64)); }),
            ErrorCode::incompatible_shapes);
  // Integers are refused (convert them first).
  const Tensor ints = Tensor::from(std::vector<std::int32_t>{1, 0, 0, 1}, {2, 2});
  EXPECT_EQ(code_of([&] { (void)kiln::inv(ints); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { (void)kiln::solve(sq, kiln::zeros({3}, DType::i64)); }),
            ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { (void)kiln::svd(ints); }), ErrorCode::wrong_type);
}

TEST(Linalg, SingularAndIndefiniteMatricesFailWhenEvaluated) {
  const Tensor singular = m64(kA3, {3, 3});
  const Tensor x = kiln::inv(singular);  // built: the values are not known yet
  try {
    (void)x.to_vector<double>();
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("solve"), std::string::npos) << what;
    EXPECT_NE(what.find("singular"), std::string::npos) << what;
    EXPECT_NE(what.find("[3,3]"), std::string::npos) << what;
  }
  EXPECT_THROW((void)kiln::solve(singular, kiln::ones({3}, DType::f64)).eval(), kiln::Error);
  // The second matrix of a batch is not positive definite.
  const Tensor batch = kiln::stack({kiln::eye(2, 2, DType::f64), m64({1, 2, 2, 1}, {2, 2})}, 0);
  try {
    (void)kiln::cholesky(batch).eval();
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cholesky"), std::string::npos) << what;
    EXPECT_NE(what.find("positive definite"), std::string::npos) << what;
    EXPECT_NE(what.find("matrix 1"), std::string::npos) << what;
  }
}

}  // namespace
