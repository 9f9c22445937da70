/// @file
/// Data-dependent selection: gathering by index tensors and scattering.
/// Index tensors are integer tensors (i32 or i64); an index outside its dimension is an
/// invalid_select error, raised when the node is built if the indices are known then, else when
/// it is computed.
#pragma once

#include <cstdint>

#include "kiln/tensor.hpp"

namespace kiln {

/// Flint's findex: `indices` has shape [p..., J] where p is a prefix of a's shape; its last
/// dimension selects along dimension d = indices.rank() - 1 of `a`:
/// result[p..., j, rest...] = a[p..., indices[p..., j], rest...].
Tensor index(const Tensor& a, const Tensor& indices);
/// Flint's findex_set: indices [p..., J] with shape a prefix of b's; element b[p..., j, rest...]
/// is sent to a[p..., indices[p..., j], rest...]. Places that receive elements get their sum (the
/// old value is replaced), the others keep a's value; a negative index drops the element.
Tensor index_set(const Tensor& a, const Tensor& b, const Tensor& indices);

/// PyTorch's gather: indices has a's rank; result[i] = a[i with i[axis] = indices[i]].
Tensor gather(const Tensor& a, int axis, const Tensor& indices);
/// PyTorch's scatter_add: a copy of `a` with src[i] added at a[i with i[axis] = indices[i]].
Tensor scatter_add(const Tensor& a, int axis, const Tensor& indices, const Tensor& src);
/// PyTorch's scatter: a copy of `a` with a[i with i[axis] = indices[i]] = src[i] for every index
/// i of `indices` (whose sizes are at most src's, and a's outside `axis`); src is converted to a's
/// dtype. An element named more than once takes the mean of the values sent to it (rounded down
/// for integers), where PyTorch leaves open which one it takes. Differentiable in a and src.
Tensor scatter(const Tensor& a, int axis, const Tensor& indices, const Tensor& src);
/// The same with one value for every element named.
Tensor scatter(const Tensor& a, int axis, const Tensor& indices, Scalar value);
/// The slices of `a` along `axis` named by the 1-D `indices`, in their order.
Tensor index_select(const Tensor& a, int axis, const Tensor& indices);
/// [..., classes]: 1 at each label's position, else 0. Labels outside [0, classes) give a zero row.
Tensor one_hot(const Tensor& labels, std::int64_t classes, DType dtype = DType::f32);

}  // namespace kiln
