// What ran where: each kernel a backend left to the host's reference code, noted once per
// backend, kernel kind, op and type with the reason, for kiln::executor_report() and the test
// that pins every backend's fallbacks.
#pragma once

#include <string>
#include <string_view>

#include "exec/fusion.hpp"

namespace kiln::detail {

void note_fallback(std::string_view backend, const Kernel& k, const std::string& reason);

}  // namespace kiln::detail
