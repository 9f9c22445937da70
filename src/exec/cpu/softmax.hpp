// softmax and log_softmax along the last axis, one row at a time while it is in cache.
#pragma once

#include "exec/fusion.hpp"

namespace kiln::detail::cpu {

// Computes the softmax-kind node `k.root` into `out`; false when it has no fast kernel (another
// axis than the last), and the caller runs the reference kernel.
bool run_softmax(const Kernel& k, Buffer& out);

}  // namespace kiln::detail::cpu
