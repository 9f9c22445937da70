// The vocabulary every layer uses (kiln/types.hpp, kiln/error.hpp): dtype names, the default
// float type, Scalar, error codes, shape strings.
#include <atomic>
#include <cmath>
#include <sstream>

#include "graph/narrow_floats.hpp"
#include "kiln/error.hpp"
#include "kiln/types.hpp"

namespace kiln {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::boolean: return "bool";
    case DType::c64: return "c64";
    case DType::c128: return "c128";
    case DType::u8: return "u8";
    case DType::i8: return "i8";
    case DType::i16: return "i16";
  }
  return "?";
}

namespace {
std::atomic<DType> default_float_type{DType::f32};
}  // namespace

DType default_dtype() { return default_float_type.load(std::memory_order_relaxed); }

void set_default_dtype(DType dtype) {
  if (!is_float(dtype))
    throw Error(ErrorCode::wrong_type, std::string("set_default_dtype: the default type must be a "
                                                   "float type, got ") +
                                           dtype_name(dtype));
  default_float_type.store(dtype, std::memory_order_relaxed);
}

Half::Half(float value) : bits(detail::f16_nearest(value)) {}
Half::operator float() const { return detail::f16_to_f32(bits); }
BFloat16::BFloat16(float value) : bits(detail::bf16_nearest(value)) {}
BFloat16::operator float() const { return detail::bf16_to_f32(bits); }

Scalar Scalar::cast(DType to) const {
  Scalar out;
  switch (to) {
    case DType::i32: return Scalar(as<std::int32_t>());
    case DType::i64: return Scalar(as<std::int64_t>());
    case DType::f32: return Scalar(as<float>());
    case DType::f64: return Scalar(as<double>());
    case DType::f16: out.f_ = detail::f16_to_f32(detail::f16_nearest(as<double>())); break;
    case DType::bf16: out.f_ = detail::bf16_to_f32(detail::bf16_nearest(as<double>())); break;
    case DType::boolean: return Scalar(as<bool>());
    case DType::c64: return Scalar(as<std::complex<float>>());
    case DType::c128: return Scalar(as<std::complex<double>>());
    case DType::u8: out.i_ = as<std::uint8_t>(); break;
    case DType::i8: out.i_ = as<std::int8_t>(); break;
    case DType::i16: out.i_ = as<std::int16_t>(); break;
  }
  out.dtype_ = to;
  return out;
}

std::string Scalar::to_string() const {
  if (is_bool(dtype_)) return i_ != 0 ? "true" : "false";
  if (is_integer(dtype_)) return std::to_string(i_);
  std::ostringstream os;
  // Enough digits to tell the type's neighbouring values apart.
  const DType part = real_type(dtype_);
  os.precision(part == DType::f64 ? 15 : part == DType::f32 ? 7 : part == DType::f16 ? 5 : 4);
  os << f_;
  if (is_complex(dtype_)) {  // 1+2i, 1-2i, 0+nani
    if (!std::signbit(imag_) || std::isnan(imag_)) os << '+';
    os << imag_ << 'i';
  }
  return os.str();
}

bool Scalar::operator==(const Scalar& o) const {
  if (dtype_ != o.dtype_) return false;
  const auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  if (is_complex(dtype_)) return same(f_, o.f_) && same(imag_, o.imag_);
  return is_float(dtype_) ? same(f_, o.f_) : i_ == o.i_;
}

const char* error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::none: return "none";
    case ErrorCode::wrong_type: return "wrong_type";
    case ErrorCode::illegal_dimension: return "illegal_dimension";
    case ErrorCode::illegal_dimensionality: return "illegal_dimensionality";
    case ErrorCode::incompatible_shapes: return "incompatible_shapes";
    case ErrorCode::invalid_select: return "invalid_select";
    case ErrorCode::device_error: return "device_error";
    case ErrorCode::internal_error: return "internal_error";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::illegal_derive: return "illegal_derive";
    case ErrorCode::io_error: return "io_error";
  }
  return "?";
}

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

namespace detail {
void check_rectangular(bool same_size, const char* what) {
  if (!same_size)
    throw Error(ErrorCode::incompatible_shapes,
                std::string(what) + ": nested lists of different lengths are not rectangular");
}
}  // namespace detail

}  // namespace kiln
