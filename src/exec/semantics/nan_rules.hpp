// How NaN moves through comparisons of values: minimum and maximum of a NaN are NaN (as in
// NumPy and libtorch, unlike std::fmin), and a reduction's extreme or arg-extreme stops at the
// first NaN it meets (argmax/argmin: the first NaN's index; on ties, the first index).
#pragma once

#include <cmath>
#include <type_traits>

namespace kiln::detail {

template <class T> inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  return false;
}

// Written with `a + b` for the NaN case (a NaN whichever operand it is) and plain comparisons
// otherwise, so loops over them vectorise.
template <class T> inline T nan_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return (a != a || b != b) ? a + b : (a < b ? a : b);
  return a < b ? a : b;
}
template <class T> inline T nan_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return (a != a || b != b) ? a + b : (a > b ? a : b);
  return a > b ? a : b;
}

// Whether `candidate`, met after `best`, replaces it as the running maximum (or minimum) of a
// reduction: a NaN is never replaced and always replaces, and a tie keeps the earlier value
// (which is what makes argmax pick the first index).
template <class T> inline bool replaces(T candidate, T best, bool maximum) {
  if (is_nan(best)) return false;
  if (is_nan(candidate)) return true;
  return maximum ? candidate > best : candidate < best;
}

}  // namespace kiln::detail
