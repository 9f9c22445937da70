// The value rules of the scans (cumsum, cumprod) and of argsort, shared by every executor.
//
// Scans run in order along the axis: out[0] = x[0], out[j] = step(out[j - 1], x[j]); integers
// wrap as kiln's integer add and mul do, floats accumulate in their own type (so every executor
// that walks the line in order gives the same bits).
//
// argsort is stable: equal values keep their order. NaN sorts as the largest value (as libtorch
// and NumPy): last in an ascending sort, first in a descending one; NaNs keep their order among
// themselves. -0.0 and 0.0 are equal (their order is kept).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "exec/semantics/integer.hpp"
#include "exec/semantics/nan_rules.hpp"
#include "graph/op_registry.hpp"

namespace kiln::detail {

template <class T> inline T scan_step(Op op, T running, T x) {
  if constexpr (std::is_integral_v<T>)
    return op == Op::cumsum ? wrap_add(running, x) : wrap_mul(running, x);
  else
    return op == Op::cumsum ? running + x : running * x;
}

// Whether `a` goes strictly before `b` (a strict weak order for std::stable_sort).
template <class T> inline bool sorts_before(T a, T b, bool descending) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool na = a != a, nb = b != b;
    if (na || nb) return descending ? (na && !nb) : (nb && !na);
  }
  return descending ? b < a : a < b;
}

// Writes into `order` (len entries) the stable sorting permutation of `line`.
template <class T>
inline void argsort_line(const T* line, std::int64_t* order, std::int64_t len, bool descending) {
  for (std::int64_t j = 0; j < len; ++j) order[j] = j;
  std::stable_sort(order, order + len, [&](std::int64_t i, std::int64_t j) {
    return sorts_before(line[i], line[j], descending);
  });
}

}  // namespace kiln::detail
