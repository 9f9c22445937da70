// Argument checks shared by the modules' constructors: a failed one is a kiln::Error.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/error.hpp"

namespace kiln::nn::checks {

inline void require(bool ok, ErrorCode code, const std::string& message) {
  if (!ok) throw Error(code, message);
}

inline void require_positive(const char* module, const char* what, std::int64_t v) {
  require(v > 0, ErrorCode::illegal_dimension,
          std::string("nn::") + module + ": " + what + " must be positive, got " +
              std::to_string(v));
}

}  // namespace kiln::nn::checks
