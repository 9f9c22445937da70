// include/kiln/eigen.hpp: Eigen matrices into tensors and evaluated tensors out as Eigen maps.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "kiln/eigen.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using kiln_test::code_of;

TEST(Eigen, AsEigenMapsTheTensorsValuesWithoutCopying) {
  const Tensor x = kiln::reshape(kiln::convert(kiln::arange(6), DType::f32), {2, 3}) * 2.f;
  const auto m = kiln::as_eigen<float>(x);
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 3);
  EXPECT_EQ(m(1, 2), 10.f);
  EXPECT_EQ(m(0, 1), 2.f);
  EXPECT_EQ(m.data(), x.data<float>().data());  // the tensor's own memory
  // Eigen arithmetic on the map; a 1-D tensor is a column.
  const Eigen::VectorXf col = m * Eigen::Vector3f(1, 1, 1);
  EXPECT_EQ(col(0), 6.f);
  EXPECT_EQ(col(1), 24.f);
  const Tensor v = kiln::tensor({1.0, 2.0, 3.0}, kiln::DType::f64);
  const auto mv = kiln::as_eigen<double>(v);
  EXPECT_EQ(mv.rows(), 3);
  EXPECT_EQ(mv.cols(), 1);
  EXPECT_EQ(code_of([&] { (void)kiln::as_eigen<double>(x); }), ErrorCode::wrong_type);
  const Tensor cube = kiln::zeros({2, 2, 2});
  EXPECT_EQ(code_of([&] { (void)kiln::as_eigen<float>(cube); }),
            ErrorCode::illegal_dimensionality);
}

TEST(Eigen, FromEigenCopiesAnyExpressionRowMajor) {
  Eigen::MatrixXd m(2, 3);  // column-major storage
  m << 1, 2, 3, 4, 5, 6;
  const Tensor t = kiln::from_eigen(m);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.dtype(), DType::f64);
  m(0, 0) = 100;  // a copy: the tensor keeps its values
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // An expression, and a vector (1-D).
  EXPECT_EQ(kiln::from_eigen(m.transpose() * 2).shape(), (Shape{3, 2}));
  EXPECT_EQ(kiln::from_eigen(m.transpose() * 2).to_vector<double>(),
            (std::vector<double>{200, 8, 4, 10, 6, 12}));
  const Eigen::VectorXf v = Eigen::VectorXf::LinSpaced(4, 0, 3);
  const Tensor tv = kiln::from_eigen(v);
  EXPECT_EQ(tv.shape(), (Shape{4}));
  EXPECT_EQ(tv.dtype(), DType::f32);
  EXPECT_EQ(kiln::sum(tv).item<float>(), 6.f);
}

TEST(Eigen, BorrowEigenGivesTheMatrixInEitherLayout) {
  // A column-major matrix comes as the transposed view of its memory.
  Eigen::MatrixXd cols(2, 3);
  cols << 1, 2, 3, 4, 5, 6;
  const Tensor ct = kiln::borrow_eigen(cols);
  EXPECT_EQ(ct.shape(), (Shape{2, 3}));
  EXPECT_EQ(ct.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  using RowMajor = kiln::EigenRowMajor<float>;
  RowMajor r(2, 2);
  r << 1, 2, 3, 4;
  const Tensor rt = kiln::borrow_eigen(r);
  EXPECT_EQ(rt.shape(), (Shape{2, 2}));
  EXPECT_EQ((rt + 1.f).to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  // Round trip: an Eigen map of the borrowed tensor has the matrix's values.
  const Tensor sq = kiln::matmul(rt, rt);
  const RowMajor want = r * r;
  EXPECT_TRUE(kiln::as_eigen<float>(sq).isApprox(want));
}

}  // namespace
