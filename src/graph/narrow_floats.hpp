// The floating-point formats narrower than f32 that files store (IEEE half, bfloat16, and the
// two 8-bit formats of the OCP FP8 specification): widened to f32, and f16 and bf16 narrowed from
// f32 or f64. Every value of each format is exactly an f32, so widening loses nothing: signs of
// zeros, subnormals, infinities and NaN (quiet, with its sign) come through. Narrowing rounds to
// nearest, ties to even, in one step from the value given (an f64 is not rounded to f32 first,
// which could round twice). One definition for every reader, writer and backend.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "kiln/types.hpp"

namespace kiln::detail {

// sign, 5 exponent bits (bias 15), 10 fraction bits.
constexpr float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t fraction = h & 0x3FFu;
  if (exponent == 0x1F)  // infinity, or NaN with its payload kept
    return std::bit_cast<float>(sign | 0x7F800000u | (fraction << 13) |
                                (fraction != 0 ? 0x00400000u : 0u));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (fraction << 13));
  if (fraction == 0) return std::bit_cast<float>(sign);
  // A subnormal half is a normal f32: shift its leading one into the implicit bit.
  std::uint32_t e = 113;
  while ((fraction & 0x400u) == 0) {
    fraction <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((fraction & 0x3FFu) << 13));
}

// The upper half of an f32's bits.
constexpr float bf16_to_f32(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// E5M2: the upper byte of a half (sign, 5 exponent bits, 2 fraction bits; infinities and NaN).
constexpr float f8_e5m2_to_f32(std::uint8_t v) {
  return f16_to_f32(static_cast<std::uint16_t>(v << 8));
}

// E4M3 ("fn": finite): sign, 4 exponent bits (bias 7), 3 fraction bits; no infinities, and only
// S.1111.111 is NaN, so the largest magnitude is 448.
constexpr float f8_e4m3_to_f32(std::uint8_t v) {
  const std::uint32_t sign = static_cast<std::uint32_t>(v & 0x80u) << 24;
  const std::uint32_t exponent = (v >> 3) & 0xFu;
  const std::uint32_t fraction = v & 0x7u;
  if (exponent == 0xF && fraction == 0x7) return std::bit_cast<float>(sign | 0x7FC00000u);
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 120) << 23) | (fraction << 20));
  // Subnormal: fraction * 2^-9, exact in f32.
  return std::bit_cast<float>(
      sign | std::bit_cast<std::uint32_t>(static_cast<float>(fraction) * (1.0f / 512.0f)));
}

// x rounded to a binary format with `fraction_bits` fraction bits whose smallest normal is
// 2^min_exponent (below it, the spacing of the subnormals), ties to even, whatever the
// floating-point environment's rounding mode; the exponent range above is not limited here.
inline double round_to_format(double x, int fraction_bits, int min_exponent) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int exponent = std::ilogb(x);
  const int quantum = (exponent < min_exponent ? min_exponent : exponent) - fraction_bits;
  const double scaled = std::ldexp(std::fabs(x), -quantum);  // exact: a power-of-two scaling
  double whole = std::floor(scaled);
  const double rest = scaled - whole;  // exact: scaled < 2^(fraction_bits + 1)
  if (rest > 0.5 || (rest == 0.5 && std::fmod(whole, 2.0) != 0)) whole += 1;
  return std::copysign(std::ldexp(whole, quantum), x);
}

// The half nearest to x (ties to even); beyond the largest half (65504) it is infinity, as IEEE
// rounds, and a NaN is the quiet NaN of its sign.
inline std::uint16_t f16_nearest(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7E00;
  const double y = std::fabs(round_to_format(x, 10, -14));
  if (y > 65504.0) return sign | 0x7C00;
  if (y == 0) return sign;
  const int exponent = std::ilogb(y);
  if (exponent < -14) return sign | static_cast<std::uint16_t>(std::ldexp(y, 24));
  const auto fraction = static_cast<std::uint16_t>(std::ldexp(y, 10 - exponent) - 1024);
  return sign | static_cast<std::uint16_t>((exponent + 15) << 10) | fraction;
}

// The bfloat16 nearest to x (ties to even); beyond the largest (0x1.FEp127) it is infinity, and a
// NaN is the quiet NaN of its sign.
inline std::uint16_t bf16_nearest(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7FC0;
  const double y = round_to_format(x, 7, -126);
  if (std::fabs(y) > 0x1.FEp127) return sign | 0x7F80;
  // y is an f32 whose lower 16 bits are zero.
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(y)) >> 16);
}

// The same roundings from an f32, with integer operations only (for loops that the compiler
// vectorises); equal to f16_nearest and bf16_nearest of the value for every f32.
constexpr std::uint16_t f16_bits_of(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00;  // NaN: the quiet NaN of its sign
  if (a >= 0x477FF000u) return sign | 0x7C00;  // 65520 and above (ties to 65536): infinity
  if (a >= 0x38800000u) {  // a normal half: round the 13 dropped bits, rebias the exponent
    const std::uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);
    return sign | static_cast<std::uint16_t>((r - 0x38000000u) >> 13);
  }
  // A subnormal half (or zero): the value in units of 2^-24, rounded.
  const std::uint32_t exponent = a >> 23;
  if (exponent < 102) return sign;  // below 2^-25: zero (2^-25 itself ties to zero)
  const std::uint32_t mantissa = (a & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126 - exponent;  // 14..24
  std::uint32_t q = mantissa >> shift;
  const std::uint32_t rest = mantissa & ((1u << shift) - 1);
  const std::uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return sign | static_cast<std::uint16_t>(q);
}
constexpr std::uint16_t bf16_bits_of(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | 0x7FC0u);
  return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// x rounded to an f32 by rounding to odd (toward zero, the last bit set when inexact): rounded
// again to nearest to a format of at most 21 fraction bits, such as f16 or bf16, it gives the
// value nearest to x itself (the odd bit breaks the ties that a second rounding would meet).
inline float round_to_odd_f32(double x) {
  float t = static_cast<float>(x);
  if (static_cast<double>(t) == x || x != x) return t;
  if (std::fabs(static_cast<double>(t)) > std::fabs(x)) t = std::nextafter(t, 0.0f);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(t) | 1u);
}

// The bits of the f16 or bf16 (`to`) nearest to x (f16_nearest and bf16_nearest of x, faster).
inline std::uint16_t narrow_bits(DType to, double x) {
  const float odd = round_to_odd_f32(x);
  return to == DType::f16 ? f16_bits_of(odd) : bf16_bits_of(odd);
}
// The value of the f16 or bf16 (`from`) with these bits.
inline float widen_bits(DType from, std::uint16_t bits) {
  return from == DType::f16 ? f16_to_f32(bits) : bf16_to_f32(bits);
}

}  // namespace kiln::detail
