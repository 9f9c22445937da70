// Sliding windows, convolution and pooling, all built on the `windows` view (an index map, so
// a window tensor copies nothing) and, for convolutions, one matmul.
#include <limits>

#include "api/builder.hpp"
#include "api/window_views.hpp"
#include "graph/shape_math.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/ops.hpp"
#include "kiln/windows.hpp"

namespace kiln {

using detail::Op;
using I64s = std::vector<std::int64_t>;

namespace {

std::int64_t product(std::string_view op, const Shape& s) {
  return detail::value_or_fail(detail::checked_numel(s), ErrorCode::out_of_memory, op,
                               [&] { return "shape " + shape_to_string(s) + " is too large"; });
}

Shape window_counts(std::string_view op, const Shape& shape, const Shape& window, const I64s& step,
                    const I64s& dilation) {
  Shape counts(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (window[d] < 1 || step[d] < 1 || dilation[d] < 1)
      detail::fail(ErrorCode::invalid_select, op,
                   "window " + shape_to_string(window) + ", steps and dilations must be positive");
    const detail::Checked extent =
        detail::checked_add(detail::checked_mul(window[d] - 1, dilation[d]), 1);
    // An empty dimension has no windows of one element (a batch of 0 images to pool).
    if (shape[d] == 0 && extent == 1) {
      counts[d] = 0;
      continue;
    }
    if (!extent || *extent > shape[d])
      detail::fail(ErrorCode::invalid_select, op,
                   "window " + shape_to_string(window) + " does not fit into " +
                       shape_to_string(shape) + " in dimension " + std::to_string(d));
    counts[d] = (shape[d] - *extent) / step[d] + 1;
  }
  return counts;
}

}  // namespace

Tensor detail::window_view(std::string_view op, const Tensor& a, Shape window, I64s step,
                           I64s dilation) {
  detail::node_of(a, op);
  detail::check_arity(op, window.size(), a.shape(), "window");
  detail::check_arity(op, step.size(), a.shape(), "steps");
  const Shape counts = window_counts(op, a.shape(), window, step, dilation);
  Shape shape = counts;
  shape.insert(shape.end(), window.begin(), window.end());
  detail::Attrs attrs;
  attrs.window = window;
  attrs.step = step;
  attrs.dilation = dilation;
  return detail::make_view(Op::windows, a, std::move(shape), std::move(attrs),
                           [&](const detail::ViewMap& m) {
                             return m.windows(window, step, dilation, counts);
                           });
}

Tensor detail::unwindow(const Tensor& w, Shape shape, I64s step, I64s dilation) {
  const std::size_t rank = shape.size();
  detail::Attrs attrs;
  attrs.window.assign(w.shape().begin() + static_cast<std::ptrdiff_t>(rank), w.shape().end());
  attrs.step = std::move(step);
  attrs.dilation = std::move(dilation);
  return detail::make_node(Op::unwindow, w.dtype(), std::move(shape), {w.node()},
                           std::move(attrs));
}

namespace {

// Windows over every dimension but the last, each taking the whole last dimension, flattened:
// [counts of the leading dimensions..., window elements].
Tensor leading_windows(std::string_view op, const Tensor& a, Shape window, I64s steps) {
  detail::node_of(a, op);
  if (a.rank() < 1)
    detail::fail(ErrorCode::illegal_dimensionality, op, "needs at least one dimension");
  if (window.size() + 1 != a.shape().size() || steps.size() + 1 != a.shape().size())
    detail::fail(ErrorCode::illegal_dimensionality, op,
                 "window and steps need " + std::to_string(a.rank() - 1) + " entries for " +
                     shape_to_string(a.shape()));
  window.push_back(a.shape().back());
  steps.push_back(1);
  Tensor w = detail::window_view(op, a, window, steps, I64s(window.size(), 1));
  Shape flat(w.shape().begin(), w.shape().begin() + a.rank() - 1);
  flat.push_back(product(op, window));
  return reshape(w, flat);
}

}  // namespace

Tensor sliding_window(const Tensor& a, I64s size, I64s steps) {
  detail::node_of(a, "sliding_window");
  const I64s ones(size.size(), 1);
  Tensor w = detail::window_view("sliding_window", a, size, std::move(steps), ones);
  Shape flat{product("sliding_window", Shape(w.shape().begin(), w.shape().begin() + a.rank()))};
  flat.insert(flat.end(), size.begin(), size.end());
  return reshape(w, flat);
}

Tensor unslide_window(const Tensor& windows, Shape shape, I64s steps) {
  detail::node_of(windows, "unslide_window");
  if (windows.rank() != static_cast<int>(shape.size()) + 1 || steps.size() != shape.size())
    detail::fail(ErrorCode::illegal_dimensionality, "unslide_window",
                 "windows " + shape_to_string(windows.shape()) + " do not match shape " +
                     shape_to_string(shape) + " with " + std::to_string(steps.size()) + " steps");
  const Shape window(windows.shape().begin() + 1, windows.shape().end());
  const I64s ones(shape.size(), 1);
  Shape counts = window_counts("unslide_window", shape, window, steps, ones);
  const detail::Checked fitting = detail::checked_numel(counts);
  if (fitting != windows.shape()[0])
    detail::fail(ErrorCode::incompatible_shapes, "unslide_window",
                 std::to_string(windows.shape()[0]) + " windows given, " +
                     shape_to_string(shape) + " has " +
                     (fitting ? std::to_string(*fitting) : "too many"));
  counts.insert(counts.end(), window.begin(), window.end());
  return detail::unwindow(reshape(windows, counts), std::move(shape), std::move(steps), ones);
}

Tensor convolve(const Tensor& a, const Tensor& kernel, I64s steps) {
  detail::node_of(a, "convolve");
  detail::node_of(kernel, "convolve");
  const int n = a.rank();
  const bool filters = kernel.rank() == n + 1;
  if (n < 1 || (kernel.rank() != n && !filters))
    detail::fail(ErrorCode::illegal_dimensionality, "convolve",
                 "kernel " + shape_to_string(kernel.shape()) + " needs " + std::to_string(n) +
                     " or " + std::to_string(n + 1) + " dimensions for input " +
                     shape_to_string(a.shape()));
  const Shape window(kernel.shape().begin() + (filters ? 1 : 0), kernel.shape().end());
  if (window.back() != a.shape().back())
    detail::fail(ErrorCode::incompatible_shapes, "convolve",
                 "last dimensions of " + shape_to_string(a.shape()) + " and kernel " +
                     shape_to_string(kernel.shape()) + " differ");
  const Tensor patches = leading_windows("convolve", a, Shape(window.begin(), window.end() - 1),
                                         std::move(steps));
  const std::int64_t k = product("convolve", window);
  const std::int64_t f = filters ? kernel.shape()[0] : 1;
  Shape counts(patches.shape().begin(), patches.shape().end() - 1);
  const Tensor rows = reshape(patches, {-1, k});
  const Tensor out = matmul(rows, transpose(reshape(kernel, {f, k}), 0, 1));
  if (filters) counts.push_back(f);
  return reshape(out, counts);
}

Tensor pooling_sum(const Tensor& a, I64s window, I64s steps) {
  return sum(leading_windows("pooling_sum", a, std::move(window), std::move(steps)), {-1});
}

Tensor pooling_max(const Tensor& a, I64s window, I64s steps) {
  return max(leading_windows("pooling_max", a, std::move(window), std::move(steps)), {-1});
}

namespace {

// [N, C, H, W] (a [C, H, W] input gets N = 1, dropped again by the caller).
Tensor batched(std::string_view op, const Tensor& x) {
  detail::node_of(x, op);
  if (x.rank() == 3) return unsqueeze(x, 0);
  if (x.rank() != 4)
    detail::fail(ErrorCode::illegal_dimensionality, op,
                 "needs an input [N, C, H, W] or [C, H, W], got " + shape_to_string(x.shape()));
  return x;
}

void check_2d(std::string_view op, const std::array<std::int64_t, 2>& stride,
              const std::array<std::int64_t, 2>& padding,
              const std::array<std::int64_t, 2>& dilation) {
  for (int i = 0; i < 2; ++i)
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
      detail::fail(ErrorCode::invalid_select, op,
                   "stride and dilation must be positive and padding not negative");
}

// [N, C, oH, oW, 1, 1, kH, kW]: the windows of a padded [N, C, H, W] input, as a view (the
// window axes stay separate so that a reduction over them reads the view directly).
Tensor pool_windows(std::string_view op, const Tensor& x, std::array<std::int64_t, 2> kernel,
                    const Pool2dOptions& o, Scalar fill) {
  std::array<std::int64_t, 2> stride = o.stride;
  if (stride[0] == 0 && stride[1] == 0) stride = kernel;
  check_2d(op, stride, o.padding, o.dilation);
  const bool padded = o.padding[0] != 0 || o.padding[1] != 0;
  const Tensor source =
      padded ? pad(x, {0, 0, o.padding[0], o.padding[1]}, {0, 0, o.padding[0], o.padding[1]}, fill)
             : x;
  return detail::window_view(op, source, {1, 1, kernel[0], kernel[1]},
                             {1, 1, stride[0], stride[1]}, {1, 1, o.dilation[0], o.dilation[1]});
}

}  // namespace

namespace {
detail::Attrs window2d_attrs(const std::array<std::int64_t, 2>& stride,
                             const std::array<std::int64_t, 2>& padding,
                             const std::array<std::int64_t, 2>& dilation) {
  detail::Attrs a;
  a.step = {stride[0], stride[1]};
  a.padding = {padding[0], padding[1]};
  a.dilation = {dilation[0], dilation[1]};
  return a;
}

// Output size of a dimension of size n: floor((n + 2p - extent) / s) + 1 windows.
std::int64_t windows_along(std::string_view op, std::int64_t n, std::int64_t k, std::int64_t s,
                           std::int64_t p, std::int64_t d, const Shape& input) {
  const detail::Checked extent =
      k < 1 ? std::nullopt : detail::checked_add(detail::checked_mul(k - 1, d), 1);
  const detail::Checked padded = detail::checked_add(n, detail::checked_mul(2, p));
  if (!extent || !padded || *padded < *extent)
    detail::fail(ErrorCode::invalid_select, op,
                 "window " + std::to_string(k) + " (dilation " + std::to_string(d) +
                     ", padding " + std::to_string(p) + ") does not fit the padded input " +
                     shape_to_string(input));
  return (*padded - *extent) / s + 1;
}
}  // namespace

Tensor detail::window2d_node(Op op, Shape shape, const Tensor& a, const Tensor& b,
                             const Attrs& attrs) {
  const DType t = b.defined() ? promote(a.dtype(), b.dtype()) : a.dtype();
  std::vector<NodePtr> inputs{a.node()};
  if (b.defined()) inputs.push_back(b.node());
  return make_node(op, t, std::move(shape), std::move(inputs), attrs);
}

namespace {

// The filters' blocks of a grouped convolution: `one(x_i, w_i)` for each block i of the input's
// channels (dimension 1) and of the weight's first dimension, joined along the channels.
template <class One>
Tensor per_group(const Tensor& x, const Tensor& w, std::int64_t groups, One one) {
  if (groups == 1) return one(x, w);
  const std::vector<Tensor> xs = chunk(x, groups, 1);
  const std::vector<Tensor> ws = chunk(w, groups, 0);
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) parts.push_back(one(xs[i], ws[i]));
  return concat(parts, 1);
}

// Both operands in their common floating type.
std::pair<Tensor, Tensor> float_operands(std::string_view op, const Tensor& x, const Tensor& w) {
  const DType t = promote(x.dtype(), w.dtype());
  if (!is_float(t))
    detail::fail(ErrorCode::wrong_type, op,
                 std::string("needs float tensors, got ") + dtype_name(x.dtype()) + " and " +
                     dtype_name(w.dtype()));
  return {x.dtype() == t ? x : convert(x, t), w.dtype() == t ? w : convert(w, t)};
}

Tensor add_channel_bias(std::string_view op, const Tensor& out, const Tensor& bias) {
  if (!bias.defined()) return out;
  const std::int64_t channels = out.shape()[1];
  if (bias.shape() != Shape{channels})
    detail::fail(ErrorCode::incompatible_shapes, op,
                 "bias " + shape_to_string(bias.shape()) + " for " + std::to_string(channels) +
                     " output channels");
  Shape per_channel(out.shape().size() - 1, 1);
  per_channel[0] = channels;
  return out + reshape(bias, per_channel);
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Conv2dOptions o) {
  const Tensor batch = batched("conv2d", input);
  detail::node_of(weight, "conv2d");
  check_2d("conv2d", o.stride, o.padding, o.dilation);
  const Shape& ws = weight.shape();
  const std::int64_t channels = batch.shape()[1];
  if (o.groups < 1 || (o.groups > 1 && o.groups > channels) || channels % o.groups != 0 ||
      ws.size() != 4 || ws[1] != channels / o.groups || ws[0] % o.groups != 0)
    detail::fail(ErrorCode::incompatible_shapes, "conv2d",
                 "weight " + shape_to_string(ws) + " does not fit input " +
                     shape_to_string(input.shape()) + " with " + std::to_string(o.groups) +
                     " group(s) (weight [O, C / groups, kH, kW] expected, O and C divisible by "
                     "groups)");
  const auto [x, w] = float_operands("conv2d", batch, weight);
  const Shape& xs = x.shape();
  const std::int64_t oh =
      windows_along("conv2d", xs[2], ws[2], o.stride[0], o.padding[0], o.dilation[0], xs);
  const std::int64_t ow =
      windows_along("conv2d", xs[3], ws[3], o.stride[1], o.padding[1], o.dilation[1], xs);
  const detail::Attrs attrs = window2d_attrs(o.stride, o.padding, o.dilation);
  const Tensor out = per_group(x, w, o.groups, [&](const Tensor& xi, const Tensor& wi) {
    return detail::window2d_node(Op::conv2d, {xs[0], wi.shape()[0], oh, ow}, xi, wi, attrs);
  });
  const Tensor biased = add_channel_bias("conv2d", out, bias);
  return input.rank() == 3 ? squeeze(biased, 0) : biased;
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        ConvTranspose2dOptions o) {
  constexpr std::string_view op = "conv_transpose2d";
  const Tensor batch = batched(op, input);
  detail::node_of(weight, op);
  check_2d(op, o.stride, o.padding, o.dilation);
  for (int i = 0; i < 2; ++i)
    if (o.output_padding[i] < 0 || o.output_padding[i] >= o.stride[i])
      detail::fail(ErrorCode::invalid_select, op,
                   "output_padding must be at least 0 and smaller than the stride");
  const Shape& ws = weight.shape();
  const std::int64_t channels = batch.shape()[1];
  if (o.groups < 1 || (o.groups > 1 && o.groups > channels) || channels % o.groups != 0 ||
      ws.size() != 4 || ws[0] != channels || ws[2] < 1 || ws[3] < 1 ||
      !detail::checked_mul(ws[1], o.groups))
    detail::fail(ErrorCode::incompatible_shapes, op,
                 "weight " + shape_to_string(ws) + " does not fit input " +
                     shape_to_string(input.shape()) + " with " + std::to_string(o.groups) +
                     " group(s) (weight [Cin, Cout / groups, kH, kW] expected, Cin divisible by "
                     "groups)");
  const auto [x, w] = float_operands(op, batch, weight);
  const Shape& xs = x.shape();
  // The size whose conv2d windows are the input's positions (output_padding < stride keeps the
  // windows' count at the input's size).
  Shape out_shape{xs[0], ws[1] * o.groups, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const detail::Checked size = detail::checked_add(
        detail::checked_sub(
            detail::checked_add(detail::checked_mul(xs[2 + i] - 1, o.stride[i]),
                                detail::checked_mul(ws[2 + i] - 1, o.dilation[i])),
            detail::checked_mul(2, o.padding[i])),
        o.output_padding[i] + 1);
    if (!size || *size < 1)
      detail::fail(ErrorCode::invalid_select, op,
                   "input " + shape_to_string(input.shape()) + " with weight " +
                       shape_to_string(ws) + " and padding " + std::to_string(o.padding[i]) +
                       " leaves no output");
    out_shape[2 + i] = *size;
  }
  const detail::Attrs attrs = window2d_attrs(o.stride, o.padding, o.dilation);
  const Tensor out = per_group(x, w, o.groups, [&](const Tensor& xi, const Tensor& wi) {
    Shape part = out_shape;
    part[1] = wi.shape()[1];
    return detail::window2d_node(Op::conv2d_grad_input, part, xi, wi, attrs);
  });
  const Tensor biased = add_channel_bias(op, out, bias);
  return input.rank() == 3 ? squeeze(biased, 0) : biased;
}

Tensor max_pool2d(const Tensor& input, std::array<std::int64_t, 2> kernel, Pool2dOptions o) {
  const Tensor x = batched("max_pool2d", input);
  std::array<std::int64_t, 2> stride = o.stride;
  if (stride[0] == 0 && stride[1] == 0) stride = kernel;
  check_2d("max_pool2d", stride, o.padding, o.dilation);
  const Shape& xs = x.shape();
  const std::int64_t oh =
      windows_along("max_pool2d", xs[2], kernel[0], stride[0], o.padding[0], o.dilation[0], xs);
  const std::int64_t ow =
      windows_along("max_pool2d", xs[3], kernel[1], stride[1], o.padding[1], o.dilation[1], xs);
  detail::Attrs attrs = window2d_attrs(stride, o.padding, o.dilation);
  attrs.window = {kernel[0], kernel[1]};
  const Tensor out = detail::window2d_node(Op::max_pool2d, {xs[0], xs[1], oh, ow}, x, Tensor(),
                                           attrs);
  return input.rank() == 3 ? squeeze(out, 0) : out;
}

Tensor avg_pool2d(const Tensor& input, std::array<std::int64_t, 2> kernel, Pool2dOptions o) {
  const Tensor x = batched("avg_pool2d", input);
  const Tensor out = mean(pool_windows("avg_pool2d", x, kernel, o, 0), {4, 5, 6, 7});
  return input.rank() == 3 ? squeeze(out, 0) : out;
}

namespace {

// The [out, in] matrix whose row i averages the inputs of adaptive window i.
Tensor adaptive_weights(std::int64_t in, std::int64_t out, DType dtype) {
  std::vector<double> w(static_cast<std::size_t>(in * out), 0.0);
  for (std::int64_t i = 0; i < out; ++i) {
    const std::int64_t start = i * in / out;
    const std::int64_t stop = ((i + 1) * in + out - 1) / out;
    for (std::int64_t j = start; j < stop; ++j)
      w[static_cast<std::size_t>(i * in + j)] = 1.0 / static_cast<double>(stop - start);
  }
  return convert(Tensor::from(w, {out, in}), dtype);
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& input, std::array<std::int64_t, 2> output_size) {
  const Tensor x = batched("adaptive_avg_pool2d", input);
  if (!is_float(x.dtype()))
    detail::fail(ErrorCode::wrong_type, "adaptive_avg_pool2d",
                 std::string("needs a float input, got ") + dtype_name(x.dtype()));
  const std::int64_t h = x.size(2), w = x.size(3);
  const auto [oh, ow] = output_size;
  if (oh < 1 || ow < 1)
    detail::fail(ErrorCode::illegal_dimension, "adaptive_avg_pool2d",
                 "output size {" + std::to_string(oh) + ", " + std::to_string(ow) +
                     "} must be positive, for input " + shape_to_string(input.shape()));
  if (h == 0 || w == 0)
    detail::fail(ErrorCode::illegal_dimension, "adaptive_avg_pool2d",
                 "input " + shape_to_string(input.shape()) + " has no rows or columns to average");
  Tensor out;
  if (h % oh == 0 && w % ow == 0) {
    out = avg_pool2d(x, {h / oh, w / ow});
  } else {
    // Overlapping windows of different sizes: one averaging matrix per axis.
    out = matmul(matmul(adaptive_weights(h, oh, x.dtype()), x),
                 transpose(adaptive_weights(w, ow, x.dtype()), 0, 1));
  }
  return input.rank() == 3 ? squeeze(out, 0) : out;
}

}  // namespace kiln
