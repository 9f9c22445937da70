// gather on the CPU: the batches a training loop draws from its data set, and the label lookups
// of cross-entropy.
#pragma once

#include "exec/fusion.hpp"

namespace kiln::detail::cpu {

// Computes the gather node `k.root` into `out`; false when the source is read through a view
// that reorders it (the caller then runs the reference kernel).
bool run_gather(const Kernel& k, Buffer& out);

}  // namespace kiln::detail::cpu
