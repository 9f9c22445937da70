/// @file
/// Eigen interop, for programs that already use Eigen (include this header only then; kiln itself
/// does not depend on Eigen).
///
///   as_eigen<float>(t)   an Eigen::Map over an evaluated 1-D or 2-D tensor's values: no copy.
///   from_eigen(expr)     a new tensor holding the values of any Eigen matrix expression (copied).
///   borrow_eigen(m)      a tensor that reads a plain Eigen matrix's memory without copying, when
///                        that memory is 64-byte aligned (else it is copied; see from_blob).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>

#include "kiln/error.hpp"
#include "kiln/ops.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

template <class T>
using EigenRowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The values of `t` (evaluated if needed) as a read-only row-major Eigen matrix: [n] is a
/// column of n rows, [r, c] is r x c. T must be t's element type (else wrong_type). The map reads
/// t's memory, which stays valid while `t` (the handle passed here) lives.
template <class T> Eigen::Map<const EigenRowMajor<T>> as_eigen(const Tensor& t) {
  if (t.rank() > 2)
    throw Error(ErrorCode::illegal_dimensionality,
                "as_eigen: a tensor of 1 or 2 dimensions maps to a matrix, got " +
                    shape_to_string(t.shape()));
  const std::span<const T> values = t.data<T>();
  const Eigen::Index rows = t.rank() == 0 ? 1 : static_cast<Eigen::Index>(t.shape()[0]);
  const Eigen::Index cols = t.rank() == 2 ? static_cast<Eigen::Index>(t.shape()[1]) : 1;
  return Eigen::Map<const EigenRowMajor<T>>(values.data(), rows, cols);
}
/// A temporary tensor would leave the map dangling: keep the tensor in a variable.
template <class T> void as_eigen(const Tensor&& t) = delete;

/// A new tensor with the values of an Eigen expression, in its scalar type: shape [n] for an
/// expression that is a vector at compile time, [rows, cols] otherwise. Always a copy, so the
/// expression's storage may change or go away afterwards.
template <class Derived> Tensor from_eigen(const Eigen::DenseBase<Derived>& m) {
  using T = typename Derived::Scalar;
  const EigenRowMajor<T> rows = m;  ///< evaluates the expression, row-major
  if constexpr (Derived::IsVectorAtCompileTime)
    return Tensor::from(rows.data(), Shape{static_cast<std::int64_t>(rows.size())});
  else
    return Tensor::from(rows.data(), Shape{static_cast<std::int64_t>(rows.rows()),
                                           static_cast<std::int64_t>(rows.cols())});
}

/// A tensor over a plain Eigen matrix's own memory, not copied where it is 64-byte aligned (Eigen
/// aligns to 64 bytes when built for AVX-512; its default is 16, and then from_blob copies at
/// once). A column-major matrix comes as the transposed view of its memory, so the tensor is
/// [rows, cols] either way. Until the tensor and everything computed from it are gone, the
/// matrix must live and keep its values; to be free of that, use from_eigen.
template <class Derived> Tensor borrow_eigen(Eigen::PlainObjectBase<Derived>& m) {
  using T = typename Derived::Scalar;
  const auto rows = static_cast<std::int64_t>(m.rows());
  const auto cols = static_cast<std::int64_t>(m.cols());
  if constexpr (Derived::IsRowMajor)
    return Tensor::from_blob(m.data(), {rows, cols}, dtype_of_v<T>);
  else
    return t(Tensor::from_blob(m.data(), {cols, rows}, dtype_of_v<T>));
}

}  // namespace kiln
