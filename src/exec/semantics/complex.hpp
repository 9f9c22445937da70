// The helpers the registry's float semantics column uses for the complex rows (real, imag, conj,
// angle, complex), overloaded so that the same column computes real floats and std::complex: for
// a real x, real_part(x) is x, imaginary_part(x) is 0, conjugate(x) is x, and angle_of(x) is pi
// for negative x, 0 for the others and NaN for NaN (as in NumPy and libtorch).
#pragma once

#include <complex>
#include <numbers>
#include <type_traits>

#include "kiln/error.hpp"
#include "kiln/types.hpp"

namespace kiln::detail {

template <class T>
inline T real_part(T x) {
  if constexpr (is_complex_v<T>)
    return T(x.real(), 0);
  else
    return x;
}
template <class T>
inline T imaginary_part(T x) {
  if constexpr (is_complex_v<T>)
    return T(x.imag(), 0);
  else
    return T{0};
}
template <class T>
inline T conjugate(T x) {
  if constexpr (is_complex_v<T>)
    return std::conj(x);
  else
    return x;
}
template <class T>
inline T angle_of(T x) {
  if constexpr (is_complex_v<T>) {
    return T(std::arg(x), 0);
  } else {
    if (x != x) return x;
    return x < T{0} ? std::numbers::pi_v<T> : T{0};
  }
}

[[noreturn]] inline void complex_result_in_a_real_loop() {
  throw Error(ErrorCode::internal_error, "complex: a complex result asked of a real-typed loop");
}

// complex(re, im): computed in the complex type, whose values of a and b are (re, 0) and (im, 0).
// A real-typed loop never computes it (the builder gives the node a complex type).
template <class T>
inline T make_complex(T a, T b) {
  if constexpr (is_complex_v<T>)
    return T(a.real(), b.real());
  else
    complex_result_in_a_real_loop();
}

}  // namespace kiln::detail
