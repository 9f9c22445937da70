/// @file
/// Element types, shapes and typed scalars: the vocabulary every other kiln header uses.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

/// Ordered by promotion rank: a binary op returns the larger of its operand types.
enum class DType : std::uint8_t { i32 = 0, i64 = 1, f32 = 2, f64 = 3 };

using Shape = std::vector<std::int64_t>;

constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
constexpr bool is_integer(DType t) { return !is_float(t); }
constexpr DType promote(DType a, DType b) { return a < b ? b : a; }
constexpr std::size_t size_of(DType t) {
  return (t == DType::i32 || t == DType::f32) ? 4 : 8;
}
const char* dtype_name(DType t);  ///< "i32", "i64", "f32", "f64"

/// The float type the C++ API gives where no type is named: creation functions without a dtype
/// (`zeros`, `full` with a floating value, `uniform`, `tensor` of double literals, ...), a floating
/// scalar combined with an integer tensor, and float-valued ops of integer tensors. f32 unless set;
/// process-wide. Setting an integer type is a wrong_type error.
DType default_dtype();
void set_default_dtype(DType dtype);

template <class T> struct dtype_of;
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
/// `long long` is a distinct type from int64_t (= long) on LP64 Linux.
template <> struct dtype_of<long long> { static constexpr DType value = DType::i64; };
template <class T> constexpr DType dtype_of_v = dtype_of<T>::value;

/// A number together with the kiln type of its C++ literal: int -> i32, long/int64 -> i64,
/// float -> f32, double -> f64. In the C++ API a Scalar combined with a tensor is *weak*: it takes
/// the tensor's type (`x_f32 * 0.1` stays f32, `x_i64 + 1` stays i64), except that a floating
/// scalar with an integer tensor gives default_dtype(). The C API's scalar forms keep the type
/// their suffix names (Flint's rule).
class Scalar {
 public:
  constexpr Scalar() = default;
  constexpr Scalar(std::int32_t v) : dtype_(DType::i32), i_(v) {}
  constexpr Scalar(long v) : dtype_(DType::i64), i_(v) {}
  constexpr Scalar(long long v) : dtype_(DType::i64), i_(v) {}
  constexpr Scalar(float v) : dtype_(DType::f32), f_(v) {}
  constexpr Scalar(double v) : dtype_(DType::f64), f_(v) {}

  constexpr DType dtype() const { return dtype_; }
  /// The value converted to T (float -> int saturates, NaN -> 0).
  template <class T> T as() const;
  /// The same value converted to another type.
  Scalar cast(DType to) const;
  std::string to_string() const;
  bool operator==(const Scalar& o) const;

 private:
  DType dtype_ = DType::i32;
  std::int64_t i_ = 0;
  double f_ = 0.0;
};

/// Conversion between kiln types that never has undefined behaviour: float to integer
/// truncates toward zero and saturates at the integer range; NaN becomes 0.
template <class To, class From> constexpr To convert_value(From v) {
  if constexpr (std::is_floating_point_v<To> || std::is_integral_v<From>) {
    return static_cast<To>(v);
  } else {
    if (v != v) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
    const double d = static_cast<double>(v);
    if (d <= lo) return std::numeric_limits<To>::min();
    if (d >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  }
}

template <class T> T Scalar::as() const {
  return is_float(dtype_) ? convert_value<T>(f_) : convert_value<T>(i_);
}

}  // namespace kiln
