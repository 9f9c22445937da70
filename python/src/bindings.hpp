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
void bind_more_ops(nb::module_& m);  // after bind_tensor: it adds methods to Tensor
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
// The dimensions of a `dim` argument: None (all), an int, or a sequence of ints.
std::vector<int> dims_of(nb::handle dim);
// A shape given as separate ints (zeros(2, 3)) or as one sequence (zeros((2, 3))).
Shape shape_of(nb::args args);

// A Python number as a kiln Scalar (bool, int, float, complex), or nullopt for anything else.
std::optional<Scalar> to_scalar(nb::handle value);

// An argument that takes a tensor or anything kiln.tensor takes (a NumPy array, a list), as
// PyTorch's functions do; it converts to const Tensor& where a function wants one.
struct TensorLike {
  Tensor t;
  operator const Tensor&() const { return t; }
};

}  // namespace kiln::python

namespace nanobind::detail {
template <> struct type_caster<kiln::python::TensorLike> {
  NB_TYPE_CASTER(kiln::python::TensorLike, const_name("kiln.Tensor | numpy.typing.ArrayLike"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    try {
      value.t = kiln::python::to_tensor(src);
      return true;
    } catch (...) {
      PyErr_Clear();  // not convertible: nanobind reports the argument types it accepts
      return false;
    }
  }
  static handle from_cpp(const kiln::python::TensorLike& v, rv_policy policy,
                         cleanup_list* cleanup) noexcept {
    return make_caster<kiln::Tensor>::from_cpp(v.t, policy, cleanup);
  }
};
}  // namespace nanobind::detail
