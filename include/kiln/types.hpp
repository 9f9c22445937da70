/// @file
/// Element types, shapes and typed scalars: the vocabulary every other kiln header uses.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

/// The element types. The numbers are those of the Flint C API's FType for the four it has (and
/// of kiln's files); f16 (IEEE binary16) and bf16 (bfloat16) are storage types whose arithmetic is
/// done in f32, each result rounded back to nearest, ties to even; `boolean` holds false/true in
/// one byte, and its arithmetic is done in i32, a result being true where it is non-zero.
enum class DType : std::uint8_t { i32 = 0, i64 = 1, f32 = 2, f64 = 3, f16 = 4, bf16 = 5, boolean = 6 };

using Shape = std::vector<std::int64_t>;

constexpr bool is_narrow_float(DType t) { return t == DType::f16 || t == DType::bf16; }
constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f64 || is_narrow_float(t); }
constexpr bool is_integer(DType t) { return t == DType::i32 || t == DType::i64; }
constexpr bool is_bool(DType t) { return t == DType::boolean; }
/// The types stored narrower than they are computed: the 16-bit floats and bool.
constexpr bool is_narrow(DType t) { return is_narrow_float(t) || is_bool(t); }
/// The type a kernel computes a value of type t in: f32 for the 16-bit floats, i32 for bool, t
/// otherwise.
constexpr DType arithmetic_type(DType t) {
  return is_narrow_float(t) ? DType::f32 : is_bool(t) ? DType::i32 : t;
}
/// The type of a binary op's result: bool < integers < 16-bit floats < f32 < f64, and f16 with
/// bf16 is f32 (neither holds the other's values), as in PyTorch.
constexpr DType promote(DType a, DType b) {
  constexpr auto rank = [](DType t) {
    switch (t) {
      case DType::boolean: return -1;
      case DType::i32: return 0;
      case DType::i64: return 1;
      case DType::f16:
      case DType::bf16: return 2;
      case DType::f32: return 3;
      case DType::f64: return 4;
    }
    return 0;
  };
  if (a == b) return a;
  if (is_narrow_float(a) && is_narrow_float(b)) return DType::f32;
  return rank(a) < rank(b) ? b : a;
}
constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::boolean: return 1;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::i32:
    case DType::f32: return 4;
    case DType::i64:
    case DType::f64: return 8;
  }
  return 8;
}
const char* dtype_name(DType t);  ///< "i32", "i64", "f32", "f64", "f16", "bf16", "bool"

/// One IEEE binary16 value as kiln stores it (DType::f16), for reading and writing raw data
/// (`to_vector<kiln::Half>()`, `from_blob`). Made from a float by rounding to nearest, ties to
/// even; beyond 65504 it is infinity.
struct Half {
  std::uint16_t bits = 0;
  Half() = default;
  explicit Half(float value);
  explicit operator float() const;
};
/// One bfloat16 value as kiln stores it (DType::bf16): the upper half of an f32, made from a float
/// by rounding to nearest, ties to even.
struct BFloat16 {
  std::uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value);
  explicit operator float() const;
};

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
template <> struct dtype_of<Half> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
/// `long long` is a distinct type from int64_t (= long) on LP64 Linux.
template <> struct dtype_of<long long> { static constexpr DType value = DType::i64; };
template <class T> constexpr DType dtype_of_v = dtype_of<T>::value;

/// A number together with the kiln type of its C++ literal: bool -> bool, int -> i32, long/int64 ->
/// i64, float -> f32, double -> f64. In the C++ API a Scalar combined with a tensor is *weak*: it takes
/// the tensor's type (`x_f32 * 0.1` stays f32, `x_i64 + 1` stays i64), except that a floating
/// scalar with an integer tensor gives default_dtype(). The C API's scalar forms keep the type
/// their suffix names (Flint's rule).
class Scalar {
 public:
  constexpr Scalar() = default;
  constexpr Scalar(bool v) : dtype_(DType::boolean), i_(v ? 1 : 0) {}
  constexpr Scalar(std::int32_t v) : dtype_(DType::i32), i_(v) {}
  constexpr Scalar(long v) : dtype_(DType::i64), i_(v) {}
  constexpr Scalar(long long v) : dtype_(DType::i64), i_(v) {}
  constexpr Scalar(float v) : dtype_(DType::f32), f_(v) {}
  constexpr Scalar(double v) : dtype_(DType::f64), f_(v) {}

  constexpr DType dtype() const { return dtype_; }
  /// The value converted to T (float -> int saturates, NaN -> 0; to bool: non-zero, NaN included).
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
/// truncates toward zero and saturates at the integer range; NaN becomes 0; to bool, any non-zero
/// value (NaN included) is true.
template <class To, class From> constexpr To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From{0};  // NaN is true, as in C++
  } else if constexpr (std::is_floating_point_v<To> || std::is_integral_v<From>) {
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
