// nonzero and masked_select: ops whose result size depends on values, which a lazy graph cannot
// know when the node is built. Both evaluate what decides the size when called (nonzero its input,
// masked_select only the mask) and build the rest from the positions found.
#include "api/builder.hpp"
#include "api/composite_support.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {

// Row-major positions of the non-zero elements (NaN counts as non-zero), evaluating `t`.
std::vector<std::int64_t> nonzero_positions(const Tensor& t) {
  // i32 0/1 flags read back: exact for every type (an i64 too large for a double stays non-zero).
  const std::vector<std::int32_t> flags = not_equal(t, detail::typed(0, t.dtype()))
                                              .to_vector<std::int32_t>();
  std::vector<std::int64_t> positions;
  for (std::size_t i = 0; i < flags.size(); ++i)
    if (flags[i] != 0) positions.push_back(static_cast<std::int64_t>(i));
  return positions;
}

}  // namespace

Tensor nonzero(const Tensor& x) {
  detail::node_of(x, "nonzero");
  const std::vector<std::int64_t> positions = nonzero_positions(x);
  const auto n = static_cast<std::int64_t>(positions.size());
  const int rank = x.rank();
  std::vector<std::int64_t> coords(positions.size() * static_cast<std::size_t>(rank));
  for (std::size_t k = 0; k < positions.size(); ++k) {
    std::int64_t p = positions[k];
    for (int d = rank - 1; d >= 0; --d) {  // unravel, last dimension fastest
      coords[k * static_cast<std::size_t>(rank) + static_cast<std::size_t>(d)] =
          p % x.shape()[d];
      p /= x.shape()[d];
    }
  }
  return Tensor::from(coords, {n, rank});
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  detail::node_of(x, "masked_select");
  detail::node_of(mask, "masked_select");
  const Shape shape = detail::broadcast_shapes("masked_select", x.shape(), mask.shape());
  const std::vector<std::int64_t> positions =
      nonzero_positions(detail::broadcast_as(mask, shape));
  // A gather from the (broadcast, flattened) input: the gradient scatters back into x.
  return gather(flatten(detail::broadcast_as(x, shape)), 0, Tensor::from(positions));
}

}  // namespace kiln
