// interpolate (NCHW, nearest and bilinear) as index_select along H and W with weights: the source
// positions depend only on the sizes, so they are computed here, and the gradient with respect to
// the input comes from index_select's (a scatter-add) and the products'.
#include <algorithm>
#include <cmath>

#include "api/builder.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {

constexpr std::string_view kOp = "interpolate";

// libtorch's nearest source index: floor(i * in / out) with the scale in float, at most in - 1.
std::vector<std::int64_t> nearest_indices(std::int64_t in, std::int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(out));
  for (std::int64_t i = 0; i < out; ++i)
    idx[static_cast<std::size_t>(i)] = std::min(
        static_cast<std::int64_t>(std::floor(static_cast<float>(i) * scale)), in - 1);
  return idx;
}

// The two source indices and their weights for each output position along one dimension, with
// the source position computed in A (float for f32 input, double for f64, as libtorch).
struct Taps {
  std::vector<std::int64_t> lo, hi;
  std::vector<double> w_lo, w_hi;
};
template <class A> Taps linear_taps(std::int64_t in, std::int64_t out, bool align_corners) {
  Taps t;
  const A scale = align_corners ? (out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0))
                                : static_cast<A>(in) / static_cast<A>(out);
  for (std::int64_t i = 0; i < out; ++i) {
    A src = align_corners ? scale * static_cast<A>(i)
                          : scale * (static_cast<A>(i) + A(0.5)) - A(0.5);
    if (src < A(0)) src = A(0);
    const auto lo = std::min(static_cast<std::int64_t>(src), in - 1);
    const std::int64_t hi = lo < in - 1 ? lo + 1 : lo;
    const A lambda = src - static_cast<A>(lo);
    t.lo.push_back(lo);
    t.hi.push_back(hi);
    t.w_lo.push_back(static_cast<double>(A(1) - lambda));
    t.w_hi.push_back(static_cast<double>(lambda));
  }
  return t;
}

// Weights of `axis` (2 or 3 of a 4-D tensor) shaped to broadcast against it from the right.
Tensor weights(const std::vector<double>& w, int axis, DType dtype) {
  const auto n = static_cast<std::int64_t>(w.size());
  const Tensor t = convert(Tensor::from(w), dtype);
  return axis == 2 ? reshape(t, {n, 1}) : t;
}

Tensor resample_linear(const Tensor& x, int axis, std::int64_t out, bool align_corners) {
  const std::int64_t in = x.shape()[axis];
  const Taps taps = x.dtype() == DType::f32 ? linear_taps<float>(in, out, align_corners)
                                            : linear_taps<double>(in, out, align_corners);
  const Tensor a = index_select(x, axis, Tensor::from(taps.lo));
  const Tensor b = index_select(x, axis, Tensor::from(taps.hi));
  return a * weights(taps.w_lo, axis, x.dtype()) + b * weights(taps.w_hi, axis, x.dtype());
}

}  // namespace

Tensor interpolate(const Tensor& x, Shape size, InterpolateMode mode, bool align_corners) {
  detail::node_of(x, kOp);
  if (x.rank() != 4)
    detail::fail(ErrorCode::illegal_dimensionality, kOp,
                 "needs an [N, C, H, W] tensor, got " + shape_to_string(x.shape()));
  if (size.size() != 2)
    detail::fail(ErrorCode::illegal_dimensionality, kOp,
                 "needs an output size {H, W}, got " + shape_to_string(size));
  if (size[0] <= 0 || size[1] <= 0)
    detail::fail(ErrorCode::illegal_dimension, kOp,
                 "output size " + shape_to_string(size) + " must be positive");
  if (x.shape()[2] <= 0 || x.shape()[3] <= 0)
    detail::fail(ErrorCode::incompatible_shapes, kOp,
                 "input " + shape_to_string(x.shape()) + " has no pixels to interpolate from");
  switch (mode) {
    case InterpolateMode::nearest: {
      if (align_corners)
        detail::fail(ErrorCode::invalid_select, kOp,
                     "align_corners applies to bilinear interpolation only");
      const Tensor rows =
          index_select(x, 2, Tensor::from(nearest_indices(x.shape()[2], size[0])));
      return index_select(rows, 3, Tensor::from(nearest_indices(x.shape()[3], size[1])));
    }
    case InterpolateMode::bilinear: {
      if (!is_float(x.dtype()))
        detail::fail(ErrorCode::wrong_type, kOp,
                     std::string("bilinear interpolation needs a float tensor, got ") +
                         dtype_name(x.dtype()) + " " + shape_to_string(x.shape()));
      return resample_linear(resample_linear(x, 2, size[0], align_corners), 3, size[1],
                             align_corners);
    }
  }
  detail::fail(ErrorCode::invalid_select, kOp, "unknown interpolation mode");
}

}  // namespace kiln
