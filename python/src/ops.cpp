// kiln's functions for Python: creation, the elementwise, shape and reduction ops, autodiff, and
// the runtime (executors, threads, what this build has).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "kiln/distributed.hpp"
#include "kiln/random.hpp"

namespace kiln::python {

namespace {

std::vector<Tensor> tensors_of(nb::handle sequence) {
  std::vector<Tensor> out;
  for (nb::handle h : sequence) out.push_back(to_tensor(h));
  return out;
}

// kiln.gradient_context(): the forward pass inside it is recorded for gradients. A context
// object per `with`, entered and left on one thread (the mode is per thread, as in C++).
class GradientScope {
 public:
  void enter() {
    if (context_) throw Error(ErrorCode::illegal_derive, "gradient_context: entered twice");
    context_.emplace();
  }
  void exit() { context_.reset(); }

 private:
  std::optional<GradientContext> context_;
};

template <Tensor (*F)(const Tensor&)> void unary(nb::module_& m, const char* name) {
  m.def(name, [](nb::handle x) { return F(to_tensor(x)); }, nb::arg("input"));
}

}  // namespace

void bind_ops(nb::module_& m) {
  // ---- creation ----
  m.def("zeros", [](nb::args shape, DType dtype) { return zeros(shape_of(shape), dtype); },
        nb::arg("shape"), nb::kw_only(), nb::arg("dtype") = DType::f32);
  m.def("ones", [](nb::args shape, DType dtype) { return ones(shape_of(shape), dtype); },
        nb::arg("shape"), nb::kw_only(), nb::arg("dtype") = DType::f32);
  m.def("full", [](nb::handle shape, nb::handle value, std::optional<DType> dtype) {
          auto s = to_scalar(value);
          if (!s) throw nb::type_error("full: the value must be a number");
          const Shape sh = PyLong_Check(shape.ptr()) ? Shape{nb::cast<std::int64_t>(shape)}
                                                      : nb::cast<Shape>(shape);
          return dtype ? full(sh, *s, *dtype) : full(sh, *s);
        }, nb::arg("shape"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none());
  m.def("zeros_like", [](const TensorLike& t) { return zeros_like(t); });
  m.def("ones_like", [](const TensorLike& t) { return ones_like(t); });
  m.def("arange", [](nb::handle a, nb::handle b, nb::handle step, std::optional<DType> dtype) {
          const bool floats = PyFloat_Check(a.ptr()) || PyFloat_Check(b.ptr()) ||
                              PyFloat_Check(step.ptr());
          Tensor t;
          if (floats) {
            const double s = nb::cast<double>(step);
            t = b.is_none() ? detail::arange_between(0.0, nb::cast<double>(a), s)
                            : detail::arange_between(nb::cast<double>(a), nb::cast<double>(b), s);
          } else {
            const auto s = nb::cast<std::int64_t>(step);
            t = b.is_none()
                    ? detail::arange_between(std::int64_t{0}, nb::cast<std::int64_t>(a), s)
                    : detail::arange_between(nb::cast<std::int64_t>(a), nb::cast<std::int64_t>(b), s);
          }
          return dtype ? t.convert(*dtype) : t;
        }, nb::arg("start"), nb::arg("end") = nb::none(), nb::arg("step") = 1,
        nb::kw_only(), nb::arg("dtype") = nb::none(),
        "torch.arange: from start (0 with one argument) up to end, exclusive, every step; "
        "int64 for integers, float32 when any argument is a float.");
  m.def("linspace", [](double a, double b, std::int64_t steps) { return linspace(a, b, steps); });
  m.def("eye", [](std::int64_t n) { return eye(n); });
  m.def("rand", [](nb::args shape, DType dtype) { return uniform(shape_of(shape), dtype); },
        nb::arg("shape"), nb::kw_only(), nb::arg("dtype") = DType::f32,
        "Uniform values in [0, 1) from kiln's generator (kiln.manual_seed).");
  m.def("randn", [](nb::args shape, DType dtype) { return random_normal(shape_of(shape), dtype); },
        nb::arg("shape"), nb::kw_only(), nb::arg("dtype") = DType::f32);
  m.def("randint", [](std::int64_t low, std::int64_t high, Shape shape) {
          return randint(low, high, std::move(shape));
        }, nb::arg("low"), nb::arg("high"), nb::arg("size"));
  m.def("manual_seed", &manual_seed, nb::arg("seed"));

  // ---- elementwise ----
  unary<exp>(m, "exp");
  unary<log>(m, "log");
  unary<sqrt>(m, "sqrt");
  unary<abs>(m, "abs");
  unary<sin>(m, "sin");
  unary<cos>(m, "cos");
  unary<tan>(m, "tan");
  unary<tanh>(m, "tanh");
  unary<sigmoid>(m, "sigmoid");
  unary<relu>(m, "relu");
  unary<neg>(m, "neg");
  unary<square>(m, "square");
  unary<erf>(m, "erf");
  unary<log1p>(m, "log1p");
  unary<isnan>(m, "isnan");
  unary<isfinite>(m, "isfinite");
  unary<kiln::floor>(m, "floor");
  unary<kiln::ceil>(m, "ceil");
  unary<kiln::round>(m, "round");
  unary<kiln::trunc>(m, "trunc");
  m.def("add", [](nb::handle a, nb::handle b) { return add(to_tensor(a), to_tensor(b)); });
  m.def("sub", [](nb::handle a, nb::handle b) { return sub(to_tensor(a), to_tensor(b)); });
  m.def("mul", [](nb::handle a, nb::handle b) { return mul(to_tensor(a), to_tensor(b)); });
  m.def("div", [](nb::handle a, nb::handle b, std::optional<std::string> rounding_mode) {
    return rounding_mode ? div(to_tensor(a), to_tensor(b), *rounding_mode)
                         : div(to_tensor(a), to_tensor(b));
  }, nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none());
  m.def("floor_divide", [](nb::handle a, nb::handle b) {
    return floor_divide(to_tensor(a), to_tensor(b));
  });
  m.def("pow", [](nb::handle a, nb::handle b) { return pow(to_tensor(a), to_tensor(b)); });
  m.def("maximum", [](nb::handle a, nb::handle b) { return maximum(to_tensor(a), to_tensor(b)); });
  m.def("minimum", [](nb::handle a, nb::handle b) { return minimum(to_tensor(a), to_tensor(b)); });
  m.def("atan2", [](nb::handle a, nb::handle b) { return kiln::atan2(to_tensor(a), to_tensor(b)); });
  m.def("fmod", [](nb::handle a, nb::handle b) { return kiln::fmod(to_tensor(a), to_tensor(b)); });
  m.def("remainder",
        [](nb::handle a, nb::handle b) { return kiln::remainder(to_tensor(a), to_tensor(b)); });
  m.def("where", [](nb::handle c, nb::handle a, nb::handle b) {
          return where(to_tensor(c), to_tensor(a), to_tensor(b));
        }, nb::arg("condition"), nb::arg("input"), nb::arg("other"));
  m.def("matmul", [](nb::handle a, nb::handle b) { return matmul_of(to_tensor(a), to_tensor(b)); });
  m.def("softmax", [](nb::handle x, int dim) { return softmax(to_tensor(x), dim); },
        nb::arg("input"), nb::arg("dim"));
  m.def("log_softmax", [](nb::handle x, int dim) { return log_softmax(to_tensor(x), dim); },
        nb::arg("input"), nb::arg("dim"));

  // ---- shapes ----
  m.def("cat", [](nb::handle parts, int dim) { return concat(tensors_of(parts), dim); },
        nb::arg("tensors"), nb::arg("dim") = 0);
  m.attr("concat") = m.attr("cat");
  m.def("stack", [](nb::handle parts, int dim) { return stack(tensors_of(parts), dim); },
        nb::arg("tensors"), nb::arg("dim") = 0);
  m.def("reshape", [](const TensorLike& t, Shape shape) { return reshape(t, std::move(shape)); });
  m.def("transpose", [](const TensorLike& t, int a, int b) { return transpose(t, a, b); });
  m.def("permute", [](const TensorLike& t, std::vector<int> dims) { return permute(t, std::move(dims)); });
  m.def("flatten", [](const TensorLike& t, int start, int end) { return flatten(t, start, end); },
        nb::arg("input"), nb::arg("start_dim") = 0, nb::arg("end_dim") = -1);

  // ---- reductions ----
  m.def("argmax", [](const TensorLike& t, std::optional<int> dim, bool keepdim) {
          return dim ? argmax(t, *dim, keepdim) : argmax(t);
        }, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  m.def("isclose", [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan) {
          const Tensor x = to_tensor(a);
          return isclose(x, to_tensor(b, x.dtype()), rtol, atol, equal_nan);
        }, nb::arg("input"), nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
        nb::arg("equal_nan") = false);
  m.def("allclose", [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan) {
          const Tensor x = to_tensor(a), y = to_tensor(b, x.dtype());
          nb::gil_scoped_release unlocked;
          return allclose(x, y, rtol, atol, equal_nan);
        }, nb::arg("input"), nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
        nb::arg("equal_nan") = false);

  // ---- evaluation and autodiff ----
  m.def("eval_all", [](const std::vector<Tensor>& ts) {
          nb::gil_scoped_release unlocked;
          eval_all(ts);
        }, nb::arg("tensors"),
        "Computes all the tensors in one evaluation, sharing their common nodes.");
  m.def("gradients", [](const Tensor& y, const std::vector<Tensor>& xs) { return gradients(y, xs); },
        nb::arg("output"), nb::arg("variables"),
        "d(output)/d(x) for each watched x, as lazy tensors (the backward pass is itself a "
        "graph); output must have one element and be built inside kiln.gradient_context().");
  nb::class_<GradientScope>(m, "gradient_context",
                            "with kiln.gradient_context(): the graph built inside is recorded "
                            "for gradients (per thread).")
      .def(nb::init<>())
      .def("__enter__", [](GradientScope& s) { s.enter(); return &s; }, nb::rv_policy::reference)
      .def("__exit__", [](GradientScope& s, nb::handle, nb::handle, nb::handle) {
             s.exit();
             return false;
           }, nb::arg().none(), nb::arg().none(), nb::arg().none());
  m.def("in_gradient_context", &in_gradient_context);
}

void bind_runtime(nb::module_& m) {
  m.attr("__version__") = KILN_VERSION_STRING;
  m.def("executors", [] {
          std::vector<std::string> names;
          for (auto& e : executors()) names.emplace_back(e->name());
          return names;
        }, "The executors this machine can run (reference, cpu, and opencl where a device is).");
  m.def("current_executor", [] { return std::string(current_executor()->name()); });
  m.def("set_executor", [](const std::string& name) { set_executor(find_executor(name)); },
        nb::arg("name"));
  m.def("set_float32_matmul_precision",
        [](const std::string& precision) { set_float32_matmul_precision(precision); },
        nb::arg("precision"),
        "torch.set_float32_matmul_precision: highest (exact, the default), high or medium (TF32 "
        "on a CUDA device).");
  m.def("get_float32_matmul_precision", &float32_matmul_precision);
  m.def("num_threads", &num_threads);
  m.def("set_num_threads", &set_num_threads, nb::arg("threads"));
  m.def("build_info", [] {
          nb::dict d;
          d["version"] = KILN_VERSION_STRING;
          d["opencl"] = !opencl_devices().empty();
          d["opencl_devices"] = opencl_devices();
          d["mpi"] = distributed::available();
          d["threads"] = num_threads();
          return d;
        }, "What this build of kiln has: the version, OpenCL devices, MPI, threads.");
}

}  // namespace kiln::python
