// The kernels of the linalg rows (solve, det, cholesky, qr, svd, eigh, lstsq): LAPACK on the host,
// one matrix of the leading (batch) dimensions at a time. Every executor calls these same
// functions (the reference executor through run_reference_kernel, the CPU executor directly), so
// LAPACK is the oracle here and the executors agree bit for bit.
//
// Each matrix is copied into a column-major scratch array (LAPACK's layout), reading the operand
// through its view, and the result copied back out in row-major order. Failures that depend on
// the values (a singular matrix, one that is not positive definite, an SVD that does not
// converge) throw kiln::Error when the node is evaluated, naming the op, the operand shapes and
// the matrix of the batch.
#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/lapack.hpp"
#include "exec/operand.hpp"
#include "exec/reference_kernels.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

// The size arguments of LAPACK's 32-bit interface.
int lapack_int(const Node& n, std::int64_t v) {
  if (v > INT_MAX)
    throw Error(ErrorCode::out_of_memory, std::string(n.info().name) + ": a size of " +
                                              std::to_string(v) +
                                              " is beyond LAPACK's 32-bit interface");
  return static_cast<int>(v);
}

std::string operand_shapes(const Node& n) {
  std::string s;
  for (const NodePtr& in : n.inputs) s += (s.empty() ? "" : " and ") + shape_to_string(in->shape);
  return s;
}

// A failure that depends on the values of one matrix of the batch.
[[noreturn]] void value_error(const Node& n, std::int64_t matrix, std::int64_t batch,
                              const std::string& why) {
  std::string where = batch > 1 ? " (matrix " + std::to_string(matrix) + " of the batch)" : "";
  throw Error(ErrorCode::illegal_dimensionality,
              std::string(n.info().name) + ": " + why + ", operand" +
                  (n.inputs.size() > 1 ? "s " : " ") + operand_shapes(n) + where);
}

[[noreturn]] void bad_argument(const Node& n, int info) {
  throw Error(ErrorCode::internal_error, std::string(n.info().name) + ": LAPACK refused argument " +
                                             std::to_string(-info));
}

std::int64_t rows_of(const Shape& s) { return s[s.size() - 2]; }
std::int64_t cols_of(const Shape& s) { return s[s.size() - 1]; }
std::int64_t batch_of(const Shape& s, std::size_t matrix_dims) {
  std::int64_t b = 1;
  for (std::size_t d = 0; d + matrix_dims < s.size(); ++d) b *= s[d];
  return b;
}

// Matrix `b` of an operand [..., rows, cols] into column-major `cm` with leading dimension ld.
template <class T>
void load(const Operand& in, std::int64_t b, std::int64_t rows, std::int64_t cols, T* cm,
          std::int64_t ld) {
  const std::int64_t first = b * rows * cols;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) cm[i + j * ld] = in.get<T>(first + i * cols + j);
}

// Column-major rows x cols (leading dimension ld) into row-major `out`.
template <class T>
void store(const T* cm, std::int64_t rows, std::int64_t cols, std::int64_t ld, T* out) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) out[i * cols + j] = cm[i + j * ld];
}

template <class T> constexpr bool kDouble = std::is_same_v<T, double>;

template <class T> void getrf(int m, int n, T* a, int lda, int* ipiv, int* info) {
  if constexpr (kDouble<T>) dgetrf_(&m, &n, a, &lda, ipiv, info);
  else sgetrf_(&m, &n, a, &lda, ipiv, info);
}
template <class T>
void getrs(int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb, int* info) {
  const char trans = 'N';
  if constexpr (kDouble<T>) dgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
  else sgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
template <class T> void potrf(int n, T* a, int lda, int* info) {
  const char uplo = 'L';
  if constexpr (kDouble<T>) dpotrf_(&uplo, &n, a, &lda, info, 1);
  else spotrf_(&uplo, &n, a, &lda, info, 1);
}
template <class T> void geqrf(int m, int n, T* a, int lda, T* tau, T* work, int lwork, int* info) {
  if constexpr (kDouble<T>) dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
  else sgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
template <class T>
void orgqr(int m, int n, int k, T* a, int lda, const T* tau, T* work, int lwork, int* info) {
  if constexpr (kDouble<T>) dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
  else sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
template <class T>
void gesdd(int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork,
           int* iwork, int* info) {
  const char jobz = 'S';
  if constexpr (kDouble<T>)
    dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
  else sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
template <class T>
void syevd(int n, T* a, int lda, T* w, T* work, int lwork, int* iwork, int liwork, int* info) {
  const char jobz = 'V', uplo = 'L';
  if constexpr (kDouble<T>)
    dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
  else ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
template <class T>
void gelsd(int m, int n, int nrhs, T* a, int lda, T* b, int ldb, T* s, T rcond, int* rank,
           T* work, int lwork, int* iwork, int* info) {
  if constexpr (kDouble<T>)
    dgelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, iwork, info);
  else sgelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, iwork, info);
}

int workspace(double query) { return std::max(1, static_cast<int>(query)); }

// solve: X = A^-1 B for A [..., n, n], B [..., n, k] (the builder broadcast the batches).
template <class T> void solve_kernel(const Node& node, T* out) {
  const Operand a = Operand::of(*node.inputs[0]), b = Operand::of(*node.inputs[1]);
  const std::int64_t n = rows_of(a.shape), k = cols_of(b.shape), batch = batch_of(a.shape, 2);
  const int ni = lapack_int(node, n), ki = lapack_int(node, k), ld = std::max(1, ni);
  std::vector<T> lu(static_cast<std::size_t>(ld * n)), x(static_cast<std::size_t>(ld * k));
  std::vector<int> ipiv(static_cast<std::size_t>(std::max<std::int64_t>(1, n)));
  for (std::int64_t m = 0; m < batch; ++m) {
    load(a, m, n, n, lu.data(), ld);
    int info = 0;
    getrf(ni, ni, lu.data(), ld, ipiv.data(), &info);
    if (info < 0) bad_argument(node, info);
    if (info > 0)
      value_error(node, m, batch,
                  "the matrix is singular (U[" + std::to_string(info - 1) + ", " +
                      std::to_string(info - 1) + "] of its LU factorisation is 0)");
    load(b, m, n, k, x.data(), ld);
    getrs(ni, ki, lu.data(), ld, ipiv.data(), x.data(), ld, &info);
    if (info < 0) bad_argument(node, info);
    store(x.data(), n, k, ld, out + m * n * k);
  }
}

// det: the product of U's diagonal from the LU factorisation, negated for each row exchange. A
// singular matrix has a zero on that diagonal and gives 0.
template <class T> void det_kernel(const Node& node, T* out) {
  const Operand a = Operand::of(*node.inputs[0]);
  const std::int64_t n = rows_of(a.shape), batch = batch_of(a.shape, 2);
  const int ni = lapack_int(node, n), ld = std::max(1, ni);
  std::vector<T> lu(static_cast<std::size_t>(ld * n));
  std::vector<int> ipiv(static_cast<std::size_t>(std::max<std::int64_t>(1, n)));
  for (std::int64_t m = 0; m < batch; ++m) {
    load(a, m, n, n, lu.data(), ld);
    int info = 0;
    if (n > 0) getrf(ni, ni, lu.data(), ld, ipiv.data(), &info);
    if (info < 0) bad_argument(node, info);
    T d = T{1};
    for (int i = 0; i < ni; ++i) {
      d *= lu[static_cast<std::size_t>(i + i * ld)];
      if (ipiv[static_cast<std::size_t>(i)] != i + 1) d = -d;
    }
    out[m] = d;
  }
}

// cholesky: the lower factor L of A = L L^T, from A's lower triangle; the upper one is 0.
template <class T> void cholesky_kernel(const Node& node, T* out) {
  const Operand a = Operand::of(*node.inputs[0]);
  const std::int64_t n = rows_of(a.shape), batch = batch_of(a.shape, 2);
  const int ni = lapack_int(node, n), ld = std::max(1, ni);
  std::vector<T> l(static_cast<std::size_t>(ld * n));
  for (std::int64_t m = 0; m < batch; ++m) {
    load(a, m, n, n, l.data(), ld);
    int info = 0;
    potrf(ni, l.data(), ld, &info);
    if (info < 0) bad_argument(node, info);
    if (info > 0)
      value_error(node, m, batch,
                  "the matrix is not positive definite (its leading minor of order " +
                      std::to_string(info) + " is not)");
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < j; ++i) l[static_cast<std::size_t>(i + j * ld)] = T{0};
    store(l.data(), n, n, ld, out + m * n * n);
  }
}

// qr (reduced): part 0 is Q [m, k], part 1 is R [k, n], k = min(m, n).
template <class T> void qr_kernel(const Node& node, T* out) {
  const Operand a = Operand::of(*node.inputs[0]);
  const std::int64_t m = rows_of(a.shape), n = cols_of(a.shape), k = std::min(m, n);
  const std::int64_t batch = batch_of(a.shape, 2);
  const int mi = lapack_int(node, m), ni = lapack_int(node, n), ki = lapack_int(node, k);
  const int ld = std::max(1, mi);
  const bool want_q = node.attrs.axes[0] == 0;
  std::vector<T> f(static_cast<std::size_t>(ld * n)), tau(static_cast<std::size_t>(std::max(1, ki)));
  T query{};
  int info = 0;
  geqrf(mi, ni, f.data(), ld, tau.data(), &query, -1, &info);
  int lwork = workspace(query);
  if (want_q) {
    orgqr(mi, ki, ki, f.data(), ld, tau.data(), &query, -1, &info);
    lwork = std::max(lwork, workspace(query));
  }
  std::vector<T> work(static_cast<std::size_t>(lwork));
  for (std::int64_t b = 0; b < batch; ++b) {
    load(a, b, m, n, f.data(), ld);
    geqrf(mi, ni, f.data(), ld, tau.data(), work.data(), lwork, &info);
    if (info < 0) bad_argument(node, info);
    if (!want_q) {
      T* r = out + b * k * n;
      for (std::int64_t i = 0; i < k; ++i)
        for (std::int64_t j = 0; j < n; ++j)
          r[i * n + j] = j >= i ? f[static_cast<std::size_t>(i + j * ld)] : T{0};
      continue;
    }
    orgqr(mi, ki, ki, f.data(), ld, tau.data(), work.data(), lwork, &info);
    if (info < 0) bad_argument(node, info);
    store(f.data(), m, k, ld, out + b * m * k);
  }
}

// svd (reduced): part 0 is U [m, k], part 1 is S [k] (descending), part 2 is Vh [k, n].
template <class T> void svd_kernel(const Node& node, T* out) {
  const Operand a = Operand::of(*node.inputs[0]);
  const std::int64_t m = rows_of(a.shape), n = cols_of(a.shape), k = std::min(m, n);
  const std::int64_t batch = batch_of(a.shape, 2);
  const int mi = lapack_int(node, m), ni = lapack_int(node, n), ki = lapack_int(node, k);
  const int lda = std::max(1, mi), ldu = std::max(1, mi), ldvt = std::max(1, ki);
  const auto part = node.attrs.axes[0];
  std::vector<T> f(static_cast<std::size_t>(lda * n)), s(static_cast<std::size_t>(std::max(1, ki)));
  std::vector<T> u(static_cast<std::size_t>(ldu * k)), vt(static_cast<std::size_t>(ldvt * n));
  std::vector<int> iwork(static_cast<std::size_t>(std::max(1, 8 * ki)));
  T query{};
  int info = 0;
  gesdd(mi, ni, f.data(), lda, s.data(), u.data(), ldu, vt.data(), ldvt, &query, -1, iwork.data(),
        &info);
  const int lwork = workspace(query);
  std::vector<T> work(static_cast<std::size_t>(lwork));
  for (std::int64_t b = 0; b < batch; ++b) {
    load(a, b, m, n, f.data(), lda);
    gesdd(mi, ni, f.data(), lda, s.data(), u.data(), ldu, vt.data(), ldvt, work.data(), lwork,
          iwork.data(), &info);
    if (info < 0) bad_argument(node, info);
    if (info > 0) value_error(node, b, batch, "the SVD did not converge");
    if (part == 0) store(u.data(), m, k, ldu, out + b * m * k);
    else if (part == 1) std::copy_n(s.data(), k, out + b * k);
    else store(vt.data(), k, n, ldvt, out + b * k * n);
  }
}

// eigh: part 0 is the eigenvalues [n] (ascending), part 1 the eigenvectors [n, n] (columns),
// from A's lower triangle.
template <class T> void eigh_kernel(const Node& node, T* out) {
  const Operand a = Operand::of(*node.inputs[0]);
  const std::int64_t n = rows_of(a.shape), batch = batch_of(a.shape, 2);
  const int ni = lapack_int(node, n), ld = std::max(1, ni);
  std::vector<T> v(static_cast<std::size_t>(ld * n)), w(static_cast<std::size_t>(std::max(1, ni)));
  T query{};
  int iquery = 0, info = 0;
  syevd(ni, v.data(), ld, w.data(), &query, -1, &iquery, -1, &info);
  const int lwork = workspace(query), liwork = std::max(1, iquery);
  std::vector<T> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  for (std::int64_t b = 0; b < batch; ++b) {
    load(a, b, n, n, v.data(), ld);
    syevd(ni, v.data(), ld, w.data(), work.data(), lwork, iwork.data(), liwork, &info);
    if (info < 0) bad_argument(node, info);
    if (info > 0) value_error(node, b, batch, "the eigenvalue algorithm did not converge");
    if (node.attrs.axes[0] == 0) std::copy_n(w.data(), n, out + b * n);
    else store(v.data(), n, n, ld, out + b * n * n);
  }
}

// lstsq: the X [n, k] minimising |A X - B| for A [m, n], B [m, k] (the minimum-norm one when A
// has not full rank), through LAPACK's SVD-based gelsd with the machine precision as rcond.
template <class T> void lstsq_kernel(const Node& node, T* out) {
  const Operand a = Operand::of(*node.inputs[0]), bop = Operand::of(*node.inputs[1]);
  const std::int64_t m = rows_of(a.shape), n = cols_of(a.shape), k = cols_of(bop.shape);
  const std::int64_t batch = batch_of(a.shape, 2);
  const int mi = lapack_int(node, m), ni = lapack_int(node, n), ki = lapack_int(node, k);
  const int lda = std::max(1, mi), ldb = std::max({1, mi, ni});
  std::vector<T> f(static_cast<std::size_t>(lda * n)), x(static_cast<std::size_t>(ldb * k));
  std::vector<T> s(static_cast<std::size_t>(std::max<std::int64_t>(1, std::min(m, n))));
  T query{};
  int iquery = 0, rank = 0, info = 0;
  gelsd(mi, ni, ki, f.data(), lda, x.data(), ldb, s.data(), T{-1}, &rank, &query, -1, &iquery,
        &info);
  const int lwork = workspace(query);
  std::vector<T> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(std::max(1, iquery)));
  for (std::int64_t b = 0; b < batch; ++b) {
    load(a, b, m, n, f.data(), lda);
    std::fill(x.begin(), x.end(), T{0});
    load(bop, b, m, k, x.data(), ldb);
    if (m > 0 && n > 0 && k > 0) {
      gelsd(mi, ni, ki, f.data(), lda, x.data(), ldb, s.data(), T{-1}, &rank, work.data(), lwork,
            iwork.data(), &info);
      if (info < 0) bad_argument(node, info);
      if (info > 0) value_error(node, b, batch, "the SVD did not converge");
    } else {
      std::fill(x.begin(), x.end(), T{0});
    }
    store(x.data(), n, k, ldb, out + b * n * k);
  }
}

}  // namespace

void run_lapack_kernel(const Node& node, Buffer& out) {
  if (out.numel() == 0) return;
  const auto run = [&]<class T>(T* o) {
    switch (node.op) {
      case Op::solve: return solve_kernel<T>(node, o);
      case Op::det: return det_kernel<T>(node, o);
      case Op::cholesky: return cholesky_kernel<T>(node, o);
      case Op::qr: return qr_kernel<T>(node, o);
      case Op::svd: return svd_kernel<T>(node, o);
      case Op::eigh: return eigh_kernel<T>(node, o);
      case Op::lstsq: return lstsq_kernel<T>(node, o);
      default: break;
    }
    throw Error(ErrorCode::internal_error,
                std::string(node.info().name) + ": not an op of the LAPACK kernels");
  };
  if (node.dtype == DType::f64) return run(out.as<double>());
  if (node.dtype == DType::f32) return run(out.as<float>());
  throw Error(ErrorCode::internal_error,
              std::string(node.info().name) + ": LAPACK kernels take f32 and f64 only");
}

}  // namespace kiln::detail
