// Flint's rules for elementwise ops, which the C API keeps (the spec's decision 1 and the Flint
// document's broadcasting): a float-valued op of an integer tensor is computed in f64, a scalar
// has the type its C suffix names, and shapes that do not fit aligned at the right are aligned at
// the left; minimum, maximum, min and max pass gradients on ties as Flint does (decision 19). The C++ API's own forms make scalars weak and
// align at the left only operands marked with inverse_broadcast().
#pragma once

#include "graph/op_registry.hpp"
#include "kiln/tensor.hpp"

namespace kiln::detail {

Tensor flint_unary(Op op, const Tensor& a);  // integers give f64 where the values are floats
Tensor flint_binary(Op op, const Tensor& a, const Tensor& b);
Tensor flint_binary(Op op, const Tensor& a, Scalar b);
Tensor flint_binary(Op op, Scalar a, const Tensor& b);
// A min or max over one axis whose gradient follows Flint on ties (Attrs::flint_ties); other
// reductions as kiln's.
Tensor flint_reduce(Op op, const Tensor& a, int axis);
// Flint's dropout: dropped elements are 0, the others are not rescaled.
Tensor flint_dropout(const Tensor& a, double p);

}  // namespace kiln::detail
