// The method forms of the free functions (x.exp(), x.softmax(-1), x.eq(y), ...), each the free
// function of the same name, so that code written in libtorch's style reads the same in kiln.
#include "kiln/activations.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/ops.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

Tensor Tensor::sum(int axis, bool keepdims) const { return kiln::sum(*this, {axis}, keepdims); }
Tensor Tensor::mean(int axis, bool keepdims) const { return kiln::mean(*this, {axis}, keepdims); }

#define KILN_METHOD_(name) \
  Tensor Tensor::name() const { return kiln::name(*this); }
KILN_METHOD_(exp)
KILN_METHOD_(log)
KILN_METHOD_(abs)
KILN_METHOD_(sqrt)
KILN_METHOD_(sin)
KILN_METHOD_(cos)
KILN_METHOD_(tanh)
KILN_METHOD_(sigmoid)
KILN_METHOD_(relu)
KILN_METHOD_(neg)
KILN_METHOD_(floor)
KILN_METHOD_(ceil)
KILN_METHOD_(round)
KILN_METHOD_(trunc)
KILN_METHOD_(argmax)
KILN_METHOD_(argmin)
KILN_METHOD_(all)
KILN_METHOD_(any)
KILN_METHOD_(std)
KILN_METHOD_(var)
#undef KILN_METHOD_

Tensor Tensor::pow(const Tensor& exponent) const { return kiln::pow(*this, exponent); }
Tensor Tensor::pow(Scalar exponent) const { return kiln::pow(*this, exponent); }
Tensor Tensor::matmul(const Tensor& other) const { return kiln::matmul(*this, other); }
Tensor Tensor::softmax(int axis) const { return kiln::softmax(*this, axis); }
Tensor Tensor::log_softmax(int axis) const { return kiln::log_softmax(*this, axis); }
Tensor Tensor::argmax(int axis, bool keepdims) const { return kiln::argmax(*this, axis, keepdims); }
Tensor Tensor::argmin(int axis, bool keepdims) const { return kiln::argmin(*this, axis, keepdims); }
Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const {
  return kiln::masked_fill(*this, mask, value);
}

#define KILN_BINARY_METHOD_(method, fn)                                                 \
  Tensor Tensor::method(const Tensor& other) const { return kiln::fn(*this, other); } \
  Tensor Tensor::method(Scalar other) const { return kiln::fn(*this, other); }
KILN_BINARY_METHOD_(eq, equal)
KILN_BINARY_METHOD_(ne, not_equal)
KILN_BINARY_METHOD_(lt, less)
KILN_BINARY_METHOD_(le, less_equal)
KILN_BINARY_METHOD_(gt, greater)
KILN_BINARY_METHOD_(ge, greater_equal)
KILN_BINARY_METHOD_(atan2, atan2)
KILN_BINARY_METHOD_(fmod, fmod)
KILN_BINARY_METHOD_(remainder, remainder)
#undef KILN_BINARY_METHOD_

std::vector<Tensor> Tensor::chunk(std::int64_t chunks, int dim) const {
  return kiln::chunk(*this, chunks, dim);
}
std::vector<Tensor> Tensor::split(std::int64_t split_size, int dim) const {
  return kiln::split(*this, split_size, dim);
}

}  // namespace kiln
