// The rest of kiln's ops for Python, as functions (kiln.sort(x)) and, where PyTorch has one, as
// methods (x.sort()): data-dependent ops (sorting, gathering, scattering, selecting), scans,
// libtorch's everyday ops, the Fourier transforms and linear algebra (kiln.linalg).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "kiln/indexing.hpp"
#include "kiln/linalg.hpp"

namespace kiln::python {

namespace {

nb::tuple pair_of(const ValuesIndices& r) { return nb::make_tuple(r.values, r.indices); }

// Binds `fn` as kiln.<name>(input, ...) and as Tensor.<name>(...), with the same arguments.
template <class F, class... Extra>
void both(nb::module_& m, nb::class_<Tensor>& tensor, const char* name, F fn, const char* doc,
          const Extra&... args) {
  m.def(name, fn, nb::arg("input"), args..., doc);
  tensor.def(name, fn, args..., doc);
}

}  // namespace

void bind_more_ops(nb::module_& m) {
  auto tensor = nb::borrow<nb::class_<Tensor>>(m.attr("Tensor"));

  // ---- sorting and selecting ----
  both(m, tensor, "sort", [](const TensorLike& x, int dim, bool descending) {
         return pair_of(sort(x, dim, descending));
       }, "(values, indices) along dim; stable; NaN sorts last.", nb::arg("dim") = -1,
       nb::arg("descending") = false);
  both(m, tensor, "argsort", [](const TensorLike& x, int dim, bool descending) {
         return argsort(x, dim, descending);
       }, "The indices that sort x along dim.", nb::arg("dim") = -1, nb::arg("descending") = false);
  both(m, tensor, "topk", [](const TensorLike& x, std::int64_t k, int dim, bool largest, bool sorted) {
         return pair_of(topk(x, k, dim, largest, sorted));
       }, "(values, indices) of the k largest (or smallest) along dim.", nb::arg("k"),
       nb::arg("dim") = -1, nb::arg("largest") = true, nb::arg("sorted") = true);
  both(m, tensor, "gather", [](const TensorLike& x, int dim, nb::handle index) {
         return gather(x, dim, to_tensor(index));
       }, "out[i][j] = x[index[i][j]][j] for dim 0, and so on (PyTorch's gather).", nb::arg("dim"),
       nb::arg("index"));
  both(m, tensor, "scatter_add", [](const TensorLike& x, int dim, nb::handle index, nb::handle src) {
         return scatter_add(x, dim, to_tensor(index), to_tensor(src));
       }, "x with src added at index along dim (a new tensor).", nb::arg("dim"), nb::arg("index"),
       nb::arg("src"));
  both(m, tensor, "index_select", [](const TensorLike& x, int dim, nb::handle index) {
         return index_select(x, dim, to_tensor(index));
       }, "The slices of x at index along dim.", nb::arg("dim"), nb::arg("index"));
  both(m, tensor, "masked_select", [](const TensorLike& x, nb::handle mask) {
         return masked_select(x, to_tensor(mask));
       }, "The elements of x where mask is true, in order (1-D).", nb::arg("mask"));
  both(m, tensor, "nonzero", [](const TensorLike& x) { return nonzero(x); },
       "The indices of x's non-zero elements, [count, x.ndim] (int64).");
  m.def("one_hot", [](nb::handle labels, std::int64_t classes, DType dtype) {
          return one_hot(to_tensor(labels), classes, dtype);
        }, nb::arg("labels"), nb::arg("num_classes"), nb::arg("dtype") = DType::f32);

  // ---- scans and everyday ops ----
  both(m, tensor, "cumsum", [](const TensorLike& x, int dim) { return cumsum(x, dim); },
       "Running sums along dim.", nb::arg("dim"));
  both(m, tensor, "cumprod", [](const TensorLike& x, int dim) { return cumprod(x, dim); },
       "Running products along dim.", nb::arg("dim"));
  both(m, tensor, "tril", [](const TensorLike& x, std::int64_t d) { return tril(x, d); },
       "The lower triangle (below diagonal d) of the last two dimensions.", nb::arg("diagonal") = 0);
  both(m, tensor, "triu", [](const TensorLike& x, std::int64_t d) { return triu(x, d); },
       "The upper triangle.", nb::arg("diagonal") = 0);
  both(m, tensor, "flip", [](const TensorLike& x, std::vector<int> dims) { return flip(x, std::move(dims)); },
       "x reversed along dims.", nb::arg("dims"));
  both(m, tensor, "roll", [](const TensorLike& x, nb::handle shifts, nb::handle dims) {
         std::vector<std::int64_t> s = PyLong_Check(shifts.ptr())
                                           ? std::vector<std::int64_t>{nb::cast<std::int64_t>(shifts)}
                                           : nb::cast<std::vector<std::int64_t>>(shifts);
         return roll(x, std::move(s), dims_of(dims));
       }, "x shifted cyclically along dims (all dimensions, flattened, without dims).",
       nb::arg("shifts"), nb::arg("dims") = nb::none());
  both(m, tensor, "repeat", [](const TensorLike& x, std::vector<std::int64_t> reps) {
         return repeat(x, std::move(reps));
       }, "x tiled reps[i] times along dimension i.", nb::arg("repeats"));
  both(m, tensor, "norm", [](const TensorLike& x, double p, nb::handle dim, bool keepdim) {
         return norm(x, p, dims_of(dim), keepdim);
       }, "The p-norm over dim (all dimensions by default).", nb::arg("p") = 2.0,
       nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  both(m, tensor, "logsumexp", [](const TensorLike& x, nb::handle dim, bool keepdim) {
         return logsumexp(x, dims_of(dim), keepdim);
       }, "log(sum(exp(x))) over dim, computed stably.", nb::arg("dim"),
       nb::arg("keepdim") = false);
  both(m, tensor, "isinf", [](const TensorLike& x) { return isinf(x); }, "Where x is infinite.");
  m.def("outer", [](nb::handle a, nb::handle b) { return outer(to_tensor(a), to_tensor(b)); });
  m.def("einsum", [](const std::string& equation, nb::args operands) {
          std::vector<Tensor> ts;
          for (nb::handle h : operands) ts.push_back(to_tensor(h));
          return einsum(equation, ts);
        }, nb::arg("equation"), nb::arg("operands"), "Einstein summation, as torch.einsum.");
  m.def("clamp", [](nb::handle x, std::optional<double> lo, std::optional<double> hi) {
          return clamp(to_tensor(x), lo ? std::optional<Scalar>(Scalar(*lo)) : std::nullopt,
                       hi ? std::optional<Scalar>(Scalar(*hi)) : std::nullopt);
        }, nb::arg("input"), nb::arg("min") = nb::none(), nb::arg("max") = nb::none());
  m.def("logical_and", [](nb::handle a, nb::handle b) { return logical_and(to_tensor(a), to_tensor(b)); });
  m.def("logical_or", [](nb::handle a, nb::handle b) { return logical_or(to_tensor(a), to_tensor(b)); });
  m.def("logical_not", [](nb::handle a) { return logical_not(to_tensor(a)); });
  m.def("std", [](const TensorLike& t, nb::handle dim, std::int64_t correction, bool keepdim) {
          return kiln::std(t, dims_of(dim), correction, keepdim);
        }, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("correction") = 1,
        nb::arg("keepdim") = false);
  m.def("var", [](const TensorLike& t, nb::handle dim, std::int64_t correction, bool keepdim) {
          return var(t, dims_of(dim), correction, keepdim);
        }, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("correction") = 1,
        nb::arg("keepdim") = false);

  // ---- complex values and the Fourier transforms (kiln.fft) ----
  m.def("real", [](const TensorLike& t) { return real(t); });
  m.def("imag", [](const TensorLike& t) { return imag(t); });
  m.def("conj", [](const TensorLike& t) { return conj(t); });
  m.def("angle", [](const TensorLike& t) { return angle(t); });
  m.def("complex", [](nb::handle re, nb::handle im) { return complex(to_tensor(re), to_tensor(im)); },
        nb::arg("real"), nb::arg("imag"));
  nb::module_ fft = m.def_submodule("fft", "kiln.fft: discrete Fourier transforms (as torch.fft)");
  using Transform = Tensor (*)(const Tensor&, std::optional<std::int64_t>, int, std::string_view);
  for (auto [name, transform] : {std::pair<const char*, Transform>{"fft", &kiln::fft},
                                 {"ifft", &ifft}, {"rfft", &rfft}, {"irfft", &irfft}})
    fft.def(name, [transform](const TensorLike& x, std::optional<std::int64_t> n, int dim,
                              const std::string& norm) { return transform(x, n, dim, norm); },
            nb::arg("input"), nb::arg("n") = nb::none(), nb::arg("dim") = -1,
            nb::arg("norm") = "backward");

  // ---- linear algebra (kiln.linalg, through LAPACK) ----
  nb::module_ linalg = m.def_submodule("linalg", "kiln.linalg: linear algebra (as torch.linalg)");
  linalg.def("solve", [](nb::handle a, nb::handle b) { return solve(to_tensor(a), to_tensor(b)); },
             nb::arg("A"), nb::arg("B"));
  linalg.def("inv", [](nb::handle a) { return inv(to_tensor(a)); }, nb::arg("A"));
  linalg.def("det", [](nb::handle a) { return det(to_tensor(a)); }, nb::arg("A"));
  linalg.def("cholesky", [](nb::handle a) { return cholesky(to_tensor(a)); }, nb::arg("A"));
  linalg.def("lstsq", [](nb::handle a, nb::handle b) { return lstsq(to_tensor(a), to_tensor(b)); },
             nb::arg("A"), nb::arg("B"));
  linalg.def("qr", [](nb::handle a) {
               QR r = qr(to_tensor(a));
               return nb::make_tuple(r.q, r.r);
             }, nb::arg("A"), "(Q, R), reduced.");
  linalg.def("svd", [](nb::handle a) {
               SVD r = svd(to_tensor(a));
               return nb::make_tuple(r.u, r.s, r.vh);
             }, nb::arg("A"), "(U, S, Vh), reduced.");
  linalg.def("eigh", [](nb::handle a) {
               Eigh r = eigh(to_tensor(a));
               return nb::make_tuple(r.eigenvalues, r.eigenvectors);
             }, nb::arg("A"), "(eigenvalues ascending, eigenvectors) of a symmetric matrix.");
}

}  // namespace kiln::python
