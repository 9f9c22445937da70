// Matrix products: matmul with broadcast batch dimensions, and the dot product of vectors.
#include "api/builder.hpp"
#include "kiln/ops.hpp"

namespace kiln {

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::node_of(a, "matmul");
  detail::node_of(b, "matmul");
  const Shape &sa = a.shape(), &sb = b.shape();
  const auto mismatch = [&](ErrorCode code, const std::string& why) {
    detail::fail(code, "matmul", why + " " + shape_to_string(sa) + " and " + shape_to_string(sb));
  };
  if (sa.size() < 2 || sb.size() < 2)
    mismatch(ErrorCode::illegal_dimensionality, "needs at least 2 dimensions, got");
  const std::int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k) mismatch(ErrorCode::incompatible_shapes, "incompatible shapes");
  // [..., M, K] @ [K, N] is one [(...) * M, K] @ [K, N] product, as libtorch computes it: one
  // large GEMM instead of a batch of small ones, and a weight gradient from one product rather
  // than a batch of products summed.
  if (sb.size() == 2 && sa.size() > 2 && a.numel() > 0) {
    Shape out(sa.begin(), sa.end() - 1);
    out.push_back(n);
    return matmul(a.reshape({a.numel() / k, k}), b).reshape(std::move(out));
  }
  // The batch dimensions broadcast as NumPy's do (aligned at the right).
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const std::size_t rank = std::max(ba.size(), bb.size());
  Shape batch(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t x = d + ba.size() >= rank ? ba[d + ba.size() - rank] : 1;
    const std::int64_t y = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
    if (x != y && x != 1 && y != 1)
      mismatch(ErrorCode::incompatible_shapes, "incompatible batch dimensions in");
    batch[d] = x == 1 ? y : x;
  }
  auto with = [&](std::int64_t r, std::int64_t c) {
    Shape s = batch;
    s.push_back(r);
    s.push_back(c);
    return s;
  };
  const Tensor x = sa == with(m, k) ? a : broadcast_to(a, with(m, k));
  const Tensor y = sb == with(k, n) ? b : broadcast_to(b, with(k, n));
  return detail::make_node(detail::Op::matmul, promote(a.dtype(), b.dtype()), with(m, n),
                           {x.node(), y.node()});
}

Tensor dot(const Tensor& a, const Tensor& b) {
  detail::node_of(a, "dot");
  detail::node_of(b, "dot");
  if (a.rank() != 1 || b.rank() != 1)
    detail::fail(ErrorCode::illegal_dimensionality, "dot",
                 "needs two vectors, got " + shape_to_string(a.shape()) + " and " +
                     shape_to_string(b.shape()));
  if (a.shape() != b.shape())
    detail::fail(
        ErrorCode::incompatible_shapes, "dot",
        "incompatible shapes " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
  return sum(mul(a, b));
}

}  // namespace kiln
