// Random tensors and random transformations, each with its seed fixed at build time.
#include <cmath>
#include <numbers>
#include <new>
#include <numeric>

#include "api/builder.hpp"
#include "api/flint_rules.hpp"
#include "exec/reference_kernels.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"

namespace kiln {

namespace {
// A seed for a second stream derived from the first.
std::uint64_t derived(std::uint64_t seed, std::uint64_t salt) {
  return static_cast<std::uint64_t>(detail::uniform_value(seed, salt) * 0x1.0p53) ^ (salt << 53);
}
std::uint64_t fresh_seed() { return detail::next_global_seed(); }
}  // namespace

Tensor random_normal(Shape shape, std::uint64_t seed, DType dtype) {
  if (!is_float(dtype))
    detail::fail(ErrorCode::wrong_type, "random_normal",
                 std::string("needs a float type, got ") + dtype_name(dtype));
  // Box-Muller: 1 - u lies in (0, 1], so the logarithm is finite.
  const Tensor u = uniform(shape, derived(seed, 1), DType::f64);
  const Tensor v = uniform(shape, derived(seed, 2), DType::f64);
  const Tensor z = sqrt(-2.0 * log(1.0 - u)) * cos((2.0 * std::numbers::pi) * v);
  return dtype == DType::f64 ? z : convert(z, dtype);
}

Tensor random_normal(Shape shape, DType dtype) {
  return random_normal(std::move(shape), fresh_seed(), dtype);
}
Tensor random_normal(Shape shape, std::uint64_t seed) {
  return random_normal(std::move(shape), seed, default_dtype());
}
Tensor random_normal(Shape shape) { return random_normal(std::move(shape), default_dtype()); }

Tensor permutate(const Tensor& a, int axis, std::uint64_t seed) {
  detail::node_of(a, "permutate");
  const int ax = detail::normalize_axis("permutate", axis, a.rank(), a.shape());
  // Nothing to reorder: no order table, however long the axis (an empty tensor's other sizes
  // may be huge).
  if (a.numel() == 0) return a;
  const std::int64_t n = a.shape()[ax];
  // Fisher-Yates driven by the counter-based generator, so the order depends only on the seed.
  std::vector<std::int64_t> order;
  try {
    order.resize(static_cast<std::size_t>(n));
  } catch (const std::bad_alloc&) {  // a broadcast view can be longer than any memory
    detail::fail(ErrorCode::out_of_memory, "permutate",
                 "no memory for an order of " + std::to_string(n) + " positions of " +
                     shape_to_string(a.shape()));
  }
  std::iota(order.begin(), order.end(), 0);
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(
        detail::uniform_value(seed, static_cast<std::uint64_t>(i)) * static_cast<double>(i + 1));
    std::swap(order[i], order[std::min(j, i)]);
  }
  return index_select(a, ax, Tensor::from(order));
}

Tensor permutate(const Tensor& a, int axis) { return permutate(a, axis, fresh_seed()); }

namespace {
Tensor dropped(const Tensor& a, double p, std::uint64_t seed, const char* op) {
  detail::node_of(a, op);
  if (!(p >= 0.0 && p <= 1.0))
    detail::fail(ErrorCode::invalid_select, op,
                 "probability " + std::to_string(p) + " outside [0, 1]");
  const Tensor keep = greater_equal(uniform(a.shape(), seed, DType::f64), scalar(p, DType::f64));
  return where(keep, a, zeros({}, a.dtype()));
}
}  // namespace

Tensor dropout(const Tensor& a, double p, std::uint64_t seed) {
  const Tensor kept = dropped(a, p, seed, "dropout");
  return p == 0.0 || p == 1.0 ? kept : kept * (1.0 / (1.0 - p));
}

Tensor dropout(const Tensor& a, double p) { return dropout(a, p, fresh_seed()); }

Tensor detail::flint_dropout(const Tensor& a, double p) {
  return dropped(a, p, fresh_seed(), "fdropout");
}


namespace {
// multinomial's weights must be non-negative and finite, with a positive sum in each row: values
// that are read, so the weights are evaluated when the sampler is built (as PyTorch checks them).
void check_weights(const Tensor& rows) {
  const std::vector<double> w = rows.to_vector<double>();
  const std::int64_t k = rows.shape()[1];
  for (std::size_t r = 0; r * static_cast<std::size_t>(k) < w.size(); ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      const double v = w[r * static_cast<std::size_t>(k) + static_cast<std::size_t>(j)];
      if (!std::isfinite(v) || v < 0)
        detail::fail(ErrorCode::invalid_select, "multinomial",
                     "weights " + shape_to_string(rows.shape()) + " hold " + std::to_string(v) +
                         " in row " + std::to_string(r) + " (they must be finite and >= 0)");
      sum += v;
    }
    if (sum <= 0)
      detail::fail(ErrorCode::invalid_select, "multinomial",
                   "row " + std::to_string(r) + " of the weights " +
                       shape_to_string(rows.shape()) + " sums to 0");
  }
}
}  // namespace

Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement,
                   std::uint64_t seed) {
  detail::node_of(probs, "multinomial");
  if (probs.rank() != 1 && probs.rank() != 2)
    detail::fail(ErrorCode::illegal_dimensionality, "multinomial",
                 "weights must be [K] or [N, K], got " + shape_to_string(probs.shape()));
  if (!is_float(probs.dtype()))
    detail::fail(ErrorCode::wrong_type, "multinomial",
                 std::string("weights must be floating, got ") + dtype_name(probs.dtype()));
  const Tensor rows = probs.rank() == 1 ? probs.unsqueeze(0) : probs;
  const std::int64_t n = rows.shape()[0], k = rows.shape()[1];
  if (k == 0 || num_samples <= 0 || (!replacement && num_samples > k))
    detail::fail(ErrorCode::invalid_select, "multinomial",
                 "cannot draw " + std::to_string(num_samples) + " samples " +
                     (replacement ? "with" : "without") + " replacement from " +
                     std::to_string(k) + " categories");
  check_weights(rows);
  const Tensor w = convert(rows, DType::f64);
  Tensor drawn;
  if (replacement) {
    // Inverse transform: a uniform u picks the category whose interval of the cumulative weights
    // holds it. Dividing by the last cumulative weight makes it exactly 1, so u < 1 never passes
    // the last category of positive weight, and categories of weight 0 have empty intervals.
    const Tensor cumulative = cumsum(w, 1);
    const Tensor cdf = (cumulative / cumulative.slice({0, k - 1}, {n, k})).unsqueeze(1);
    const Tensor u = uniform({n, num_samples, 1}, seed, DType::f64);
    drawn = sum(convert(cdf <= u, DType::i64), {2});
  } else {
    // Gumbel top-k: the k largest of log(w) + Gumbel noise are a draw without replacement in
    // proportion to the weights; categories of weight 0 (log 0 = -inf) come after all others.
    const Tensor u = uniform({n, k}, seed, DType::f64);
    drawn = topk(log(w) - log(-log(u)), num_samples, 1).indices;
  }
  return probs.rank() == 1 ? drawn.squeeze(0) : drawn;
}

Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement) {
  return multinomial(probs, num_samples, replacement, fresh_seed());
}

}  // namespace kiln
