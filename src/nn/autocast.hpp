// What the layers and losses do under nn::Autocast.
#pragma once

#include "kiln/tensor.hpp"

namespace kiln::nn {

// A float tensor converted to the autocast type, when an Autocast is active on this thread (other
// tensors, and every tensor outside an Autocast, as they are).
Tensor autocast_input(const Tensor& t);
// A loss's 16-bit float input converted to f32 under an Autocast (losses compute in f32).
Tensor loss_input(const Tensor& t);

}  // namespace kiln::nn
