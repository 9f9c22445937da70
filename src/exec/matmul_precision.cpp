#include "exec/matmul_precision.hpp"

#include <atomic>
#include <iterator>
#include <string>
#include <string_view>

#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace {

// PyTorch's names, in order of falling precision.
constexpr std::string_view kNames[] = {"highest", "high", "medium"};

std::atomic<int> chosen{0};

}  // namespace

void set_float32_matmul_precision(std::string_view precision) {
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (precision == kNames[i]) {
      chosen.store(i, std::memory_order_relaxed);
      return;
    }
  throw Error(ErrorCode::invalid_select, "set_float32_matmul_precision: \"" +
                                             std::string(precision) +
                                             "\" is not a precision (highest, high or medium)");
}

std::string float32_matmul_precision() {
  return std::string(kNames[chosen.load(std::memory_order_relaxed)]);
}

namespace detail {

bool float32_products_may_use_tf32() { return chosen.load(std::memory_order_relaxed) > 0; }

}  // namespace detail
}  // namespace kiln
