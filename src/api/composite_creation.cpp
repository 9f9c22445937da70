// Creation composites: linspace, eye, randint and bernoulli, from arange, comparisons and
// kiln::uniform (so the random ones are seeded as every other random op).
#include <cmath>
#include <limits>

#include "api/builder.hpp"
#include "api/composite_support.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"

namespace kiln {

Tensor linspace(double start, double end, std::int64_t steps, DType dtype) {
  if (steps < 0)
    detail::fail(ErrorCode::illegal_dimension, "linspace",
                 "negative number of steps " + std::to_string(steps));
  if (steps <= 1) return full({steps}, Scalar(start), dtype);
  // Computed in f64 from both ends (the first half from start, the second from end), so that
  // both end points come out exact and the values are symmetric.
  const double step = (end - start) / static_cast<double>(steps - 1);
  const Tensor i = convert(arange(steps), DType::f64);
  const Tensor from_start = add(mul(i, Scalar(step)), Scalar(start));
  const Tensor from_end = sub(Scalar(end), mul(sub(Scalar(static_cast<double>(steps - 1)), i),
                                               Scalar(step)));
  const Tensor values =
      where(less(i, Scalar(static_cast<double>(steps / 2))), from_start, from_end);
  return dtype == DType::f64 ? values : convert(values, dtype);
}

Tensor linspace(double start, double end, std::int64_t steps) {
  return linspace(start, end, steps, default_dtype());
}

namespace detail {

Tensor arange_between(std::int64_t start, std::int64_t end, std::int64_t step) {
  if (step == 0) fail(ErrorCode::invalid_select, "arange", "step must not be 0");
  // ceil((end - start) / step) in 128 bits: end - start may not fit 64.
  const __int128 span = static_cast<__int128>(end) - start;
  const __int128 n = span / step + ((span % step != 0 && (span > 0) == (step > 0)) ? 1 : 0);
  if (n <= 0) return zeros({0}, DType::i64);
  return add(mul(arange(static_cast<std::int64_t>(n)), Scalar(static_cast<long long>(step))),
             Scalar(static_cast<long long>(start)));
}

Tensor arange_between(double start, double end, double step) {
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step) || step == 0)
    fail(ErrorCode::invalid_select, "arange",
         "needs finite bounds and a non-zero step, got start " + std::to_string(start) +
             ", end " + std::to_string(end) + ", step " + std::to_string(step));
  const double count = std::ceil((end - start) / step);
  if (!(count > 0)) return zeros({0});
  if (count > static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2))
    fail(ErrorCode::invalid_select, "arange", "too many values: " + std::to_string(count));
  const Tensor i = convert(arange(static_cast<std::int64_t>(count)), DType::f64);
  return convert(add(mul(i, Scalar(step)), Scalar(start)), default_dtype());
}

}  // namespace detail

Tensor randn(Shape shape, DType dtype) { return random_normal(std::move(shape), dtype); }
Tensor rand_like(const Tensor& like) { return uniform_like(like); }
Tensor randn_like(const Tensor& like) {
  const detail::NodePtr& n = detail::node_of(like, "randn_like");
  return random_normal(n->shape, n->dtype);
}

Tensor eye(std::int64_t n, std::optional<std::int64_t> m) { return eye(n, m, default_dtype()); }

Tensor eye(std::int64_t n, std::optional<std::int64_t> m, DType dtype) {
  const std::int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0)
    detail::fail(ErrorCode::illegal_dimension, "eye",
                 "negative size " + std::to_string(n) + " x " + std::to_string(cols));
  return convert(equal(arange({n, cols}, 0), arange({n, cols}, 1)), dtype);
}

Tensor randint(std::int64_t low, std::int64_t high, Shape shape, std::uint64_t seed, DType dtype) {
  if (high <= low)
    detail::fail(ErrorCode::invalid_select, "randint",
                 "empty range [" + std::to_string(low) + ", " + std::to_string(high) + ")");
  // The width in unsigned arithmetic (high - low can exceed INT64_MAX).
  const std::uint64_t width = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  if (width > (std::uint64_t{1} << 53))
    detail::fail(ErrorCode::invalid_select, "randint",
                 "range [" + std::to_string(low) + ", " + std::to_string(high) +
                     ") is wider than 2^53 values, more than a double draw can reach");
  const auto w = static_cast<long long>(width);
  // floor(u * width) for u in [0, 1): convert truncates, which is floor for non-negative
  // values; the minimum guards against u * width rounding up to width.
  const Tensor u = uniform(std::move(shape), seed, DType::f64);
  const Tensor k = minimum(convert(mul(u, Scalar(static_cast<double>(width))), DType::i64),
                           Scalar(w - 1));
  const Tensor values = add(k, Scalar(static_cast<long long>(low)));
  return dtype == DType::i64 ? values : convert(values, dtype);
}

Tensor randint(std::int64_t low, std::int64_t high, Shape shape, DType dtype) {
  return randint(low, high, std::move(shape), detail::next_global_seed(), dtype);
}

Tensor bernoulli(const Tensor& p, std::uint64_t seed) {
  detail::node_of(p, "bernoulli");
  if (!is_float(p.dtype()))
    detail::fail(ErrorCode::wrong_type, "bernoulli",
                 std::string("needs float probabilities, got ") + dtype_name(p.dtype()) + " " +
                     shape_to_string(p.shape()));
  // u < p holds with probability p for u uniform in [0, 1); compared in f64 so that an f32 p is
  // not rounded against a coarser u.
  return convert(less(uniform(p.shape(), seed, DType::f64), convert(p, DType::f64)), p.dtype());
}

Tensor bernoulli(const Tensor& p) { return bernoulli(p, detail::next_global_seed()); }

Tensor bernoulli(Shape shape, double p, std::uint64_t seed) {
  if (!(p >= 0.0 && p <= 1.0))
    detail::fail(ErrorCode::invalid_select, "bernoulli",
                 "probability " + std::to_string(p) + " outside [0, 1]");
  return convert(less(uniform(std::move(shape), seed, DType::f64), Scalar(p)), default_dtype());
}

Tensor bernoulli(Shape shape, double p) {
  return bernoulli(std::move(shape), p, detail::next_global_seed());
}

}  // namespace kiln
