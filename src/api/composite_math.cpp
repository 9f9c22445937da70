// Elementwise and reduction composites: masked_fill, clamp/clip, isnan/isinf/isfinite, nan_to_num,
// the logical ops, any/all, var/std, norm and logsumexp over several dimensions, polar.
#include <algorithm>
#include <cmath>
#include <limits>

#include "api/builder.hpp"
#include "api/composite_support.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/ops.hpp"

namespace kiln {

using detail::typed;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Reductions of integer tensors are computed in the default float type, as kiln's mean.
Tensor as_float(const Tensor& x) { return detail::float_operand(x); }

// i32 0/1: non-zero (NaN included) is true.
Tensor truth(const Tensor& x) {
  return is_bool(x.dtype()) ? x : not_equal(x, typed(0, x.dtype()));
}

// |x|^2, real: x^2 for real x, re^2 + im^2 for complex x (var, std and norm of complex tensors
// are real, as libtorch's).
Tensor squared_magnitude(const Tensor& x) {
  return is_complex(x.dtype()) ? square(real(x)) + square(imag(x)) : square(x);
}

// Both operands broadcast normally to their common shape.
std::pair<Tensor, Tensor> aligned(std::string_view op, const Tensor& a, const Tensor& b) {
  detail::node_of(a, op);
  detail::node_of(b, op);
  const Shape shape = detail::broadcast_shapes(op, a.shape(), b.shape());
  return {detail::broadcast_as(a, shape), detail::broadcast_as(b, shape)};
}

// Number of elements over `dims` (already normalised) of `shape`.
std::int64_t reduced_count(const Shape& shape, const std::vector<int>& dims) {
  std::int64_t n = 1;
  for (int d : dims) n *= shape[d];
  return n;
}

// root(s) for a sum s >= 0 of powers, with root(0) = 0 and a gradient of 0 there (as libtorch's
// norm) instead of inf * 0 = NaN: the root never sees the 0 (it is given 1 there), so neither
// its value nor its gradient at 0 reaches the result. NaN and inf pass through.
template <class Root> Tensor root_of_sum(const Tensor& s, Root root) {
  const Tensor is_zero = equal(s, typed(0, s.dtype()));
  const Tensor safe = where(is_zero, ones({}, s.dtype()), s);
  return where(is_zero, zeros({}, s.dtype()), root(safe));
}

}  // namespace

// ---- elementwise --------------------------------------------------------------------------------

Tensor polar(const Tensor& abs, const Tensor& angle) {
  return complex(abs * cos(angle), abs * sin(angle));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  detail::node_of(x, "masked_fill");
  detail::node_of(mask, "masked_fill");
  if (detail::broadcast_shapes("masked_fill", mask.shape(), x.shape()) != x.shape())
    detail::fail(ErrorCode::incompatible_shapes, "masked_fill",
                 "mask " + shape_to_string(mask.shape()) + " does not broadcast to " +
                     shape_to_string(x.shape()));
  detail::fitting_value("masked_fill", value, x.dtype());
  return where(detail::broadcast_as(mask, x.shape()), full({}, value, x.dtype()), x);
}

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  detail::node_of(x, "clamp");
  if (!lo && !hi)
    detail::fail(ErrorCode::invalid_select, "clamp", "needs a min or a max bound");
  const DType t = x.dtype();
  // A bound beyond an 8- or 16-bit type's range bounds nothing there (libtorch's clamp).
  return clamp(x, lo ? full({}, detail::saturated_to(*lo, t), t) : Tensor(),
               hi ? full({}, detail::saturated_to(*hi, t), t) : Tensor());
}

Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  detail::node_of(x, "clamp");
  if (!lo.defined() && !hi.defined())
    detail::fail(ErrorCode::invalid_select, "clamp", "needs a min or a max bound");
  Shape shape = x.shape();
  if (lo.defined()) shape = detail::broadcast_shapes("clamp", shape, lo.shape());
  if (hi.defined()) shape = detail::broadcast_shapes("clamp", shape, hi.shape());
  // Selections rather than minimum/maximum: the gradient then reaches x on the whole closed
  // interval (minimum/maximum would share it at a tie), NaN in x stays NaN, and min > max gives
  // max everywhere, all as libtorch.
  Tensor r = detail::broadcast_as(x, shape);
  if (lo.defined()) {
    const Tensor l = detail::broadcast_as(lo, shape);
    r = where(less(r, l), l, r);
  }
  if (hi.defined()) {
    const Tensor h = detail::broadcast_as(hi, shape);
    r = where(greater(r, h), h, r);
  }
  return r;
}

Tensor clip(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return clamp(x, lo, hi);
}
Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi) { return clamp(x, lo, hi); }

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  detail::node_of(a, "isclose");
  detail::node_of(b, "isclose");
  if (!(rtol >= 0) || !(atol >= 0))
    detail::fail(ErrorCode::invalid_select, "isclose", "rtol and atol must be 0 or more");
  if (a.dtype() != b.dtype())
    detail::fail(ErrorCode::wrong_type, "isclose",
                 std::string("needs one dtype, got ") + dtype_name(a.dtype()) + " " +
                     shape_to_string(a.shape()) + " and " + dtype_name(b.dtype()) + " " +
                     shape_to_string(b.shape()));
  if (!is_inexact(a.dtype()) && a.dtype() != DType::boolean) {
    // Integers: compared in f64, as PyTorch compares them exactly within the tolerances.
    return isclose(convert(a, DType::f64), convert(b, DType::f64), rtol, atol, equal_nan);
  }
  if (a.dtype() == DType::boolean) return equal(a, b);
  return detail::as_called("isclose", {&a, &b}, [&] {
    const Tensor within = less_equal(abs(sub(a, b)), add(mul(abs(b), Scalar(rtol)), Scalar(atol)));
    Tensor close = logical_or(equal(a, b), logical_and(within, isfinite(sub(a, b))));
    if (equal_nan) close = logical_or(close, logical_and(isnan(a), isnan(b)));
    return close;
  });
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return detail::as_called("allclose", {&a, &b},
                           [&] { return all(isclose(a, b, rtol, atol, equal_nan)).item<bool>(); });
}

Tensor isnan(const Tensor& x) {
  detail::node_of(x, "isnan");
  return not_equal(x, x);  // only NaN differs from itself; integers give 0
}

Tensor isinf(const Tensor& x) {
  detail::node_of(x, "isinf");
  if (is_complex(x.dtype())) return logical_or(isinf(real(x)), isinf(imag(x)));
  if (!is_float(x.dtype())) return zeros(x.shape(), DType::boolean);
  return equal(abs(x), typed(kInf, x.dtype()));
}

Tensor isfinite(const Tensor& x) {
  detail::node_of(x, "isfinite");
  if (is_complex(x.dtype())) return logical_and(isfinite(real(x)), isfinite(imag(x)));
  if (!is_float(x.dtype())) return ones(x.shape(), DType::boolean);
  return less(abs(x), typed(kInf, x.dtype()));  // false for inf and NaN
}

Tensor nan_to_num(const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  detail::node_of(x, "nan_to_num");
  const DType t = x.dtype();
  if (is_complex(t))  // each part on its own, as libtorch
    return complex(nan_to_num(real(x), nan, posinf, neginf),
                   nan_to_num(imag(x), nan, posinf, neginf));
  if (!is_float(t)) return x;
  // The type's largest finite value.
  const double big = t == DType::f32    ? std::numeric_limits<float>::max()
                     : t == DType::f16  ? 65504.0
                     : t == DType::bf16 ? 0x1.fep127
                                        : std::numeric_limits<double>::max();
  const Tensor nan_value = full({}, typed(nan.value_or(0.0), t), t);
  const Tensor pos_value = full({}, typed(posinf.value_or(big), t), t);
  const Tensor neg_value = full({}, typed(neginf.value_or(-big), t), t);
  Tensor r = where(equal(x, typed(kInf, t)), pos_value, x);
  r = where(equal(x, typed(-kInf, t)), neg_value, r);
  return where(not_equal(x, x), nan_value, r);
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  auto [x, y] = aligned("logical_and", a, b);
  return mul(truth(x), truth(y));
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  auto [x, y] = aligned("logical_or", a, b);
  return maximum(truth(x), truth(y));
}

Tensor logical_xor(const Tensor& a, const Tensor& b) {
  auto [x, y] = aligned("logical_xor", a, b);
  return not_equal(truth(x), truth(y));
}

Tensor logical_not(const Tensor& x) {
  detail::node_of(x, "logical_not");
  return equal(x, typed(0, x.dtype()));
}

// ---- any / all ----------------------------------------------------------------------------------
// Counted in i64 (no overflow for any size): any = at least one non-zero, all = no zero. Sums
// rather than max/min because an empty tensor has no max (any of nothing is 0, all of it 1).

Tensor any(const Tensor& x) {
  detail::node_of(x, "any");
  return greater(sum(convert(truth(x), DType::i64)), Scalar(0LL));
}

Tensor all(const Tensor& x) {
  detail::node_of(x, "all");
  return equal(sum(convert(logical_not(x), DType::i64)), Scalar(0LL));
}

Tensor any(const Tensor& x, int dim, bool keepdim) {
  detail::node_of(x, "any");
  const int d = detail::normalize_axis("any", dim, x.rank(), x.shape());
  return greater(sum(convert(truth(x), DType::i64), {d}, keepdim), Scalar(0LL));
}

Tensor all(const Tensor& x, int dim, bool keepdim) {
  detail::node_of(x, "all");
  const int d = detail::normalize_axis("all", dim, x.rank(), x.shape());
  return equal(sum(convert(logical_not(x), DType::i64), {d}, keepdim), Scalar(0LL));
}

// ---- var / std ----------------------------------------------------------------------------------

Tensor var(const Tensor& x, std::vector<int> dims, std::int64_t correction, bool keepdim) {
  detail::node_of(x, "var");
  dims = detail::reduction_dims("var", std::move(dims), x.shape());
  const Tensor v = as_float(x);
  const std::int64_t n = reduced_count(x.shape(), dims);
  // Two passes (deviations from the mean) rather than E[x^2] - E[x]^2, which cancels badly.
  const Tensor deviation = v - mean(v, dims, true);
  const double divisor = static_cast<double>(std::max<std::int64_t>(0, n - correction));
  return div(sum(squared_magnitude(deviation), dims, keepdim),
             typed(divisor, real_type(v.dtype())));
}

Tensor std(const Tensor& x, std::vector<int> dims, std::int64_t correction, bool keepdim) {
  detail::node_of(x, "std");
  return detail::as_called("std", {&x},
                           [&] { return sqrt(var(x, std::move(dims), correction, keepdim)); });
}

// ---- norm ---------------------------------------------------------------------------------------

Tensor norm(const Tensor& x, double p, std::vector<int> dims, bool keepdim) {
  detail::node_of(x, "norm");
  dims = detail::reduction_dims("norm", std::move(dims), x.shape());
  const Tensor v = as_float(x);
  const DType t = real_type(v.dtype());
  if (p == kInf || p == -kInf) {
    // max/min of nothing is undefined; libtorch refuses it too.
    if (reduced_count(x.shape(), dims) == 0)
      detail::fail(ErrorCode::incompatible_shapes, "norm",
                   "an infinity norm over no elements of " + shape_to_string(x.shape()));
    return p > 0 ? max(abs(v), dims, keepdim) : min(abs(v), dims, keepdim);
  }
  if (p == 0) return sum(convert(truth(v), t), dims, keepdim);
  if (p == 2 && is_complex(v.dtype()))
    return root_of_sum(sum(squared_magnitude(v), dims, keepdim),
                       [](const Tensor& s) { return sqrt(s); });
  if (p == 1) return sum(abs(v), dims, keepdim);
  if (p == 2)
    return root_of_sum(sum(square(v), dims, keepdim), [](const Tensor& s) { return sqrt(s); });
  if (p > 0 && std::isfinite(p))
    return root_of_sum(sum(pow(abs(v), typed(p, t)), dims, keepdim),
                       [&](const Tensor& s) { return pow(s, typed(1.0 / p, t)); });
  detail::fail(ErrorCode::invalid_select, "norm",
               "unsupported order p = " + std::to_string(p) +
                   " (0, positive values and +-INFINITY are supported)");
}

Tensor norm(const Tensor& x, std::string_view p, std::vector<int> dims, bool keepdim) {
  detail::node_of(x, "norm");
  if (p != "fro")
    detail::fail(ErrorCode::invalid_select, "norm",
                 "unsupported order \"" + std::string(p) + "\" (only \"fro\")");
  return norm(x, 2.0, std::move(dims), keepdim);
}

Tensor normalize(const Tensor& x, double p, int dim, double eps) {
  detail::node_of(x, "normalize");
  return detail::as_called("normalize", {&x}, [&] {
    const Tensor v = as_float(x);
    return v / clamp(norm(v, p, {dim}, true), Scalar(eps), std::nullopt);
  });
}

Tensor cosine_similarity(const Tensor& a, const Tensor& b, int dim, double eps) {
  detail::node_of(a, "cosine_similarity");
  detail::node_of(b, "cosine_similarity");
  return detail::as_called("cosine_similarity", {&a, &b}, [&] {
    const Tensor x = as_float(a), y = as_float(b);
    const Shape shape = (x * y).shape();  // checks that they broadcast (the node is not evaluated)
    const Tensor xs = broadcast_to(x, shape), ys = broadcast_to(y, shape);
    return sum(normalize(xs, 2, dim, eps) * normalize(ys, 2, dim, eps), {dim});
  });
}

// ---- logsumexp ----------------------------------------------------------------------------------

Tensor logsumexp(const Tensor& x, std::vector<int> dims, bool keepdim) {
  detail::node_of(x, "logsumexp");
  dims = detail::reduction_dims("logsumexp", std::move(dims), x.shape());
  const Tensor v = as_float(x);
  Shape shape;  // without the reduced dimensions
  for (int d = 0; d < x.rank(); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d)) shape.push_back(x.shape()[d]);
  Tensor r;
  if (reduced_count(x.shape(), dims) == 0) {
    r = log(sum(exp(v), dims, true));  // no maximum to shift by; the empty sum gives -inf
  } else {
    // Shifted by the maximum; an infinite maximum is replaced by 0 so that rows of -inf (sum 0,
    // log -inf) and rows holding +inf (log inf = inf) come out right instead of NaN. The
    // shift's own gradient cancels: +1 through `+ m` and -sum(softmax) = -1 through `v - m`.
    const Tensor m = max(v, dims, true);
    const Tensor shift = where(less(abs(m), typed(kInf, v.dtype())), m, zeros({}, v.dtype()));
    r = log(sum(exp(v - shift), dims, true)) + shift;
  }
  return keepdim ? r : reshape(r, shape);
}

}  // namespace kiln
