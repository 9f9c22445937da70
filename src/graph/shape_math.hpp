// Checked arithmetic on sizes, strides, offsets and the arguments that meet them.
//
// Every shape a node may have keeps the product of its non-zero sizes below kMaxElements
// (2^62), so byte counts, row-major strides and positions computed from a valid shape cannot
// overflow. What a user passes in (window sizes, steps, dilations, paddings, repetitions, insert
// positions) is combined with sizes only through these helpers, which see an overflow instead of
// wrapping around into a plausible wrong shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/error.hpp"
#include "kiln/types.hpp"

namespace kiln::detail {

inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 62;

// An int64_t result, or nothing where the exact value does not fit. Operations on nothing give
// nothing, so a chain such as checked_add(checked_mul(k - 1, d), 1) is checked as a whole.
using Checked = std::optional<std::int64_t>;

inline Checked checked_mul(Checked a, Checked b) {
  std::int64_t r;
  if (!a || !b || __builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}
inline Checked checked_add(Checked a, Checked b) {
  std::int64_t r;
  if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}
inline Checked checked_sub(Checked a, Checked b) {
  std::int64_t r;
  if (!a || !b || __builtin_sub_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}

// The product of the sizes, or nothing where a size is negative or the product of the non-zero
// sizes exceeds kMaxElements (an empty tensor of shape [2^40, 2^40, 0] still has strides that
// multiply its other sizes).
Checked checked_numel(const Shape& shape);

// The value of `v`, or a kiln::Error(code, "<op>: <message()>") where the arithmetic overflowed.
template <class Message>
std::int64_t value_or_fail(Checked v, ErrorCode code, std::string_view op, Message&& message) {
  if (!v) throw Error(code, std::string(op) + ": " + message());
  return *v;
}

}  // namespace kiln::detail
