// The extension module kiln._kiln: kiln's errors as Python exceptions, then every binding file.
#include "bindings.hpp"

namespace kiln::python {
namespace {

// kiln.Error (a RuntimeError) with the error's kind ("incompatible_shapes", ...) as `kind`. A
// handle that is never released: the type lives as long as the interpreter.
nb::handle error_type;

void raise_error(const Error& e) {
  nb::object instance = error_type(e.what());
  instance.attr("kind") = error_code_name(e.code());
  PyErr_SetObject(error_type.ptr(), instance.ptr());
}

}  // namespace
}  // namespace kiln::python

NB_MODULE(_kiln, m) {
  namespace py = kiln::python;
  namespace nb = nanobind;
  m.doc() = "kiln: lazily evaluated tensor graphs with fused kernels and autodiff";
  py::error_type = nb::handle(PyErr_NewExceptionWithDoc(
      "kiln.Error",
      "An error kiln reports: `kind` names its category (wrong_type, incompatible_shapes, ...), "
      "the message names the op and the shapes.",
      PyExc_RuntimeError, nullptr));
  m.attr("Error") = py::error_type;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const kiln::Error& e) {
      py::raise_error(e);
    }
  });
  py::bind_tensor(m);
  py::bind_ops(m);
  py::bind_more_ops(m);
  py::bind_runtime(m);
  py::bind_files(m);
  nb::module_ nn = m.def_submodule("nn", "kiln.nn's layers, losses and optimisers");
  py::bind_nn(nn);
  nb::module_ data = m.def_submodule("data", "kiln.data: loading and batching");
  py::bind_data(data);
}
