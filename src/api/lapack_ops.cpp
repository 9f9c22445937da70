// Builders of the linalg rows (kiln/linalg.hpp): shape and type checks, then one node per result.
// The decompositions with several results (qr, svd, eigh) are one row each, whose nodes choose
// their result with attrs.axes[0]: kiln's nodes have one result, and a node per result keeps
// every executor, the memory policy and autodiff as they are (the price: each result that is
// read runs the decomposition once).
#include "api/builder.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/linalg.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {

using detail::Op;

std::string described(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_to_string(t.shape());
}

void check_float(std::string_view op, const Tensor& a) {
  detail::node_of(a, op);
  if (!is_float(a.dtype()))
    detail::fail(ErrorCode::wrong_type, op,
                 "needs f32 or f64 operands (convert integers first), got " + described(a));
}

// A stack of matrices [..., m, n]; square: m == n.
void check_matrices(std::string_view op, const Tensor& a, bool square) {
  check_float(op, a);
  const Shape& s = a.shape();
  if (s.size() < 2)
    detail::fail(ErrorCode::illegal_dimensionality, op,
                 std::string("needs ") + (square ? "square " : "") +
                     "matrices [..., m, n] (at least 2 dimensions), got " + shape_to_string(s));
  if (square && s[s.size() - 1] != s[s.size() - 2])
    detail::fail(ErrorCode::illegal_dimensionality, op,
                 "needs square matrices [..., n, n], got " + shape_to_string(s));
}

Shape batch_of(const Shape& s, std::size_t matrix_dims) {
  return Shape(s.begin(), s.end() - static_cast<std::ptrdiff_t>(matrix_dims));
}

Shape with(Shape batch, std::initializer_list<std::int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

Tensor result_node(Op op, const Tensor& a, std::int64_t part, Shape shape) {
  detail::Attrs attrs;
  attrs.axes = {part};
  return detail::make_node(op, a.dtype(), std::move(shape), {a.node()}, std::move(attrs));
}

// solve and lstsq: A [..., m, n] with B [..., m, k] or a vector B (one dimension, or A's shape
// without its last dimension, as in PyTorch). The batches broadcast, the types promote.
Tensor with_right_side(Op op, std::string_view name, const Tensor& a, const Tensor& b,
                       bool square) {
  check_matrices(name, a, square);
  check_float(name, b);
  const Shape &sa = a.shape(), &sb = b.shape();
  const auto mismatch = [&](const std::string& why) {
    detail::fail(ErrorCode::incompatible_shapes, name,
                 why + " " + shape_to_string(sa) + " and " + shape_to_string(sb));
  };
  const bool vector = sb.size() == 1 || (sb.size() + 1 == sa.size() && sb == batch_of(sa, 1));
  const Tensor bm = vector ? unsqueeze(b, -1) : b;
  const Shape& sm = bm.shape();
  if (sm.size() < 2) mismatch("needs B [..., m, k] or [..., m], got");
  const std::int64_t m = sa[sa.size() - 2], n = sa.back(), k = sm.back();
  if (sm[sm.size() - 2] != m) mismatch("incompatible shapes (A [..., m, n] with B [..., m, k])");
  const Shape ba = batch_of(sa, 2), bb = batch_of(sm, 2);
  const std::size_t rank = std::max(ba.size(), bb.size());
  Shape batch(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t x = d + ba.size() >= rank ? ba[d + ba.size() - rank] : 1;
    const std::int64_t y = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) mismatch("incompatible batch dimensions in");
    batch[d] = x == 1 ? y : x;
  }
  const DType type = promote(a.dtype(), b.dtype());
  const auto prepared = [&](const Tensor& t, Shape shape) {
    const Tensor c = t.dtype() == type ? t : convert(t, type);
    return c.shape() == shape ? c : broadcast_to(c, std::move(shape));
  };
  const Tensor x = prepared(a, with(batch, {m, n})), y = prepared(bm, with(batch, {m, k}));
  const Tensor r =
      detail::make_node(op, type, with(batch, {n, k}), {x.node(), y.node()});
  return vector ? reshape(r, with(batch, {n})) : r;
}

}  // namespace

Tensor solve(const Tensor& a, const Tensor& b) {
  return with_right_side(Op::solve, "solve", a, b, true);
}

Tensor lstsq(const Tensor& a, const Tensor& b) {
  return with_right_side(Op::lstsq, "lstsq", a, b, false);
}

Tensor inv(const Tensor& a) {
  check_matrices("inv", a, true);
  const std::int64_t n = a.shape().back();
  const Tensor identity = broadcast_to(eye(n, n, a.dtype()), a.shape());
  return detail::make_node(Op::solve, a.dtype(), a.shape(), {a.node(), identity.node()});
}

Tensor det(const Tensor& a) {
  check_matrices("det", a, true);
  return detail::make_node(Op::det, a.dtype(), batch_of(a.shape(), 2), {a.node()});
}

Tensor cholesky(const Tensor& a) {
  check_matrices("cholesky", a, true);
  return detail::make_node(Op::cholesky, a.dtype(), a.shape(), {a.node()});
}

QR qr(const Tensor& a) {
  check_matrices("qr", a, false);
  const Shape& s = a.shape();
  const std::int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const Shape batch = batch_of(s, 2);
  return {result_node(Op::qr, a, 0, with(batch, {m, k})),
          result_node(Op::qr, a, 1, with(batch, {k, n}))};
}

SVD svd(const Tensor& a) {
  check_matrices("svd", a, false);
  const Shape& s = a.shape();
  const std::int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const Shape batch = batch_of(s, 2);
  return {result_node(Op::svd, a, 0, with(batch, {m, k})),
          result_node(Op::svd, a, 1, with(batch, {k})),
          result_node(Op::svd, a, 2, with(batch, {k, n}))};
}

Eigh eigh(const Tensor& a) {
  check_matrices("eigh", a, true);
  const Shape& s = a.shape();
  const std::int64_t n = s.back();
  const Shape batch = batch_of(s, 2);
  return {result_node(Op::eigh, a, 0, with(batch, {n})),
          result_node(Op::eigh, a, 1, with(batch, {n, n}))};
}

}  // namespace kiln
