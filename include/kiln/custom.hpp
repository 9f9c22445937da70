/// @file
/// User-defined kernels (cl-waffe2's lazy and lazy-reduce): C++ callables applied inside the
/// graph. Values are passed as double; f32 tensors stay f32, integer tensors give f64.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "kiln/tensor.hpp"

namespace kiln {

using ElementFunction = std::function<double(double)>;
/// Receives one row (the last dimension) and writes the row's k results.
using RowFunction = std::function<void(std::span<const double> row, std::span<double> out)>;

/// f applied to every element. `derivative` (f'), when given, lets autodiff differentiate it.
Tensor map_elements(const Tensor& a, ElementFunction f, ElementFunction derivative = {});
/// The last dimension of `a` reduced to `k` values by `f`: shape [..., k].
Tensor reduce_rows(const Tensor& a, std::int64_t k, RowFunction f);

}  // namespace kiln
