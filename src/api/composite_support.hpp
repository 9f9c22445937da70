// Small helpers shared by the composite ops (composite_*.cpp, einsum.cpp, interpolate.cpp,
// data_dependent.cpp): typed constants, explicit broadcasting and axis lists.
#pragma once

#include <string_view>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::detail {

// `v` as a scalar of type `t`, so that it never widens the tensor it is combined with.
inline Scalar typed(double v, DType t) { return Scalar(v).cast(t); }

// The normal (right-aligned) broadcast of two shapes; an incompatible_shapes error of `op` when
// they do not fit that way (inverse broadcasting is never tried).
Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b);

// `t` broadcast normally to `shape` (itself when it has that shape already).
Tensor broadcast_as(const Tensor& t, const Shape& shape);

// `dims` made non-negative, sorted, checked for duplicates; empty means every dimension.
std::vector<int> reduction_dims(std::string_view op, std::vector<int> dims, const Shape& shape);

}  // namespace kiln::detail
