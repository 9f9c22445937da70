// What the layers and losses do under nn::Autocast.
#pragma once

#include <string>

#include "kiln/tensor.hpp"

namespace kiln::nn {

// A float tensor converted to the autocast type, when an Autocast is active on this thread (other
// tensors, and every tensor outside an Autocast, as they are).
Tensor autocast_input(const Tensor& t);
// A layer's input: under an Autocast, autocast_input(x); otherwise x, which must have the type of
// the layer's parameters (a wrong_type error naming the layer and both types, as libtorch refuses
// f64 data in an f32 Linear: nothing is converted behind the user's back).
class Module;
Tensor layer_input(const Module& layer, const Tensor& x, const Tensor& weight);
// A loss's 16-bit float input converted to f32 under an Autocast (losses compute in f32).
Tensor loss_input(const Tensor& t);

}  // namespace kiln::nn
