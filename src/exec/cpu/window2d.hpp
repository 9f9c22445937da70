// Fast kernels of the conv2d and max_pool2d families: oneDNN's convolution primitives for f32,
// and multi-threaded pooling loops.
#pragma once

#include "exec/fusion.hpp"

namespace kiln::detail::cpu {

// Computes the window2d-kind node `k.root` into `out`; false when there is no fast kernel for
// its type (the caller then runs the reference kernel).
bool run_window2d(const Kernel& k, Buffer& out);

}  // namespace kiln::detail::cpu
