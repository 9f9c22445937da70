// Mixed precision (nn::Autocast): the type the layers compute in, per thread.
#include "kiln/error.hpp"
#include "kiln/nn.hpp"
#include "kiln/ops.hpp"
#include "nn/autocast.hpp"

namespace kiln::nn {

namespace {
// f32: no autocast.
thread_local DType layer_type = DType::f32;
}  // namespace

Autocast::Autocast(DType dtype) : previous_(layer_type) {
  if (!is_narrow_float(dtype))
    throw Error(ErrorCode::wrong_type, std::string("nn::Autocast: computes in f16 or bf16, not ") +
                                           dtype_name(dtype));
  layer_type = dtype;
}

Autocast::~Autocast() { layer_type = previous_; }

DType autocast_dtype() { return layer_type; }

Tensor autocast_input(const Tensor& t) {
  if (layer_type == DType::f32 || !t.defined() || !is_float(t.dtype()) || t.dtype() == layer_type)
    return t;
  return convert(t, layer_type);
}

Tensor layer_input(const Module& layer, const Tensor& x, const Tensor& weight) {
  if (layer_type != DType::f32 || !x.defined()) return autocast_input(x);
  if (x.dtype() != weight.dtype())
    throw Error(ErrorCode::wrong_type,
                "nn::" + layer.describe() + ": the input is " + dtype_name(x.dtype()) + " " +
                    shape_to_string(x.shape()) + " but the layer's parameters are " +
                    dtype_name(weight.dtype()) + " (convert the input with to(DType::" +
                    dtype_name(weight.dtype()) + "), or the model with module.to(DType::" +
                    dtype_name(x.dtype()) + "))");
  return x;
}

Tensor loss_input(const Tensor& t) {
  return t.defined() && is_narrow_float(t.dtype()) && layer_type != DType::f32
             ? convert(t, DType::f32)
             : t;
}

}  // namespace kiln::nn
