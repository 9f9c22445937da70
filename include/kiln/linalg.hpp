/// @file
/// Linear algebra through LAPACK: solving, inverting, determinants and the decompositions, batched
/// over the leading dimensions ([..., m, n] is a stack of m x n matrices), for f32 and f64 (an
/// integer operand is a wrong_type error; convert it first). Like every op they build graph nodes
/// and compute when read. Errors of shape are raised when the op is called; errors that depend on
/// the values (a singular matrix in solve or inv, one that is not positive definite in cholesky)
/// are raised as kiln::Error when the result is evaluated, naming the op and the operand shapes.
///
/// Gradients: all are differentiable, with PyTorch's formulas, and the gradients are themselves
/// built from these ops (so differentiable again). Where a gradient is not defined it is not
/// meaningful either: svd with repeated singular values (or a zero one where U or Vh of a
/// non-square matrix is used), eigh with repeated eigenvalues when the eigenvectors are used, qr
/// of a matrix whose leading square block is singular, lstsq of a rank-deficient A (lstsq of a
/// wide A is its minimum-norm solution, differentiated as such). The signs of the singular
/// vectors and eigenvectors are LAPACK's; a function whose gradient is taken should not depend on them (U diag(S) Vh, V diag(w) V^T, |V|, ...).
#pragma once

#include "kiln/tensor.hpp"

namespace kiln {

/// X with A X = B: A [..., n, n], B [..., n, k] or [..., n] (a vector: B of one dimension, or of
/// one dimension fewer than A; X then has B's form). Batch dimensions broadcast as in matmul;
/// operand types promote (f32 with f64 gives f64). Through LAPACK's LU (getrf, getrs).
Tensor solve(const Tensor& a, const Tensor& b);

/// A^-1 for A [..., n, n]: solve(A, I).
Tensor inv(const Tensor& a);

/// det(A) [...] for A [..., n, n], from the LU factorisation (0 for an exactly singular matrix).
Tensor det(const Tensor& a);

/// The lower triangular L with A = L L^T for a symmetric positive definite A [..., n, n]; only A's
/// lower triangle is read (LAPACK's potrf). Its gradient is the symmetric one (PyTorch's).
Tensor cholesky(const Tensor& a);

/// The reduced QR decomposition A = Q R of A [..., m, n], k = min(m, n): Q [..., m, k] with
/// orthonormal columns, R [..., k, n] upper triangular (LAPACK's geqrf and orgqr; R's diagonal may
/// be negative).
struct QR {
  Tensor q, r;
};
QR qr(const Tensor& a);

/// The reduced SVD A = U diag(S) Vh of A [..., m, n], k = min(m, n): U [..., m, k], S [..., k]
/// descending and non-negative, Vh [..., k, n] (LAPACK's gesdd).
struct SVD {
  Tensor u, s, vh;
};
SVD svd(const Tensor& a);

/// The eigen decomposition A = V diag(w) V^T of a symmetric A [..., n, n]: eigenvalues w [..., n]
/// ascending, eigenvectors the columns of V [..., n, n] (LAPACK's syevd). Only A's lower triangle
/// is read; the gradient is the symmetric one (PyTorch's).
struct Eigh {
  Tensor eigenvalues, eigenvectors;
};
Eigh eigh(const Tensor& a);

/// The least-squares solution X [..., n, k] (or [..., n]) minimising |A X - B| for A [..., m, n],
/// B [..., m, k] (or [..., m], as in solve); the minimum-norm solution when A has not full rank
/// (LAPACK's gelsd, rcond = machine precision).
Tensor lstsq(const Tensor& a, const Tensor& b);

}  // namespace kiln
