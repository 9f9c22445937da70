// The value semantics of the elementwise ops, one element at a time: integer arithmetic that
// wraps instead of overflowing, division by zero, NaN rules. Every executor computes through
// these (or loops proven equal to them), so results agree across executors.
#pragma once

#include <cmath>
#include <string>
#include <type_traits>

#include "graph/op_table.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

// Integer arithmetic wraps in two's complement (through unsigned types, so never UB).
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

template <class T> inline T int_pow(T base, T exponent) {
  if (exponent < 0) {  // 1/base^|e| truncated toward zero
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

// Always inlined: the CPU loops call these with a constant op, and only an inlined copy lets the
// compiler drop the switch and vectorise the loop.
template <class T> [[gnu::always_inline]] inline T unary_value(Op op, T x) {
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case Op::neg: return wrap_sub(T{0}, x);
      case Op::abs: return x < 0 ? wrap_sub(T{0}, x) : x;
      case Op::square: return wrap_mul(x, x);
      case Op::relu: return x > 0 ? x : T{0};
      case Op::sign: return x >= 0 ? T{1} : T{-1};
      case Op::even: return x % 2 == 0 ? T{1} : T{0};
      case Op::convert: return x;
      default: break;
    }
  } else {
    switch (op) {
      case Op::neg: return -x;
      case Op::abs: return std::abs(x);
      case Op::square: return x * x;
      case Op::relu: return x < 0 ? T{0} : x;
      case Op::sign: return x >= 0 ? T{1} : T{-1};
      case Op::convert: return x;
      case Op::sqrt: return std::sqrt(x);
      case Op::exp: return std::exp(x);
      case Op::expm1: return std::expm1(x);
      case Op::log: return std::log(x);
      case Op::log2: return std::log2(x);
      case Op::log10: return std::log10(x);
      case Op::log1p: return std::log1p(x);
      case Op::sin: return std::sin(x);
      case Op::cos: return std::cos(x);
      case Op::tan: return std::tan(x);
      case Op::asin: return std::asin(x);
      case Op::acos: return std::acos(x);
      case Op::atan: return std::atan(x);
      case Op::sinh: return std::sinh(x);
      case Op::cosh: return std::cosh(x);
      case Op::tanh: return std::tanh(x);
      case Op::asinh: return std::asinh(x);
      case Op::acosh: return std::acosh(x);
      case Op::atanh: return std::atanh(x);
      case Op::reciprocal: return T{1} / x;
      case Op::sigmoid: return T{1} / (T{1} + std::exp(-x));
      case Op::erf: return std::erf(x);
      default: break;
    }
  }
  throw Error(ErrorCode::internal_error, std::string(op_info(op).name) + ": not a unary op");
}

template <class T> [[gnu::always_inline]] inline T binary_value(Op op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case Op::add: return wrap_add(a, b);
      case Op::sub: return wrap_sub(a, b);
      case Op::mul: return wrap_mul(a, b);
      case Op::div:
        if (b == 0) return 0;  // integer division by zero gives 0
        if (b == -1) return wrap_sub(T{0}, a);
        return a / b;
      case Op::pow: return int_pow(a, b);
      case Op::minimum: return a < b ? a : b;
      case Op::maximum: return a > b ? a : b;
      default: break;
    }
  } else {
    switch (op) {
      case Op::add: return a + b;
      case Op::sub: return a - b;
      case Op::mul: return a * b;
      case Op::div: return a / b;
      case Op::pow: return std::pow(a, b);
      case Op::minimum: return (std::isnan(a) || std::isnan(b)) ? a + b : (a < b ? a : b);
      case Op::maximum: return (std::isnan(a) || std::isnan(b)) ? a + b : (a > b ? a : b);
      default: break;
    }
  }
  switch (op) {
    case Op::less: return a < b;
    case Op::greater: return a > b;
    case Op::equal: return a == b;
    case Op::less_equal: return a <= b;
    case Op::greater_equal: return a >= b;
    case Op::not_equal: return a != b;
    default: break;
  }
  throw Error(ErrorCode::internal_error, std::string(op_info(op).name) + ": not a binary op");
}

template <class T> inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

}  // namespace kiln::detail
