// The user callables behind the custom_map and custom_reduce ops.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace kiln::detail {

struct CustomKernel {
  // The types of kiln::ElementFunction and kiln::RowFunction (kiln/custom.hpp, a front-end
  // header).
  std::function<double(double)> element;     // custom_map
  std::function<double(double)> derivative;  // custom_map, optional
  // custom_reduce: last dimension -> `outputs` values
  std::function<void(std::span<const double>, std::span<double>)> rows;
  std::int64_t outputs = 0;
};

}  // namespace kiln::detail
