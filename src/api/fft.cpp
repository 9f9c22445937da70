// The discrete Fourier transform along one dimension, as libtorch's torch::fft: fft and ifft of
// any tensor (real ones become complex), rfft of real tensors (the n/2 + 1 non-redundant
// outputs) and irfft, its inverse. One fft node computes the transform, forward or inverse
// (spectral_kernels.cpp); the length changes, the normalisation and rfft/irfft's halves are
// views and elementwise ops around it, so their gradients come from those ops' rules.
#include <cmath>
#include <optional>
#include <string_view>

#include "api/builder.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {

// The transform's scale for a norm: "backward" (none forward, 1/n inverse), "forward" (1/n
// forward, none inverse) or "ortho" (1/sqrt(n) both ways), on top of the fft node's own 1/n for
// the inverse.
double extra_scale(std::string_view op, std::string_view norm, std::int64_t n, bool inverse) {
  const auto len = static_cast<double>(n);
  if (norm == "backward") return 1.0;
  if (norm == "forward") return inverse ? len : 1.0 / len;
  if (norm == "ortho") return inverse ? std::sqrt(len) : 1.0 / std::sqrt(len);
  detail::fail(ErrorCode::invalid_select, op,
               "norm \"" + std::string(norm) + "\" is not one of backward, forward, ortho");
}

// x with dimension `dim` cut or zero-padded to n.
Tensor resized(std::string_view op, const Tensor& x, int dim, std::int64_t n) {
  if (n < 1)
    detail::fail(ErrorCode::invalid_select, op,
                 "needs n >= 1 points along dim " + std::to_string(dim) + ", got " +
                     std::to_string(n) + " for shape " + shape_to_string(x.shape()));
  const std::int64_t len = x.shape()[static_cast<std::size_t>(dim)];
  if (n == len) return x;
  if (n < len) return slice_axis(x, dim, 0, n);
  std::vector<std::int64_t> before(static_cast<std::size_t>(x.rank()), 0), after = before;
  after[static_cast<std::size_t>(dim)] = n - len;
  return pad(x, before, after, 0);
}

int transform_dim(std::string_view op, const Tensor& x, int dim) {
  detail::node_of(x, op);
  if (x.rank() == 0)
    detail::fail(ErrorCode::illegal_dimensionality, op,
                 "needs at least one dimension, got a 0-d " + std::string(dtype_name(x.dtype())) +
                     " tensor");
  return detail::normalize_axis(op, dim, x.rank(), x.shape());
}

Tensor transform(std::string_view op, const Tensor& x, std::optional<std::int64_t> n, int dim,
                 std::string_view norm, bool inverse) {
  const int ax = transform_dim(op, x, dim);
  const Tensor input = resized(op, is_bool(x.dtype()) ? convert(x, default_dtype()) : x, ax,
                               n.value_or(x.shape()[static_cast<std::size_t>(ax)]));
  const std::int64_t len = input.shape()[static_cast<std::size_t>(ax)];
  const double scale = extra_scale(op, norm, len, inverse);
  detail::Attrs attrs;
  attrs.axes = {ax};
  attrs.inverse = inverse;
  const Tensor y =
      detail::make_node(detail::Op::fft, detail::result_type(detail::Op::fft, input.dtype()),
                        input.shape(), {input.node()}, std::move(attrs));
  return scale == 1.0 ? y : y * scale;
}

}  // namespace

Tensor fft(const Tensor& x, std::optional<std::int64_t> n, int dim, std::string_view norm) {
  return transform("fft", x, n, dim, norm, false);
}

Tensor ifft(const Tensor& x, std::optional<std::int64_t> n, int dim, std::string_view norm) {
  return transform("ifft", x, n, dim, norm, true);
}

Tensor rfft(const Tensor& x, std::optional<std::int64_t> n, int dim, std::string_view norm) {
  const int ax = transform_dim("rfft", x, dim);
  if (is_complex(x.dtype()))
    detail::fail(ErrorCode::wrong_type, "rfft",
                 "needs a real tensor, got " + std::string(dtype_name(x.dtype())) +
                     shape_to_string(x.shape()) + " (fft transforms complex ones)");
  const Tensor full = transform("rfft", x, n, ax, norm, false);
  return slice_axis(full, ax, 0, full.shape()[static_cast<std::size_t>(ax)] / 2 + 1);
}

// The Hermitian spectrum of length n that the n/2 + 1 given values start: X[k] for k <= n/2,
// conj(X[n - k]) above; the real part of its inverse is the signal (imaginary parts that a real
// signal cannot have, as in X[0], drop out there).
Tensor irfft(const Tensor& x, std::optional<std::int64_t> n, int dim, std::string_view norm) {
  const int ax = transform_dim("irfft", x, dim);
  const std::int64_t m = x.shape()[static_cast<std::size_t>(ax)];
  const std::int64_t len = n.value_or(2 * (m - 1));
  const std::int64_t kept = len / 2 + 1;
  const Tensor half = resized("irfft", x, ax, kept);
  const Tensor tail = conj(slice_axis(half, ax, len - kept, 0, -1));
  const Tensor full = len - kept > 0 ? concat({half, tail}, ax) : half;
  return real(transform("irfft", full, std::nullopt, ax, norm, true));
}

}  // namespace kiln
