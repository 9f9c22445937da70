// nonzero, masked_select and unique: ops whose result size depends on values, which a lazy graph
// cannot know when the node is built. Each evaluates what decides the size when called (nonzero
// and unique their input, masked_select only the mask) and builds the rest from what it found.
#include <algorithm>
#include <cmath>
#include <numeric>

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

// unique over the values read as T (double holds every float type exactly, std::int64_t every
// integer): NaN sorts last, and each NaN is a value of its own, as in PyTorch.
template <class T> UniqueResult unique_as(const Tensor& x) {
  const std::vector<T> v = x.to_vector<T>();
  auto is_nan = [](T a) {
    if constexpr (std::is_floating_point_v<T>) return std::isnan(a);
    else return false;
  };
  std::vector<std::int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    const T va = v[static_cast<std::size_t>(a)], vb = v[static_cast<std::size_t>(b)];
    return !is_nan(va) && (is_nan(vb) || va < vb);
  });
  std::vector<T> values;
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> inverse(v.size());
  for (const std::int64_t i : order) {
    const T value = v[static_cast<std::size_t>(i)];
    if (values.empty() || is_nan(value) || !(values.back() == value)) {
      values.push_back(value);
      counts.push_back(0);
    }
    ++counts.back();
    inverse[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(values.size()) - 1;
  }
  return {convert(Tensor::from(values), x.dtype()), Tensor::from(inverse, x.shape()),
          Tensor::from(counts)};
}

}  // namespace

UniqueResult unique(const Tensor& x) {
  detail::node_of(x, "unique");
  if (is_complex(x.dtype()))
    detail::fail(ErrorCode::wrong_type, "unique",
                 std::string("values must be ordered, got ") + dtype_name(x.dtype()) + " " +
                     shape_to_string(x.shape()));
  return is_float(x.dtype()) ? unique_as<double>(x) : unique_as<std::int64_t>(x);
}

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
