/// @file
/// kiln::Error: the one exception type kiln throws, carrying a category and a message
/// that names the op and its operand shapes.
#pragma once

#include <stdexcept>
#include <string>

#include "kiln/types.hpp"

namespace kiln {

/// The categories of the Flint C API's FErrorType, in the same order.
enum class ErrorCode {
  none = 0,
  wrong_type,              ///< e.g. an integer-only op on a float tensor
  illegal_dimension,       ///< an axis or dimension argument outside the legal range
  illegal_dimensionality,  ///< the rank of an operand does not suit the op
  incompatible_shapes,     ///< operand shapes do not fit together
  invalid_select,          ///< an index, slice or window outside the tensor
  device_error,            ///< a device failed or is missing (the C API's OCL_ERROR)
  ocl_error = device_error,  ///< the former name of device_error
  internal_error,          ///< a kiln bug: please report it
  out_of_memory,
  illegal_derive,
  io_error,
};

const char* error_code_name(ErrorCode c);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

/// "[2,3]": how shapes appear in error messages and printouts.
std::string shape_to_string(const Shape& s);

}  // namespace kiln
