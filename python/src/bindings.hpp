// What the binding files share: the pieces of kiln's C++ API each one binds, and the conversions
// between Python values and kiln's tensors.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <optional>
#include <vector>

#include "kiln/kiln.hpp"

namespace kiln::python {

namespace nb = nanobind;

void bind_tensor(nb::module_& m);
void bind_ops(nb::module_& m);
void bind_nn(nb::module_& nn);
void bind_data(nb::module_& data);
void bind_runtime(nb::module_& m);
void bind_files(nb::module_& m);

// kiln's dtype as DLPack describes it, and back (nullopt: a type kiln has no tensor of).
nb::dlpack::dtype dlpack_dtype(DType d);
std::optional<DType> kiln_dtype(nb::dlpack::dtype d);

// A Python value as a tensor: a Tensor as it is, anything else (a number, a nested list, a NumPy
// array or any array with __array__ or the buffer protocol) copied into a new one, as
// kiln.tensor does. `dtype` converts; Python floats without one become the default dtype (f32),
// as in PyTorch.
Tensor to_tensor(nb::handle value, std::optional<DType> dtype = std::nullopt);
// The reductions over dimensions (sum, mean, prod, max, min), as Tensor methods and functions.
struct Reduction {
  const char* name;
  Tensor (*fn)(const Tensor&, std::vector<int>, bool);
};
const std::vector<Reduction>& reductions();

// a @ b with NumPy's and PyTorch's rules for 1-D operands.
Tensor matmul_of(const Tensor& a, const Tensor& b);
// A Python number as a kiln Scalar (bool, int, float, complex), or nullopt for anything else.
std::optional<Scalar> to_scalar(nb::handle value);

}  // namespace kiln::python
