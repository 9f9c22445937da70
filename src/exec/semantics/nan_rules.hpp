// How NaN moves through comparisons of values: minimum and maximum of a NaN are NaN (as in
// NumPy and libtorch, unlike std::fmin), and a reduction's extreme or arg-extreme stops at the
// first NaN it meets (argmax/argmin: the first NaN's index; on ties, the first index).
//
// And which NaN an op gives, bit for bit, on every executor: the host's rule, which the reference
// follows by computing on the host. An op whose result is NaN gives its first NaN operand,
// quieted (its sign and payload kept); an op that makes a NaN of numbers (0/0, inf - inf,
// sqrt(-1)) gives the NaN the host's arithmetic makes (x86: 0xffc00000, the sign set). A
// conversion between f32 and f64 keeps a NaN's sign and the high bits of its payload. Devices
// whose arithmetic gives one canonical NaN instead (NVIDIA's: 0x7fffffff) apply the rule in their
// generated kernels (codegen/helpers.cpp: kiln_nan1, kiln_nan2, kiln_f64_of, kiln_f32_of).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
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

// Python's and libtorch's remainder of floats: fmod moved to the divisor's sign.
template <class T> inline T float_remainder(T a, T b) {
  const T r = std::fmod(a, b);
  return r != T{0} && ((r < T{0}) != (b < T{0})) ? r + b : r;
}

// The NaN this host's arithmetic makes of numbers, as bits.
inline std::uint32_t host_made_nan_f32() {
  volatile float zero = 0.f;
  const float nan = zero / zero;
  std::uint32_t bits;
  std::memcpy(&bits, &nan, sizeof bits);
  return bits;
}
inline std::uint64_t host_made_nan_f64() {
  volatile double zero = 0.0;
  const double nan = zero / zero;
  std::uint64_t bits;
  std::memcpy(&bits, &nan, sizeof bits);
  return bits;
}

}  // namespace kiln::detail
