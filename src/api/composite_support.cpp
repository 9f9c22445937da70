// Helpers shared by the composite ops.
#include "api/composite_support.hpp"

#include <algorithm>

#include "api/builder.hpp"
#include "kiln/ops.hpp"

namespace kiln::detail {

Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    // Dimension i counted from the right; a missing dimension acts as 1.
    const std::int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      fail(ErrorCode::incompatible_shapes, op,
           "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Tensor broadcast_as(const Tensor& t, const Shape& shape) {
  return t.shape() == shape ? t : broadcast_to(t, shape);
}

std::vector<int> reduction_dims(std::string_view op, std::vector<int> dims, const Shape& shape) {
  const int rank = static_cast<int>(shape.size());
  if (dims.empty())
    for (int d = 0; d < rank; ++d) dims.push_back(d);
  for (int& d : dims) d = normalize_axis(op, d, rank, shape);
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end())
    fail(ErrorCode::illegal_dimension, op, "a dimension appears twice for shape " + shape_str(shape));
  return dims;
}

}  // namespace kiln::detail
