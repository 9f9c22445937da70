/// @file
/// Element types, shapes and typed scalars: the vocabulary every other kiln header uses.
#pragma once

#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

/// The element types. The numbers are those of the Flint C API's FType for the four it has (and
/// of kiln's files); f16 (IEEE binary16) and bf16 (bfloat16) are storage types whose arithmetic is
/// done in f32, each result rounded back to nearest, ties to even; `boolean` holds false/true in
/// one byte, and its arithmetic is done in i32, a result being true where it is non-zero; c64 and
/// c128 are complex numbers of two f32s and two f64s (std::complex<float>, std::complex<double>).
/// u8, i8 and i16 are integers stored in 8 and 16 bits and computed in i32, each result wrapped to
/// its width (two's complement), as PyTorch's uint8, int8 and int16 are.
enum class DType : std::uint8_t {
  i32 = 0,
  i64 = 1,
  f32 = 2,
  f64 = 3,
  f16 = 4,
  bf16 = 5,
  boolean = 6,
  c64 = 7,
  c128 = 8,
  u8 = 9,
  i8 = 10,
  i16 = 11
};

using Shape = std::vector<std::int64_t>;

constexpr bool is_narrow_float(DType t) { return t == DType::f16 || t == DType::bf16; }
/// The real floating types (complex types are not among them: see is_complex).
constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f64 || is_narrow_float(t); }
constexpr bool is_complex(DType t) { return t == DType::c64 || t == DType::c128; }
/// Floats and complex: the types whose values are not integers.
constexpr bool is_inexact(DType t) { return is_float(t) || is_complex(t); }
/// The type of a complex type's real and imaginary parts (f32, f64); any other type is its own.
constexpr DType real_type(DType t) {
  return t == DType::c64 ? DType::f32 : t == DType::c128 ? DType::f64 : t;
}
/// The complex type whose parts hold t's values: c128 for f64 (and c128), c64 for every other.
constexpr DType complex_type(DType t) {
  return t == DType::f64 || t == DType::c128 ? DType::c128 : DType::c64;
}
/// The integers stored in fewer than 32 bits (u8, i8, i16).
constexpr bool is_narrow_integer(DType t) {
  return t == DType::u8 || t == DType::i8 || t == DType::i16;
}
constexpr bool is_integer(DType t) {
  return t == DType::i32 || t == DType::i64 || is_narrow_integer(t);
}
constexpr bool is_bool(DType t) { return t == DType::boolean; }
/// The types stored narrower than they are computed: the 16-bit floats, bool and the 8- and
/// 16-bit integers.
constexpr bool is_narrow(DType t) {
  return is_narrow_float(t) || is_bool(t) || is_narrow_integer(t);
}
/// The type a kernel computes a value of type t in: f32 for the 16-bit floats, i32 for bool and
/// the narrow integers, t otherwise.
constexpr DType arithmetic_type(DType t) {
  return is_narrow_float(t) ? DType::f32 : is_bool(t) || is_narrow_integer(t) ? DType::i32 : t;
}
/// The type of a binary op's result: bool < u8, i8 < i16 < i32 < i64 < 16-bit floats < f32 < f64;
/// u8 with i8 is i16 and f16 with bf16 is f32 (neither holds the other's values), as in PyTorch. With a complex operand the result
/// is complex, with parts of the wider precision of the two (f64 with c64 is c128, as in NumPy).
constexpr DType promote(DType a, DType b) {
  if (is_complex(a) || is_complex(b))
    return a == DType::c128 || b == DType::c128 || a == DType::f64 || b == DType::f64
               ? DType::c128
               : DType::c64;
  constexpr auto rank = [](DType t) {
    switch (t) {
      case DType::boolean: return -1;
      case DType::u8:
      case DType::i8: return 0;
      case DType::i16: return 1;
      case DType::i32: return 2;
      case DType::i64: return 3;
      case DType::f16:
      case DType::bf16: return 4;
      case DType::f32: return 5;
      case DType::f64: return 6;
      case DType::c64:
      case DType::c128: return 7;  // handled above
    }
    return 0;
  };
  if (a == b) return a;
  if (is_narrow_float(a) && is_narrow_float(b)) return DType::f32;
  if ((a == DType::u8 && b == DType::i8) || (a == DType::i8 && b == DType::u8)) return DType::i16;
  return rank(a) < rank(b) ? b : a;
}
constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::boolean:
    case DType::u8:
    case DType::i8: return 1;
    case DType::f16:
    case DType::bf16:
    case DType::i16: return 2;
    case DType::i32:
    case DType::f32: return 4;
    case DType::i64:
    case DType::f64:
    case DType::c64: return 8;
    case DType::c128: return 16;
  }
  return 8;
}
/// "i32", "i64", "f32", "f64", "f16", "bf16", "bool", "c64", "c128", "u8", "i8", "i16"
const char* dtype_name(DType t);

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
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<std::int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<std::int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<std::complex<float>> { static constexpr DType value = DType::c64; };
template <> struct dtype_of<std::complex<double>> { static constexpr DType value = DType::c128; };
/// `long long` is a distinct type from int64_t (= long) on LP64 Linux.
template <> struct dtype_of<long long> { static constexpr DType value = DType::i64; };
template <class T> constexpr DType dtype_of_v = dtype_of<T>::value;

template <class T> struct is_complex_value : std::false_type {};
template <class R> struct is_complex_value<std::complex<R>> : std::true_type {};
/// Whether T is std::complex<float> or std::complex<double>.
template <class T> constexpr bool is_complex_v = is_complex_value<T>::value;

/// A number together with the kiln type of its C++ literal: bool -> bool, int -> i32, long/int64 ->
/// i64, float -> f32, double -> f64, std::complex<float> -> c64, std::complex<double> -> c128. In
/// the C++ API a Scalar combined with a tensor is *weak*: it takes the tensor's type (`x_f32 * 0.1`
/// stays f32, `x_i64 + 1` stays i64), except that a floating scalar with an integer tensor gives
/// default_dtype(), and a complex scalar with a real tensor the complex type of its precision. The
/// C API's scalar forms keep the type their suffix names (Flint's rule).
class Scalar {
 public:
  constexpr Scalar() = default;
  constexpr Scalar(bool v) : dtype_(DType::boolean), i_(v ? 1 : 0) {}
  constexpr Scalar(std::int32_t v) : dtype_(DType::i32), i_(v) {}
  constexpr Scalar(long v) : dtype_(DType::i64), i_(v) {}
  constexpr Scalar(long long v) : dtype_(DType::i64), i_(v) {}
  constexpr Scalar(float v) : dtype_(DType::f32), f_(v) {}
  constexpr Scalar(double v) : dtype_(DType::f64), f_(v) {}
  constexpr Scalar(std::complex<float> v) : dtype_(DType::c64), f_(v.real()), imag_(v.imag()) {}
  constexpr Scalar(std::complex<double> v) : dtype_(DType::c128), f_(v.real()), imag_(v.imag()) {}

  constexpr DType dtype() const { return dtype_; }
  /// The value converted to T (float -> int saturates, NaN -> 0; to bool: non-zero, NaN included;
  /// complex to a real type: its real part).
  template <class T> T as() const;
  /// The same value converted to another type.
  Scalar cast(DType to) const;
  std::string to_string() const;
  bool operator==(const Scalar& o) const;

 private:
  DType dtype_ = DType::i32;
  std::int64_t i_ = 0;
  double f_ = 0.0;     // floats; the real part of complex values
  double imag_ = 0.0;  // the imaginary part of complex values
};

/// Conversion between kiln types that never has undefined behaviour: float to integer
/// truncates toward zero and saturates at the integer range (for u8, i8 and i16: at i32's, then
/// wraps to the width, as a kernel computing them in i32 does and as PyTorch does); NaN becomes 0;
/// integer to integer wraps; to bool, any non-zero
/// value (NaN included) is true; complex to a real type keeps the real part (as NumPy's astype),
/// a real value becomes complex with imaginary part 0.
template <class To, class From> constexpr To convert_value(From v) {
  if constexpr (is_complex_v<To> && is_complex_v<From>) {
    return To(static_cast<typename To::value_type>(v.real()),
              static_cast<typename To::value_type>(v.imag()));
  } else if constexpr (is_complex_v<To>) {
    return To(convert_value<typename To::value_type>(v), 0);
  } else if constexpr (is_complex_v<From>) {
    if constexpr (std::is_same_v<To, bool>) return v != From{};
    else return convert_value<To>(v.real());
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{0};  // NaN is true, as in C++
  } else if constexpr (std::is_floating_point_v<To> || std::is_integral_v<From>) {
    return static_cast<To>(v);
  } else if constexpr (sizeof(To) < sizeof(std::int32_t)) {
    return static_cast<To>(convert_value<std::int32_t>(v));
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
  if (is_complex(dtype_)) return convert_value<T>(std::complex<double>(f_, imag_));
  return is_float(dtype_) ? convert_value<T>(f_) : convert_value<T>(i_);
}

}  // namespace kiln
