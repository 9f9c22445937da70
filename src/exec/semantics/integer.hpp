// Integer arithmetic as every executor computes it: two's complement wrapping instead of
// overflow (through unsigned types, so never undefined behaviour), division by zero giving 0, and
// integer powers with negative exponents truncated toward zero.
#pragma once

#include <type_traits>

namespace kiln::detail {

template <class T> inline T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T> inline T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T> inline T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// a / b truncated toward zero; 0 when b is 0, and the wrapped -a (not an overflow) when b is -1.
template <class T> inline T integer_div(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_sub(T{0}, a);
  return a / b;
}

// base^exponent, wrapping; a negative exponent gives 1/base^|e| truncated toward zero.
template <class T> inline T integer_pow(T base, T exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent % 2 == 0) ? 1 : -1;
    return 0;
  }
  T result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exponent >>= 1;
  }
  return result;
}

// C's fmod for integers: the remainder of division truncated toward zero (the dividend's sign);
// 0 when b is 0, and when b is -1 (where a % b could overflow).
template <class T> inline T integer_fmod(T a, T b) {
  if (b == 0 || b == -1) return 0;
  return static_cast<T>(a % b);
}

// Python's and libtorch's remainder: the remainder of floor division (the divisor's sign).
template <class T> inline T integer_remainder(T a, T b) {
  const T r = integer_fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
}

}  // namespace kiln::detail
