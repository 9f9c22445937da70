// The gradient table: for every op, the gradients of its inputs given the gradient of its
// output, built from ordinary ops (so backward graphs are lazy, fusable and differentiable).
#pragma once

#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::detail {

// One entry per input of `node`: the contribution of `node` to that input's gradient, or an
// undefined Tensor where the input gets none (non-differentiable ops and integer inputs like
// indices). `g` has node's shape and a float type.
std::vector<Tensor> input_gradients(const Tensor& node, const Tensor& g);

}  // namespace kiln::detail
