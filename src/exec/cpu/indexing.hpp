// gather and scatter_add on the CPU: the batches a training loop draws from its data set, and
// the label lookups of cross-entropy and their gradients.
#pragma once

#include "exec/fusion.hpp"

namespace kiln::detail::cpu {

// Computes the gather node `k.root` into `out`; false when the source is read through a view
// that reorders it (the caller then runs the reference kernel).
bool run_gather(const Kernel& k, Buffer& out);
// Computes the scatter_add node `k.root` into `out`; false for 0-d operands.
bool run_scatter_add(const Kernel& k, Buffer& out);

}  // namespace kiln::detail::cpu
