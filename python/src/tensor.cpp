// kiln.Tensor: the handle, its operators, indexing and methods, and the ways values cross between
// kiln and NumPy, PyTorch or JAX without a copy (the buffer protocol, __array__, DLPack both ways).
#include <nanobind/stl/complex.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <complex>
#include <cstring>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "kiln/executor.hpp"
#include "kiln/tensor_index.hpp"

namespace kiln::python {

namespace {

namespace dl = nb::dlpack;
using namespace nb::literals;

// The values of an evaluated tensor stay where they are while anything outside kiln looks at
// them: a heap copy of the handle travels with the view and is dropped with it. A handle keeps
// its node's storage alive, and kiln never writes into storage a handle can still read.
struct Keep {
  Tensor tensor;
};

const void* evaluated_data(const Tensor& t) {
  {
    nb::gil_scoped_release unlocked;
    t.eval();
  }
  return t.data_ptr(t.dtype());
}

// An nb::ndarray over t's values (evaluated first), owning a handle of t.
template <class... Extra> nb::ndarray<Extra...> array_of(const Tensor& t) {
  const void* data = evaluated_data(t);
  auto* keep = new Keep{t};
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Keep*>(p); });
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  return nb::ndarray<Extra...>(const_cast<void*>(data), shape.size(), shape.data(), owner,
                               nullptr, dlpack_dtype(t.dtype()), nb::device::cpu::value, 0);
}

// ---- the buffer protocol ---------------------------------------------------------------------

struct BufferView {
  Tensor tensor;
  std::vector<Py_ssize_t> shape, strides;
};

const char* buffer_format(DType d) {
  switch (d) {
    case DType::f32: return "f";
    case DType::f64: return "d";
    case DType::i32: return "i";
    case DType::i64: return "q";
    case DType::boolean: return "?";
    case DType::c64: return "Zf";
    case DType::c128: return "Zd";
    case DType::f16: return "e";
    case DType::bf16: return nullptr;  // no format character: use DLPack or .float()
    case DType::u8: return "B";
    case DType::i8: return "b";
    case DType::i16: return "h";
  }
  return nullptr;
}

int get_buffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError,
                    "kiln tensors are read-only through the buffer protocol (kiln's graphs may "
                    "still read the values); copy them to write");
    return -1;
  }
  const Tensor* t = nullptr;
  if (!nb::try_cast<const Tensor*>(nb::handle(self), t) || t == nullptr || !t->defined()) {
    PyErr_SetString(PyExc_BufferError, "an empty kiln.Tensor has no values");
    return -1;
  }
  const char* format = buffer_format(t->dtype());
  if (format == nullptr) {
    PyErr_SetString(PyExc_BufferError,
                    "bfloat16 has no buffer-protocol format: use DLPack, or .to(kiln.float32)");
    return -1;
  }
  auto* v = new BufferView{*t, {}, {}};
  const void* data = nullptr;
  try {
    data = evaluated_data(v->tensor);
  } catch (const Error& e) {
    delete v;
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  }
  const auto item = static_cast<Py_ssize_t>(size_of(t->dtype()));
  for (std::int64_t d : t->shape()) v->shape.push_back(static_cast<Py_ssize_t>(d));
  v->strides.resize(v->shape.size());
  Py_ssize_t stride = item;
  for (std::size_t i = v->shape.size(); i-- > 0;) {
    v->strides[i] = stride;
    stride *= v->shape[i];
  }
  view->buf = const_cast<void*>(data);
  view->obj = self;
  Py_INCREF(self);
  view->len = static_cast<Py_ssize_t>(t->numel()) * item;
  view->readonly = 1;
  view->itemsize = item;
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(format) : nullptr;
  view->ndim = static_cast<int>(v->shape.size());
  view->shape = (flags & PyBUF_ND) ? v->shape.data() : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? v->strides.data() : nullptr;
  view->suboffsets = nullptr;
  view->internal = v;
  return 0;
}

void release_buffer(PyObject*, Py_buffer* view) { delete static_cast<BufferView*>(view->internal); }

PyType_Slot tensor_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(get_buffer)},
                              {Py_bf_releasebuffer, reinterpret_cast<void*>(release_buffer)},
                              {0, nullptr}};

// ---- memory lent to kiln ---------------------------------------------------------------------

// Releases a Python-side owner (a NumPy array, a DLPack tensor) from whichever thread drops the
// last handle of the kiln storage lent from it; after the interpreter has stopped, nothing is
// left to release.
template <class Owner> std::function<void(void*)> release_under_gil(Owner owner) {
  auto* held = new Owner(std::move(owner));
  return [held](void*) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire locked;
    delete held;
  };
}

[[noreturn]] void fail(ErrorCode code, const std::string& op, const std::string& what) {
  throw Error(code, op + ": " + what);
}

std::string describe(dl::dtype d) {
  const char* code = d.code == static_cast<std::uint8_t>(dl::dtype_code::Int)      ? "int"
                     : d.code == static_cast<std::uint8_t>(dl::dtype_code::UInt)   ? "uint"
                     : d.code == static_cast<std::uint8_t>(dl::dtype_code::Float)  ? "float"
                     : d.code == static_cast<std::uint8_t>(dl::dtype_code::Bfloat) ? "bfloat"
                     : d.code == static_cast<std::uint8_t>(dl::dtype_code::Complex)
                         ? "complex"
                         : d.code == static_cast<std::uint8_t>(dl::dtype_code::Bool) ? "bool"
                                                                                     : "type";
  return std::string(code) + std::to_string(d.bits);
}

// A C-contiguous array's memory as a tensor of kiln's, without a copy where the memory is 64-byte
// aligned (what kiln's kernels take from the outside; PyTorch's and JAX's CPU arrays are, NumPy's
// are 16-byte aligned). Otherwise the values are copied once, or with copy=False it is an error.
Tensor lend(const char* op, void* data, std::size_t ndim, const std::int64_t* strides,
            const std::size_t* shape_in, dl::dtype dtype, std::function<void(void*)> release,
            std::optional<bool> copy) {
  const std::optional<DType> d = kiln_dtype(dtype);
  if (!d)
    fail(ErrorCode::wrong_type, op,
         "kiln has no tensors of " + describe(dtype) +
             " (float16/32/64, bfloat16, uint8, int8/16/32/64, bool, complex64/128); convert "
             "first, or use kiln.tensor, which copies and widens uint16 and uint32");
  Shape shape(shape_in, shape_in + ndim);
  std::int64_t expected = 1;
  for (std::size_t i = ndim; i-- > 0;) {
    if (strides != nullptr && shape[i] > 1 && strides[i] != expected)
      fail(ErrorCode::invalid_select, op,
           "the array is not C-contiguous (strides in elements differ from its shape's); pass "
           "numpy.ascontiguousarray(a), or use kiln.tensor, which copies");
    expected *= shape[i];
  }
  const bool aligned = reinterpret_cast<std::uintptr_t>(data) % 64 == 0;
  if (copy == std::optional<bool>(false) && !aligned)
    fail(ErrorCode::invalid_select, op,
         "copy=False, but the array's memory is not 64-byte aligned, which kiln needs to share "
         "it (NumPy aligns to 16 bytes: allocate with kiln.empty_aligned, or allow a copy)");
  if (copy == std::optional<bool>(true)) {
    Tensor t = Tensor::from_bytes(data, *d, shape);
    release(data);
    return t;
  }
  return Tensor::from_blob(data, std::move(shape), *d, std::move(release));
}

Tensor from_dlpack(nb::handle source, std::optional<bool> copy) {
  // nanobind asks __dlpack__ for the newest capsule both sides know (versioned or not). Read-only
  // arrays are taken too: kiln never writes into memory lent to it.
  nb::ndarray<nb::ro, nb::device::cpu> array;
  if (!nb::try_cast(source, array))
    fail(ErrorCode::wrong_type, "kiln.from_dlpack",
         "the object gives no DLPack tensor in host memory (an array of another device, or no "
         "__dlpack__ and no buffer protocol)");
  std::vector<std::size_t> shape(array.ndim());
  std::vector<std::int64_t> strides(array.ndim());
  for (std::size_t i = 0; i < array.ndim(); ++i) {
    shape[i] = array.shape(i);
    strides[i] = array.stride(i);
  }
  void* data = const_cast<void*>(array.data());
  const dl::dtype dtype = array.dtype();
  return lend("kiln.from_dlpack", data, shape.size(), strides.data(), shape.data(), dtype,
              release_under_gil(std::move(array)), copy);
}

Tensor from_numpy(nb::handle source, std::optional<bool> copy) {
  nb::module_ np = nb::module_::import_("numpy");
  if (!nb::isinstance(source, np.attr("ndarray")))
    fail(ErrorCode::wrong_type, "kiln.from_numpy",
         "needs a numpy.ndarray, got " + std::string(nb::type_name(source.type()).c_str()));
  if (!nb::cast<bool>(source.attr("flags").attr("c_contiguous")))
    fail(ErrorCode::invalid_select, "kiln.from_numpy",
         "the array is not C-contiguous; pass numpy.ascontiguousarray(a), or use kiln.tensor, "
         "which copies");
  return from_dlpack(source, copy);
}

// A NumPy array of `shape` and `dtype` whose memory is 64-byte aligned, so that kiln.from_numpy
// shares it.
nb::object empty_aligned(nb::handle shape, nb::handle dtype) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::object dt = np.attr("dtype")(dtype);
  const auto item = nb::cast<std::int64_t>(dt.attr("itemsize"));
  const auto n = nb::cast<std::int64_t>(np.attr("prod")(shape, "dtype"_a = np.attr("int64")));
  nb::object raw = np.attr("empty")(n * item + 64, "dtype"_a = np.attr("uint8"));
  const auto address = nb::cast<std::uintptr_t>(
      raw.attr("__array_interface__")["data"].attr("__getitem__")(0));
  const std::int64_t offset = static_cast<std::int64_t>((64 - address % 64) % 64);
  nb::object part = raw[nb::slice(nb::int_(offset), nb::int_(offset + n * item), nb::none())];
  return part.attr("view")(dt).attr("reshape")(shape);
}

// ---- Python values as tensors ----------------------------------------------------------------

// The NumPy array behind a Python value, as kiln keeps it: uint16 widened to int32, uint32 to
// int64, Python floats (not NumPy float64 arrays) to the default dtype.
nb::object numpy_array_of(nb::handle value, bool from_python_lists) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::object a = np.attr("asarray")(value);
  const std::string kind = nb::cast<std::string>(a.attr("dtype").attr("kind"));
  const auto bytes = nb::cast<int>(a.attr("dtype").attr("itemsize"));
  if (kind == "u" && bytes == 2) a = a.attr("astype")(np.attr("int32"));
  else if (kind == "u" && bytes == 4) a = a.attr("astype")(np.attr("int64"));
  else if (kind == "f" && bytes == 8 && from_python_lists) a = a.attr("astype")(np.attr("float32"));
  else if (kind == "c" && bytes == 16 && from_python_lists) a = a.attr("astype")(np.attr("complex64"));
  return np.attr("ascontiguousarray")(a);
}

}  // namespace

const std::vector<Reduction>& reductions() {
  static const std::vector<Reduction> table{
      {"sum", [](const Tensor& t, std::vector<int> d, bool k) { return sum(t, std::move(d), k); }},
      {"mean", [](const Tensor& t, std::vector<int> d, bool k) { return mean(t, std::move(d), k); }},
      {"prod", [](const Tensor& t, std::vector<int> d, bool k) { return prod(t, std::move(d), k); }},
      {"max", [](const Tensor& t, std::vector<int> d, bool k) { return max(t, std::move(d), k); }},
      {"min", [](const Tensor& t, std::vector<int> d, bool k) { return min(t, std::move(d), k); }}};
  return table;
}

nb::dlpack::dtype dlpack_dtype(DType d) {
  switch (d) {
    case DType::f32: return nb::dtype<float>();
    case DType::f64: return nb::dtype<double>();
    case DType::i32: return nb::dtype<std::int32_t>();
    case DType::i64: return nb::dtype<std::int64_t>();
    case DType::boolean: return nb::dtype<bool>();
    case DType::c64: return nb::dtype<std::complex<float>>();
    case DType::c128: return nb::dtype<std::complex<double>>();
    case DType::f16: return {static_cast<std::uint8_t>(dl::dtype_code::Float), 16, 1};
    case DType::bf16: return {static_cast<std::uint8_t>(dl::dtype_code::Bfloat), 16, 1};
    case DType::u8: return nb::dtype<std::uint8_t>();
    case DType::i8: return nb::dtype<std::int8_t>();
    case DType::i16: return nb::dtype<std::int16_t>();
  }
  return nb::dtype<float>();
}

std::optional<DType> kiln_dtype(nb::dlpack::dtype d) {
  if (d.lanes != 1) return std::nullopt;
  using code = dl::dtype_code;
  const auto c = static_cast<code>(d.code);
  if (c == code::Float && d.bits == 32) return DType::f32;
  if (c == code::Float && d.bits == 64) return DType::f64;
  if (c == code::Float && d.bits == 16) return DType::f16;
  if (c == code::Bfloat && d.bits == 16) return DType::bf16;
  if (c == code::UInt && d.bits == 8) return DType::u8;
  if (c == code::Int && d.bits == 8) return DType::i8;
  if (c == code::Int && d.bits == 16) return DType::i16;
  if (c == code::Int && d.bits == 32) return DType::i32;
  if (c == code::Int && d.bits == 64) return DType::i64;
  if (c == code::Bool && d.bits == 8) return DType::boolean;
  if (c == code::Complex && d.bits == 64) return DType::c64;
  if (c == code::Complex && d.bits == 128) return DType::c128;
  return std::nullopt;
}

std::optional<Scalar> to_scalar(nb::handle v) {
  if (PyBool_Check(v.ptr())) return Scalar(v.ptr() == Py_True);
  if (PyLong_Check(v.ptr())) return Scalar(static_cast<long long>(nb::cast<std::int64_t>(v)));
  if (PyFloat_Check(v.ptr())) return Scalar(nb::cast<double>(v));
  if (PyComplex_Check(v.ptr())) return Scalar(nb::cast<std::complex<double>>(v));
  return std::nullopt;
}

Tensor to_tensor(nb::handle value, std::optional<DType> dtype) {
  Tensor t;
  if (nb::isinstance<Tensor>(value)) {
    t = nb::cast<Tensor>(value);
  } else if (nb::hasattr(value, "__kiln_tensor__")) {  // a Parameter: its current value
    t = nb::cast<Tensor>(value.attr("__kiln_tensor__")());
  } else {
    const bool from_python =
        PyList_Check(value.ptr()) || PyTuple_Check(value.ptr()) || PyFloat_Check(value.ptr()) ||
        PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()) || PyComplex_Check(value.ptr());
    nb::object a = numpy_array_of(value, from_python);
    const Tensor lent = from_dlpack(a, std::nullopt);
    t = lent.clone();  // kiln.tensor copies: the values no longer depend on the array
    t.eval();
  }
  if (dtype && t.dtype() != *dtype) t = t.convert(*dtype);
  return t;
}

namespace {

// ---- indexing --------------------------------------------------------------------------------

TensorIndex one_index(nb::handle k) {
  using namespace kiln::indexing;
  if (k.is_none()) return TensorIndex(None);
  if (k.ptr() == Py_Ellipsis) return TensorIndex(Ellipsis);
  if (PySlice_Check(k.ptr())) {
    auto bound = [&](const char* name) -> SliceBound {
      nb::object b = k.attr(name);
      return b.is_none() ? SliceBound(None) : SliceBound(nb::cast<std::int64_t>(b));
    };
    return TensorIndex(Slice(bound("start"), bound("stop"), bound("step")));
  }
  if (PyBool_Check(k.ptr()))
    throw Error(ErrorCode::invalid_select,
                "kiln.Tensor[]: a Python bool is not an index (use a bool tensor as a mask)");
  if (PyLong_Check(k.ptr())) return TensorIndex(nb::cast<std::int64_t>(k));
  // Tensors, NumPy arrays and lists of integers or bools.
  Tensor t = to_tensor(k);
  if (is_float(t.dtype()) || is_complex(t.dtype()))
    throw Error(ErrorCode::wrong_type, "kiln.Tensor[]: indices must be integers or bools, got " +
                                           std::string(dtype_name(t.dtype())) + " " +
                                           shape_to_string(t.shape()));
  return TensorIndex(t);
}

std::vector<TensorIndex> indices_of(nb::handle key) {
  std::vector<TensorIndex> out;
  if (PyTuple_Check(key.ptr())) {
    for (nb::handle k : nb::borrow<nb::tuple>(key)) out.push_back(one_index(k));
  } else {
    out.push_back(one_index(key));
  }
  return out;
}

// ---- operators -------------------------------------------------------------------------------

}  // namespace

std::vector<int> dims_of(nb::handle dim) {
  if (dim.is_none()) return {};
  if (PyLong_Check(dim.ptr())) return {nb::cast<int>(dim)};
  return nb::cast<std::vector<int>>(dim);
}

Shape shape_of(nb::args args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return nb::cast<Shape>(args[0]);
  return nb::cast<Shape>(args);
}

// a @ b as NumPy and PyTorch take it: a 1-D operand is a row (left) or a column (right) whose
// dimension is dropped from the result.
Tensor matmul_of(const Tensor& a, const Tensor& b) {
  const bool row = a.rank() == 1, column = b.rank() == 1;
  Tensor r = matmul(row ? a.unsqueeze(0) : a, column ? b.unsqueeze(1) : b);
  if (column) r = r.squeeze(-1);
  if (row) r = r.squeeze(column ? -1 : -2);
  return r;
}

namespace {

// a (op) b where b is a tensor or a Python number (a weak scalar: it takes a's dtype).
template <class F> nb::object binary(const Tensor& a, nb::handle b, F op) {
  if (auto s = to_scalar(b)) return nb::cast(op(a, *s));
  if (nb::isinstance<Tensor>(b) || nb::hasattr(b, "__array__") || nb::hasattr(b, "__dlpack__") ||
      nb::hasattr(b, "__kiln_tensor__") || PyList_Check(b.ptr()) || PyTuple_Check(b.ptr()))
    return nb::cast(op(a, to_tensor(b)));
  return nb::borrow(Py_NotImplemented);
}
template <class F> nb::object reflected(const Tensor& a, nb::handle b, F op) {
  if (auto s = to_scalar(b)) return nb::cast(op(*s, a));
  if (nb::hasattr(b, "__array__") || nb::hasattr(b, "__kiln_tensor__") || PyList_Check(b.ptr()) ||
      PyTuple_Check(b.ptr()))
    return nb::cast(op(to_tensor(b), a));
  return nb::borrow(Py_NotImplemented);
}

// The dunder methods of a binary op, with its reflected form (b + a for a number b).
template <class Op>
void bind_binary(nb::class_<Tensor>& c, const char* name, const char* reflected_name, Op op) {
  c.def(name, [op](const Tensor& a, nb::handle b) { return binary(a, b, op); });
  if (reflected_name != nullptr)
    c.def(reflected_name, [op](const Tensor& a, nb::handle b) { return reflected(a, b, op); });
}


nb::object to_list(const Tensor& t) {
  nb::module_ np = nb::module_::import_("numpy");
  if (t.dtype() == DType::bf16) return to_list(t.convert(DType::f32));
  nb::object a = nb::cast(array_of<nb::numpy, nb::ro>(t));
  return a.attr("tolist")();
}

}  // namespace

void bind_tensor(nb::module_& m) {
  nb::enum_<DType>(m, "dtype", "kiln's element types (kiln.float32, ... name them)")
      .value("int32", DType::i32)
      .value("int64", DType::i64)
      .value("float32", DType::f32)
      .value("float64", DType::f64)
      .value("float16", DType::f16)
      .value("bfloat16", DType::bf16)
      .value("bool", DType::boolean)
      .value("complex64", DType::c64)
      .value("complex128", DType::c128)
      .value("uint8", DType::u8)
      .value("int8", DType::i8)
      .value("int16", DType::i16)
      .def_prop_ro("itemsize", [](DType d) { return size_of(d); })
      .def_prop_ro("is_floating_point", [](DType d) { return is_float(d); })
      .def_prop_ro("is_complex", [](DType d) { return is_complex(d); });
  for (const char* name : {"int32", "int64", "float32", "float64", "float16", "bfloat16", "bool",
                           "complex64", "complex128", "uint8", "int8", "int16"})
    m.attr(name) = m.attr("dtype").attr(name);
  m.attr("float") = m.attr("float32");
  m.attr("double") = m.attr("float64");
  m.attr("half") = m.attr("float16");
  m.attr("int") = m.attr("int32");
  m.attr("short") = m.attr("int16");
  m.attr("long") = m.attr("int64");

  nb::class_<Tensor> tensor(m, "Tensor", nb::type_slots(tensor_slots),
                            "A handle to a node of kiln's lazily evaluated graph. Operations "
                            "build nodes; reading values (item, tolist, numpy, printing, "
                            "eval) computes them, with the GIL released.");
  tensor.def(nb::init<>())
      .def("__init__", [](Tensor* self, nb::handle data, std::optional<DType> dtype) {
             new (self) Tensor(to_tensor(data, dtype));
           }, nb::arg("data"), nb::arg("dtype") = nb::none(),
           "A copy of `data` (a Tensor, number, nested list or array), as kiln.tensor.")
      .def_prop_ro("shape", [](const Tensor& t) { return nb::tuple(nb::cast(t.shape())); })
      .def("size", [](const Tensor& t, std::optional<int> dim) -> nb::object {
             if (dim) return nb::cast(t.size(*dim));
             return nb::tuple(nb::cast(t.shape()));
           }, nb::arg("dim") = nb::none())
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("ndim", &Tensor::rank)
      .def("dim", &Tensor::rank)
      .def("numel", &Tensor::numel)
      .def_prop_ro("device", [](const Tensor&) { return "cpu"; },
                   "Where Python reads the values: host memory (a device executor's results are "
                   "copied there when read)")
      .def("__len__", [](const Tensor& t) {
             if (t.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
             return t.size(0);
           })
      .def("__repr__", [](const Tensor& t) {
             if (!t.defined()) return std::string("kiln.Tensor()");
             nb::gil_scoped_release unlocked;
             return to_string(t);
           })
      .def("eval", [](nb::handle self, std::optional<std::string> executor) {
             const Tensor& t = nb::cast<const Tensor&>(self);
             std::shared_ptr<Executor> e = executor ? find_executor(*executor) : nullptr;
             {
               nb::gil_scoped_release unlocked;
               if (e) t.eval(*e);
               else t.eval();
             }
             return nb::borrow(self);
           }, nb::arg("executor") = nb::none(), "Computes the values now (the GIL is released meanwhile); returns the tensor.")
      .def("is_evaluated", &Tensor::is_evaluated)
      .def("place_on", [](nb::handle self, const std::string& executor) {
             std::shared_ptr<Executor> e = find_executor(executor);
             {
               nb::gil_scoped_release unlocked;
               nb::cast<const Tensor&>(self).place_on(*e);
             }
             return nb::borrow(self);
           }, nb::arg("executor"),
           "Evaluates on the named executor (cpu, reference, opencl) and keeps the values in its "
           "memory, as libtorch's to(device) for the tensor's storage.")
      .def("is_on", [](const Tensor& t, const std::string& executor) {
             return t.is_on(*find_executor(executor));
           }, nb::arg("executor"))
      .def("item", [](const Tensor& t) -> nb::object {
             Scalar s;
             {
               nb::gil_scoped_release unlocked;
               s = t.item_scalar();
             }
             if (s.dtype() == DType::boolean) return nb::cast(s.as<bool>());
             if (is_complex(s.dtype())) return nb::cast(s.as<std::complex<double>>());
             if (is_float(s.dtype())) return nb::cast(s.as<double>());
             return nb::cast(s.as<std::int64_t>());
           })
      .def("tolist", &to_list)
      .def("numpy", [](const Tensor& t) {
             if (t.dtype() == DType::bf16)
               throw Error(ErrorCode::wrong_type,
                           "Tensor.numpy: NumPy has no bfloat16; use .to(kiln.float32) first");
             return array_of<nb::numpy, nb::ro>(t);
           }, nb::rv_policy::reference,
           "The values as a read-only NumPy array sharing kiln's memory (no copy); the array "
           "keeps the values alive.")
      .def("__array__", [](const Tensor& t, nb::handle dtype, nb::handle copy) {
             if (t.dtype() == DType::bf16)
               throw Error(ErrorCode::wrong_type,
                           "Tensor.__array__: NumPy has no bfloat16; use .to(kiln.float32)");
             nb::object a = nb::cast(array_of<nb::numpy, nb::ro>(t));
             if (!dtype.is_none()) a = a.attr("astype")(dtype);
             if (!copy.is_none() && nb::cast<bool>(copy)) a = a.attr("copy")();
             return a;
           }, nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__dlpack__", [](const Tensor& t, nb::kwargs kwargs) {
             nb::object a = nb::cast(array_of<nb::array_api, nb::ro>(t));
             return a.attr("__dlpack__")(**kwargs);
           }, "A DLPack capsule of the values (versioned when the consumer asks by "
              "max_version), sharing kiln's memory.")
      .def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(1, 0); })
      .def("__getitem__", [](const Tensor& t, nb::handle key) { return t.index(indices_of(key)); })
      .def("__setitem__", [](Tensor& t, nb::handle key, nb::handle value) {
             // A kiln graph is immutable: the Python object's handle moves to the updated tensor.
             const std::vector<TensorIndex> idx = indices_of(key);
             if (auto s = to_scalar(value)) {
               t = t.index_put(idx, full({}, *s, t.dtype()));
             } else {
               t = t.index_put(idx, to_tensor(value));
             }
           })
      .def("__matmul__", [](const Tensor& a, nb::handle b) { return matmul_of(a, to_tensor(b)); })
      .def("__rmatmul__", [](const Tensor& a, nb::handle b) { return matmul_of(to_tensor(b), a); })
      .def("__neg__", [](const Tensor& a) { return neg(a); })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return abs(a); })
      .def("__invert__", [](const Tensor& a) { return logical_not(a); })
      .def("__and__", [](const Tensor& a, nb::handle b) { return logical_and(a, to_tensor(b)); })
      .def("__or__", [](const Tensor& a, nb::handle b) { return logical_or(a, to_tensor(b)); })
      .def("__xor__", [](const Tensor& a, nb::handle b) { return logical_xor(a, to_tensor(b)); })
      .def("__bool__", [](const Tensor& t) {
             if (t.numel() != 1)
               throw Error(ErrorCode::incompatible_shapes,
                           "the truth value of a tensor of shape " + shape_to_string(t.shape()) +
                               " is ambiguous: use .any() or .all()");
             nb::gil_scoped_release unlocked;
             return t.item_scalar().as<bool>();
           })
      .def("__float__", [](const Tensor& t) { nb::gil_scoped_release u; return t.item<double>(); })
      .def("__int__", [](const Tensor& t) { nb::gil_scoped_release u; return t.item<std::int64_t>(); })
      .def("__index__", [](const Tensor& t) {
             if (is_inexact(t.dtype()) || t.numel() != 1)
               throw nb::type_error("only integer tensors of one element are indices");
             nb::gil_scoped_release u;
             return t.item<std::int64_t>();
           })
      .def("__hash__", [](const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.node().get()); })
      // shapes
      .def("reshape", [](const Tensor& t, nb::args shape) { return t.reshape(shape_of(shape)); })
      .def("view", [](const Tensor& t, nb::args shape) { return t.reshape(shape_of(shape)); })
      .def("flatten", [](const Tensor& t, int start, int end) { return t.flatten(start, end); },
           nb::arg("start_dim") = 0, nb::arg("end_dim") = -1)
      .def("permute", [](const Tensor& t, nb::args dims) {
             return t.permute(dims.size() == 1 && !PyLong_Check(dims[0].ptr())
                                  ? nb::cast<std::vector<int>>(dims[0])
                                  : nb::cast<std::vector<int>>(dims));
           })
      .def("transpose", &Tensor::transpose)
      .def_prop_ro("T", [](const Tensor& t) { return t.rank() < 2 ? t : t.t(); })
      .def("t", &Tensor::t)
      .def("expand", [](const Tensor& t, nb::args shape) { return t.expand(shape_of(shape)); })
      .def("squeeze", [](const Tensor& t, std::optional<int> dim) { return dim ? t.squeeze(*dim) : t.squeeze(); },
           nb::arg("dim") = nb::none())
      .def("unsqueeze", &Tensor::unsqueeze)
      .def("contiguous", &Tensor::contiguous)
      .def("clone", &Tensor::clone)
      .def("detach", &Tensor::detach)
      .def("to", [](const Tensor& t, DType d) { return t.convert(d); })
      .def("to", [](const Tensor& t, const std::string& device) {
             const Device d(device);
             nb::gil_scoped_release unlocked;
             return t.to(d);
           }, nb::arg("device"),
           "This tensor on the named executor (cpu, opencl, cuda, reference), as torch's "
           "to(device): every op of it runs there, and operands on two devices raise kiln.Error.")
      .def_prop_ro("device", [](const Tensor& t) { return t.device().name(); },
                   "Where the tensor lives: the executor to() placed it on, else the one that "
                   "computes it now.")
      .def_prop_ro("is_placed", &Tensor::is_placed)
      .def("float", [](const Tensor& t) { return t.convert(DType::f32); })
      .def("double", [](const Tensor& t) { return t.convert(DType::f64); })
      .def("long", [](const Tensor& t) { return t.convert(DType::i64); })
      .def("int", [](const Tensor& t) { return t.convert(DType::i32); })
      .def("bool", [](const Tensor& t) { return t.convert(DType::boolean); })
      .def("chunk", &Tensor::chunk, nb::arg("chunks"), nb::arg("dim") = 0)
      .def("split", &Tensor::split, nb::arg("split_size"), nb::arg("dim") = 0)
      // reductions
      .def("argmax", [](const Tensor& t, std::optional<int> dim, bool keepdim) {
             return dim ? argmax(t, *dim, keepdim) : argmax(t);
           }, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def("argmin", [](const Tensor& t, std::optional<int> dim, bool keepdim) {
             return dim ? argmin(t, *dim, keepdim) : argmin(t);
           }, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def("std", [](const Tensor& t, nb::handle dim, std::int64_t correction, bool keepdim) {
             return kiln::std(t, dims_of(dim), correction, keepdim);
           }, nb::arg("dim") = nb::none(), nb::arg("correction") = 1, nb::arg("keepdim") = false)
      .def("var", [](const Tensor& t, nb::handle dim, std::int64_t correction, bool keepdim) {
             return var(t, dims_of(dim), correction, keepdim);
           }, nb::arg("dim") = nb::none(), nb::arg("correction") = 1, nb::arg("keepdim") = false)
      .def("all", [](const Tensor& t) { return all(t); })
      .def("any", [](const Tensor& t) { return any(t); })
      // elementwise
      .def("exp", &Tensor::exp)
      .def("log", &Tensor::log)
      .def("abs", &Tensor::abs)
      .def("sqrt", &Tensor::sqrt)
      .def("sin", &Tensor::sin)
      .def("cos", &Tensor::cos)
      .def("tanh", &Tensor::tanh)
      .def("sigmoid", &Tensor::sigmoid)
      .def("relu", &Tensor::relu)
      .def("neg", &Tensor::neg)
      .def("square", [](const Tensor& t) { return square(t); })
      .def("pow", [](const Tensor& a, nb::handle b) { return binary(a, b, [](auto&& x, auto&& y) { return pow(x, y); }); })
      .def("clamp", [](const Tensor& t, std::optional<double> lo, std::optional<double> hi) {
             return clamp(t, lo ? std::optional<Scalar>(Scalar(*lo)) : std::nullopt,
                          hi ? std::optional<Scalar>(Scalar(*hi)) : std::nullopt);
           }, nb::arg("min") = nb::none(), nb::arg("max") = nb::none())
      .def("matmul", [](const Tensor& a, nb::handle b) { return matmul_of(a, to_tensor(b)); })
      .def("softmax", &Tensor::softmax, nb::arg("dim"))
      .def("log_softmax", &Tensor::log_softmax, nb::arg("dim"))
      .def("masked_fill", [](const Tensor& t, nb::handle mask, nb::handle value) {
             auto s = to_scalar(value);
             if (!s) throw nb::type_error("masked_fill: the value must be a number");
             return t.masked_fill(to_tensor(mask), *s);
           })
      .def("eq", [](const Tensor& a, nb::handle b) { return binary(a, b, [](auto&& x, auto&& y) { return equal(x, y); }); })
      // autodiff
      .def("watch", [](const Tensor& t) { return t.watch(); },
           "Marks the tensor as a variable gradients are taken with respect to (PyTorch's "
           "requires_grad_()).")
      .def("requires_grad_", [](const Tensor& t, bool on) { return on ? t.watch() : t.unwatch(); },
           nb::arg("requires_grad") = true)
      .def_prop_ro("requires_grad", &Tensor::is_watched)
      .def("backward", [](const Tensor& t) {
             nb::gil_scoped_release unlocked;
             t.backward();
           }, "Adds d(this)/d(variable) to the grad of every watched variable it depends on.")
      .def_prop_ro("grad", [](const Tensor& t) -> nb::object {
             Tensor g = t.grad();
             if (!g.defined()) return nb::none();
             return nb::cast(g);
           })
      .def("zero_grad", &Tensor::zero_grad);

  // Arithmetic, and comparisons giving bool tensors (as in PyTorch).
  bind_binary(tensor, "__add__", "__radd__", [](auto&& x, auto&& y) { return add(x, y); });
  bind_binary(tensor, "__sub__", "__rsub__", [](auto&& x, auto&& y) { return sub(x, y); });
  bind_binary(tensor, "__mul__", "__rmul__", [](auto&& x, auto&& y) { return mul(x, y); });
  bind_binary(tensor, "__truediv__", "__rtruediv__", [](auto&& x, auto&& y) { return div(x, y); });
  bind_binary(tensor, "__floordiv__", "__rfloordiv__",
              [](auto&& x, auto&& y) { return floor_divide(x, y); });
  bind_binary(tensor, "__pow__", "__rpow__", [](auto&& x, auto&& y) { return pow(x, y); });
  bind_binary(tensor, "__eq__", nullptr, [](auto&& x, auto&& y) { return equal(x, y); });
  bind_binary(tensor, "__ne__", nullptr, [](auto&& x, auto&& y) { return not_equal(x, y); });
  bind_binary(tensor, "__lt__", nullptr, [](auto&& x, auto&& y) { return less(x, y); });
  bind_binary(tensor, "__le__", nullptr, [](auto&& x, auto&& y) { return less_equal(x, y); });
  bind_binary(tensor, "__gt__", nullptr, [](auto&& x, auto&& y) { return greater(x, y); });
  bind_binary(tensor, "__ge__", nullptr, [](auto&& x, auto&& y) { return greater_equal(x, y); });
  // Reductions over all dimensions, one (an int) or several (a tuple), as methods and functions.
  for (const Reduction& r : reductions()) {
    tensor.def(r.name, [f = r.fn](const Tensor& t, nb::handle dim, bool keepdim) {
      return f(t, dims_of(dim), keepdim);
    }, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
    m.def(r.name, [f = r.fn](const TensorLike& t, nb::handle dim, bool keepdim) {
      return f(t, dims_of(dim), keepdim);
    }, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  }

  m.def("tensor", [](nb::handle data, std::optional<DType> dtype) { return to_tensor(data, dtype); },
        nb::arg("data"), nb::arg("dtype") = nb::none(),
        "A new tensor holding a copy of `data`: a number, a nested list, a NumPy array or any "
        "object NumPy can read. Python floats give float32 and ints int64, as in PyTorch; uint16 "
        "is widened to int32 and uint32 to int64 (kiln has no unsigned types but uint8).");
  m.def("from_numpy", &from_numpy, nb::arg("array"), nb::arg("copy") = nb::none(),
        "A tensor over a C-contiguous NumPy array's memory (as torch.from_numpy): the array stays "
        "alive while kiln needs it, and writing into it changes what unevaluated kiln graphs "
        "read. kiln shares memory that is 64-byte aligned (kiln.empty_aligned makes such "
        "arrays; NumPy's own are 16-byte aligned) and otherwise copies it once; copy=False makes "
        "that an error, copy=True always copies.");
  m.def("from_dlpack", &from_dlpack, nb::arg("source"), nb::arg("copy") = nb::none(),
        "A tensor over the memory of any object with __dlpack__ (NumPy, PyTorch, JAX) in host "
        "memory, C-contiguous; shared where 64-byte aligned (PyTorch's and JAX's CPU arrays "
        "are), as kiln.from_numpy.");
  m.def("empty_aligned", &empty_aligned, nb::arg("shape"), nb::arg("dtype") = "float32",
        "An uninitialised NumPy array whose memory is 64-byte aligned, which kiln.from_numpy "
        "shares without a copy.");
}

}  // namespace kiln::python
