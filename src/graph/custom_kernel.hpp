// The user callables behind the custom_map and custom_reduce ops.
#pragma once

#include "kiln/custom.hpp"

namespace kiln::detail {

struct CustomKernel {
  ElementFunction element;     // custom_map
  ElementFunction derivative;  // custom_map, optional
  RowFunction rows;            // custom_reduce: last dimension -> `outputs` values
  std::int64_t outputs = 0;
};

}  // namespace kiln::detail
