// Max pooling's rules: a window's maximum is NaN when any of its elements is (the reduction rule
// of nan_rules.hpp), and its gradient goes to the elements equal to the maximum, shared equally
// between ties; a window whose maximum is NaN has no such element and passes no gradient.
#pragma once

namespace kiln::detail {

// What each of `ties` maximal elements of a window receives of the window's gradient `g`.
template <class T> inline T tie_share(T g, int ties) {
  return ties > 0 ? g / static_cast<T>(ties) : T{0};
}

}  // namespace kiln::detail
