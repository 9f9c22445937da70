/// @file
/// Reverse-mode automatic differentiation. Mark variables with Tensor::watch(), build the
/// function inside a GradientContext, then ask for gradients: the backward pass is itself a lazy
/// graph of ordinary ops, so it is evaluated like any graph and can be differentiated again when
/// it is built inside a gradient context (second derivatives).
#pragma once

#include <vector>

#include "kiln/gradient_mode.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

/// The gradient of sum(y) with respect to each x: one tensor per x with x's shape, f32 when y and
/// x are f32, else f64. A variable y does not depend on at all is given zeros. Errors
/// (illegal_derive): an x that is not watched, a y built outside a gradient context, an op
/// without a derivative (map_elements without one, reduce_rows), and a y that depends on an x only
/// through ops that pass no gradient (argmax, comparisons, rounding: libtorch refuses these too),
/// naming the op that cuts the path.
/// Ties of min/max (reductions and elementwise) share the gradient equally; abs'(0) = 0.
std::vector<Tensor> gradients(const Tensor& y, const std::vector<Tensor>& xs);
Tensor gradient(const Tensor& y, const Tensor& x);

}  // namespace kiln
