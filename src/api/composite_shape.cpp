// Shape composites: stack, split, chunk, unbind, tril/triu, roll, flip, diag, outer. All are views
// (slices, reshapes, pads) of their input except stack and roll (concat) and tril/triu (where).
#include <algorithm>
#include <exception>
#include <limits>

#include "api/builder.hpp"
#include "api/composite_support.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {

void check_defined(const std::vector<Tensor>& ts, std::string_view op) {
  for (const Tensor& t : ts) detail::node_of(t, op);
}

// Keeps element [..., i, j] where keep(j - i) holds, else 0.
template <class Keep>
Tensor triangle(std::string_view op, const Tensor& x, Keep keep) {
  detail::node_of(x, op);
  if (x.rank() < 2)
    detail::fail(ErrorCode::illegal_dimensionality, op,
                 "needs at least 2 dimensions, got " + shape_to_string(x.shape()));
  const std::int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  // j - i for every position of the last two dimensions, i64 so that no size overflows.
  const Tensor offset = sub(arange({rows, cols}, 1), arange({rows, cols}, 0));
  const Tensor mask = detail::broadcast_as(keep(offset), x.shape());
  return where(mask, x, zeros({}, x.dtype()));
}

}  // namespace

Tensor stack(const std::vector<Tensor>& tensors, int dim) {
  check_defined(tensors, "stack");
  if (tensors.empty())
    detail::fail(ErrorCode::illegal_dimensionality, "stack", "needs at least one tensor");
  const Shape& first = tensors[0].shape();
  for (const Tensor& t : tensors)
    if (t.shape() != first)
      detail::fail(ErrorCode::incompatible_shapes, "stack",
                   "all tensors need one shape, got " + shape_to_string(first) + " and " +
                       shape_to_string(t.shape()));
  const int rank = static_cast<int>(first.size());
  const int d = detail::normalize_axis("stack", dim, rank + 1, first);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(unsqueeze(t, d));
  return parts.size() == 1 ? parts[0] : concat(parts, d);
}

std::vector<Tensor> split(const Tensor& x, std::vector<std::int64_t> sizes, int dim) {
  detail::node_of(x, "split");
  if (x.rank() == 0)
    detail::fail(ErrorCode::illegal_dimensionality, "split", "cannot split a 0-d tensor");
  const int d = detail::normalize_axis("split", dim, x.rank(), x.shape());
  const std::int64_t n = x.shape()[d];
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    if (s < 0 || s > n - total)  // checked piece by piece: no overflow of the total
      detail::fail(ErrorCode::invalid_select, "split",
                   "sizes do not add up to " + std::to_string(n) + " (dimension " +
                       std::to_string(d) + " of " + shape_to_string(x.shape()) + ")");
    total += s;
  }
  if (total != n)
    detail::fail(ErrorCode::invalid_select, "split",
                 "sizes add up to " + std::to_string(total) + ", not to " + std::to_string(n) +
                     " (dimension " + std::to_string(d) + " of " + shape_to_string(x.shape()) +
                     ")");
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  std::int64_t start = 0;
  for (std::int64_t s : sizes) {
    out.push_back(slice_axis(x, d, start, start + s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, int dim) {
  detail::node_of(x, "split");
  if (x.rank() == 0)
    detail::fail(ErrorCode::illegal_dimensionality, "split", "cannot split a 0-d tensor");
  const int d = detail::normalize_axis("split", dim, x.rank(), x.shape());
  const std::int64_t n = x.shape()[d];
  if (split_size < 0 || (split_size == 0 && n != 0))
    detail::fail(ErrorCode::invalid_select, "split",
                 "split size " + std::to_string(split_size) + " for dimension " +
                     std::to_string(d) + " of " + shape_to_string(x.shape()));
  if (n == 0) return {x};  // one empty piece, as libtorch
  std::vector<std::int64_t> sizes;
  for (std::int64_t start = 0; start < n; start += std::min(split_size, n - start))
    sizes.push_back(std::min(split_size, n - start));
  return split(x, std::move(sizes), d);
}

std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, int dim) {
  detail::node_of(x, "chunk");
  if (chunks <= 0)
    detail::fail(ErrorCode::invalid_select, "chunk",
                 "needs a positive number of chunks, got " + std::to_string(chunks));
  if (x.rank() == 0)
    detail::fail(ErrorCode::illegal_dimensionality, "chunk", "cannot chunk a 0-d tensor");
  const int d = detail::normalize_axis("chunk", dim, x.rank(), x.shape());
  const std::int64_t n = x.shape()[d];
  if (n == 0) {  // `chunks` empty pieces, as libtorch
    std::vector<std::int64_t> sizes;
    try {
      sizes.resize(static_cast<std::size_t>(chunks), 0);
    } catch (const std::exception&) {  // bad_alloc or length_error: more pieces than memory
      detail::fail(ErrorCode::out_of_memory, "chunk",
                   "no memory for " + std::to_string(chunks) + " empty pieces of " +
                       shape_to_string(x.shape()));
    }
    return split(x, std::move(sizes), d);
  }
  const std::int64_t size = n / chunks + (n % chunks != 0);  // ceil without overflow
  return split(x, size, d);
}

std::vector<Tensor> unbind(const Tensor& x, int dim) {
  detail::node_of(x, "unbind");
  if (x.rank() == 0)
    detail::fail(ErrorCode::illegal_dimensionality, "unbind", "cannot unbind a 0-d tensor");
  const int d = detail::normalize_axis("unbind", dim, x.rank(), x.shape());
  std::vector<Tensor> out;
  out.reserve(static_cast<std::size_t>(x.shape()[d]));
  for (std::int64_t i = 0; i < x.shape()[d]; ++i)
    out.push_back(squeeze(slice_axis(x, d, i, i + 1), d));
  return out;
}

Tensor tril(const Tensor& x, std::int64_t diagonal) {
  return triangle("tril", x, [&](const Tensor& offset) {
    return less_equal(offset, Scalar(static_cast<long long>(diagonal)));
  });
}

Tensor triu(const Tensor& x, std::int64_t diagonal) {
  return triangle("triu", x, [&](const Tensor& offset) {
    return greater_equal(offset, Scalar(static_cast<long long>(diagonal)));
  });
}

Tensor roll(const Tensor& x, std::vector<std::int64_t> shifts, std::vector<int> dims) {
  detail::node_of(x, "roll");
  if (dims.empty()) {
    if (shifts.size() != 1)
      detail::fail(ErrorCode::illegal_dimensionality, "roll",
                   "without dims needs exactly one shift, got " + std::to_string(shifts.size()));
    return reshape(roll(flatten(x), shifts, {0}), x.shape());
  }
  if (shifts.size() != dims.size())
    detail::fail(ErrorCode::illegal_dimensionality, "roll",
                 std::to_string(shifts.size()) + " shifts for " + std::to_string(dims.size()) +
                     " dims");
  Tensor t = x;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int d = detail::normalize_axis("roll", dims[i], x.rank(), x.shape());
    const std::int64_t n = x.shape()[d];
    if (n == 0) continue;
    const std::int64_t s = ((shifts[i] % n) + n) % n;  // in [0, n): no overflow for any shift
    if (s == 0) continue;
    // The last s elements move to the front.
    t = concat(slice_axis(t, d, n - s, n), slice_axis(t, d, 0, n - s), d);
  }
  return t;
}

Tensor flip(const Tensor& x, std::vector<int> dims) {
  detail::node_of(x, "flip");
  const int rank = x.rank();
  for (int& d : dims) d = detail::normalize_axis("flip", d, rank, x.shape());
  std::vector<int> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    detail::fail(ErrorCode::illegal_dimension, "flip",
                 "a dimension appears twice for shape " + shape_to_string(x.shape()));
  if (dims.empty()) return x;
  std::vector<std::int64_t> start(rank, 0), stop(x.shape().begin(), x.shape().end()),
      step(rank, 1);
  for (int d : dims) {
    // From the last element backwards past the first: a stop of -(n + 1) is position -1.
    start[d] = x.shape()[d] - 1;
    stop[d] = -x.shape()[d] - 1;
    step[d] = -1;
  }
  return slice(x, start, stop, step);
}

Tensor diag(const Tensor& x, std::int64_t diagonal) {
  detail::node_of(x, "diag");
  // Offsets beyond any tensor's size are refused before they can overflow the arithmetic below.
  constexpr std::int64_t limit = std::int64_t{1} << 31;
  if (diagonal <= -limit || diagonal >= limit)
    detail::fail(ErrorCode::illegal_dimension, "diag",
                 "diagonal " + std::to_string(diagonal) + " is out of range");
  const std::int64_t k = diagonal < 0 ? -diagonal : diagonal;
  if (x.rank() == 1) {
    const std::int64_t n = x.shape()[0];
    const std::int64_t m = n + k;
    if (m >= limit)
      detail::fail(ErrorCode::out_of_memory, "diag",
                   "a matrix of " + std::to_string(m) + " x " + std::to_string(m) +
                       " is too large");
    // Row-major, the matrix is v[0], m zeros, v[1], m zeros, ... starting at the diagonal's
    // first position: each v[i] followed by m zeros, flattened, shifted, cut to m * m.
    const std::int64_t first = diagonal >= 0 ? k : k * m;
    const Tensor spaced = flatten(pad(reshape(x, {n, 1}), {0, 0}, {0, m}));
    const std::int64_t have = first + n * (m + 1);
    const Tensor line = pad(spaced, {first}, {std::max<std::int64_t>(0, m * m - have)});
    return reshape(slice_axis(line, 0, 0, m * m), {m, m});
  }
  if (x.rank() == 2) {
    const std::int64_t rows = x.shape()[0], cols = x.shape()[1];
    // Elements (i, i + diagonal) lie cols + 1 apart in the row-major order.
    const std::int64_t count =
        diagonal >= 0 ? std::max<std::int64_t>(0, std::min(rows, cols - diagonal))
                      : std::max<std::int64_t>(0, std::min(rows + diagonal, cols));
    const Tensor line = flatten(x);
    if (count == 0) return slice_axis(line, 0, 0, 0);
    const std::int64_t first = diagonal >= 0 ? diagonal : k * cols;
    return slice_axis(line, 0, first, first + (count - 1) * (cols + 1) + 1, cols + 1);
  }
  detail::fail(ErrorCode::illegal_dimensionality, "diag",
               "needs a 1-D or 2-D tensor, got " + shape_to_string(x.shape()));
}

Tensor outer(const Tensor& a, const Tensor& b) {
  detail::node_of(a, "outer");
  detail::node_of(b, "outer");
  if (a.rank() != 1 || b.rank() != 1)
    detail::fail(ErrorCode::illegal_dimensionality, "outer",
                 "needs two 1-D tensors, got " + shape_to_string(a.shape()) + " and " +
                     shape_to_string(b.shape()));
  const Shape shape{a.shape()[0], b.shape()[0]};
  return mul(broadcast_to(reshape(a, {shape[0], 1}), shape),
             broadcast_to(reshape(b, {1, shape[1]}), shape));
}

}  // namespace kiln
