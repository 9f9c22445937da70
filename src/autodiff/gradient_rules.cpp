#include "autodiff/gradient_rules.hpp"

#include <cmath>
#include <limits>
#include <numbers>

#include "api/builder.hpp"
#include "api/window_views.hpp"
#include "graph/custom_kernel.hpp"
#include "kiln/custom.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"
#include "kiln/windows.hpp"

namespace kiln::detail {

namespace {

using I64s = std::vector<std::int64_t>;

Tensor input(const Tensor& node, std::size_t i) { return Tensor(node.node()->inputs[i]); }

Tensor c(double v, const Tensor& like) {  // a constant in the float type of `like`
  return full({}, v, is_float(like.dtype()) ? like.dtype() : DType::f64);
}

// Sums `g` down to `shape`, undoing a broadcast aligned at the right (normal) or left (inverse).
Tensor unbroadcast(const Tensor& g, const Shape& shape, bool inverse) {
  const int extra = g.rank() - static_cast<int>(shape.size());
  const int lead = inverse ? 0 : extra;
  std::vector<int> axes;
  for (int d = 0; d < g.rank(); ++d) {
    const int s = d - lead;
    if (s < 0 || s >= static_cast<int>(shape.size()) || (shape[s] == 1 && g.shape()[d] != 1))
      axes.push_back(d);
  }
  if (axes.empty()) return g;
  return reshape(sum(g, axes), shape);
}

// The gradient of an input reduced over `axes` (node attrs): g spread back over them.
Tensor spread_back(const Tensor& g, const Node& n, const Shape& in_shape) {
  Shape kept = in_shape;
  for (auto a : n.attrs.axes) kept[a] = 1;
  return broadcast_to(reshape(g, kept), in_shape);
}

std::vector<int> inverse_permutation(const I64s& perm) {
  std::vector<int> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int>(i);
  return inv;
}

// The positions a slice read, as extend() arguments: the gradient is g placed back there.
Tensor unslice(const Tensor& g, const Node& n, const Shape& in_shape) {
  I64s insert_at(in_shape.size()), step = n.attrs.step;
  for (std::size_t d = 0; d < in_shape.size(); ++d) {
    const std::int64_t count = n.shape[d];
    const std::int64_t first = n.attrs.start[d];
    insert_at[d] = count == 0 ? 0 : (step[d] > 0 ? first : first + (count - 1) * step[d]);
  }
  return extend(g, in_shape, insert_at, step);
}

Tensor unary_gradient(Op op, const Tensor& x, const Tensor& y, const Tensor& g,
                      const Node& n) {
  switch (op) {
    case Op::neg: return -g;
    case Op::abs: return g * (convert(greater(x, 0), g.dtype()) - convert(less(x, 0), g.dtype()));
    case Op::square: return g * x * c(2, g);
    // From the output (relu(x) > 0 exactly when x > 0): the forward pass then reads its input
    // only once, and a producer such as a bias add fuses into the relu.
    case Op::relu: return g * convert(greater(y, 0), g.dtype());
    case Op::sqrt: return g / (y * c(2, g));
    case Op::exp: return g * y;
    case Op::expm1: return g * (y + c(1, g));
    case Op::log: return g / x;
    case Op::log2: return g / (x * c(std::numbers::ln2, g));
    case Op::log10: return g / (x * c(std::numbers::ln10, g));
    case Op::log1p: return g / (x + c(1, g));
    case Op::sin: return g * cos(x);
    case Op::cos: return -g * sin(x);
    case Op::tan: return g * (c(1, g) + y * y);
    case Op::asin: return g / sqrt(c(1, g) - x * x);
    case Op::acos: return -g / sqrt(c(1, g) - x * x);
    case Op::atan: return g / (c(1, g) + x * x);
    case Op::sinh: return g * cosh(x);
    case Op::cosh: return g * sinh(x);
    case Op::tanh: return g * (c(1, g) - y * y);
    case Op::asinh: return g / sqrt(x * x + c(1, g));
    case Op::acosh: return g / sqrt(x * x - c(1, g));
    case Op::atanh: return g / (c(1, g) - x * x);
    case Op::reciprocal: return -g * y * y;
    case Op::sigmoid: return g * y * (c(1, g) - y);
    case Op::erf: return g * c(2 / std::sqrt(std::numbers::pi), g) * exp(-(x * x));
    case Op::convert:
      // Rounding to an integer is piecewise constant; otherwise the value passes through.
      if (is_integer(n.dtype) && is_float(x.dtype())) return Tensor();
      return is_float(x.dtype()) ? convert(g, promote(g.dtype(), x.dtype())) : g;
    default: return Tensor();  // sign, even: piecewise constant
  }
}

// minimum/maximum: the chosen operand gets g; on a tie each gets half.
std::vector<Tensor> choice_gradients(const Tensor& a, const Tensor& b, const Tensor& g,
                                     bool take_smaller) {
  const Tensor a_wins = convert(take_smaller ? less(a, b) : greater(a, b), g.dtype());
  const Tensor tie = convert(equal(a, b), g.dtype()) * c(0.5, g);
  const Tensor b_wins = c(1, g) - a_wins - tie - tie;
  return {g * (a_wins + tie), g * (b_wins + tie)};
}

Tensor reduction_gradient(const Tensor& node, const Tensor& x, const Tensor& g, const Node& n) {
  const Shape& s = x.shape();
  switch (n.op) {
    case Op::sum: return spread_back(g, n, s);
    case Op::mean: {
      std::int64_t count = 1;
      for (auto a : n.attrs.axes) count *= s[a];
      return spread_back(g, n, s) / c(static_cast<double>(count), g);
    }
    case Op::prod: {
      // d prod / d x_j is the product of the other elements. With no zero in the group that is
      // prod / x_j; otherwise it is built from the product of the non-zero elements and the
      // other zeros, kept in the graph (as "sum of the zeros - x_j" when there are two) so that
      // second derivatives stay right.
      std::vector<int> axes(n.attrs.axes.begin(), n.attrs.axes.end());
      const Tensor zero = zeros({}, x.dtype()), one = ones({}, x.dtype());
      const Tensor is_zero = equal(x, 0);
      const Tensor zeros_in_group = spread_back(sum(is_zero, axes), n, s);
      const Tensor nonzero_product = spread_back(prod(where(is_zero, one, x), axes), n, s);
      const Tensor other_zero = spread_back(sum(where(is_zero, x, zero), axes), n, s) - x;
      const Tensor at_zero =
          where(equal(zeros_in_group, 1), nonzero_product,
                where(equal(zeros_in_group, 2), nonzero_product * other_zero, zero));
      const Tensor local = where(is_zero, at_zero, spread_back(node, n, s) / where(is_zero, one, x));
      return spread_back(g, n, s) * local;
    }
    case Op::min:
    case Op::max: {
      const Tensor hit = convert(equal(x, spread_back(node, n, s)), g.dtype());
      std::vector<int> axes(n.attrs.axes.begin(), n.attrs.axes.end());
      return spread_back(g, n, s) * hit / spread_back(sum(hit, axes), n, s);
    }
    default: return Tensor();  // argmax, argmin
  }
}

// The adjoint of max_pool2d_grad in its gradient argument: for each window, the mean of `u`
// over the window's maximal elements of `x`. Written with window views, so it is differentiable.
Tensor pooled_share(const Tensor& x, const Tensor& u, const Attrs& at, const Shape& out_shape) {
  const I64s pad_lo{0, 0, at.start[0], at.start[1]};
  const I64s step{1, 1, at.step[0], at.step[1]}, dil{1, 1, at.dilation[0], at.dilation[1]};
  const Shape window{1, 1, at.window[0], at.window[1]};
  const Tensor xw = window_view("max_pool2d", pad(x, pad_lo, pad_lo, -std::numeric_limits<double>::infinity()),
                                window, step, dil);
  const Tensor uw = window_view("max_pool2d", pad(u, pad_lo, pad_lo, 0), window, step, dil);
  const std::vector<int> last{4, 5, 6, 7};
  const Tensor hit = convert(equal(xw, max(xw, last, true)), u.dtype());
  const Tensor r = sum(hit * uw, last) / sum(hit, last);
  return r.shape() == out_shape ? r : reshape(r, out_shape);
}

}  // namespace

std::vector<Tensor> input_gradients(const Tensor& node, const Tensor& g) {
  const Node& n = *node.node();
  std::vector<Tensor> out(n.inputs.size());
  switch (n.info().kind) {
    case OpKind::source: break;
    case OpKind::view: {
      const Tensor x = input(node, 0);
      switch (n.op) {
        case Op::reshape: out[0] = reshape(g, x.shape()); break;
        case Op::permute: out[0] = permute(g, inverse_permutation(n.attrs.axes)); break;
        case Op::slice: out[0] = unslice(g, n, x.shape()); break;
        case Op::pad: {
          I64s stop(n.attrs.start);
          for (std::size_t d = 0; d < stop.size(); ++d) stop[d] += x.shape()[d];
          out[0] = slice(g, n.attrs.start, stop);
          break;
        }
        case Op::broadcast: out[0] = unbroadcast(g, x.shape(), n.attrs.flag); break;
        case Op::windows:  // the adjoint of taking windows is summing them back
          out[0] = unwindow(g, x.shape(), n.attrs.step, n.attrs.dilation);
          break;
        default: break;
      }
      break;
    }
    case OpKind::unary: out[0] = unary_gradient(n.op, input(node, 0), node, g, n); break;
    case OpKind::binary: {
      const Tensor a = input(node, 0), b = input(node, 1);
      switch (n.op) {
        case Op::add: out = {g, g}; break;
        case Op::sub: out = {g, -g}; break;
        case Op::mul: out = {g * b, g * a}; break;
        case Op::div: out = {g / b, -g * node / b}; break;
        case Op::pow: {
          const Tensor log_a = log(a);
          const Tensor safe_log = where(greater(a, 0), log_a, zeros({}, log_a.dtype()));
          out = {g * b * pow(a, b - c(1, g)), g * node * safe_log};
          break;
        }
        case Op::minimum: out = choice_gradients(a, b, g, true); break;
        case Op::maximum: out = choice_gradients(a, b, g, false); break;
        default: break;  // comparisons
      }
      break;
    }
    case OpKind::ternary: {
      const Tensor cond = input(node, 0);
      const Tensor zero = zeros({}, g.dtype());
      out[1] = where(cond, g, zero);
      out[2] = where(cond, zero, g);
      break;
    }
    case OpKind::reduce: out[0] = reduction_gradient(node, input(node, 0), g, n); break;
    case OpKind::matmul: {
      const Tensor a = input(node, 0), b = input(node, 1);
      out = {matmul(g, transpose(b, -1, -2)), matmul(transpose(a, -1, -2), g)};
      break;
    }
    case OpKind::concat: {
      const int axis = static_cast<int>(n.attrs.axes[0]);
      std::int64_t at = 0;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        const std::int64_t size = n.inputs[i]->shape[axis];
        out[i] = slice_axis(g, axis, at, at + size);
        at += size;
      }
      break;
    }
    case OpKind::copy: out[0] = g; break;
    case OpKind::indexing: {
      const int axis = n.attrs.axes.empty() ? 0 : static_cast<int>(n.attrs.axes[0]);
      if (n.op == Op::gather) {
        out[0] = scatter_add(zeros(input(node, 0).shape(), g.dtype()), axis, input(node, 1), g);
      } else if (n.op == Op::scatter_add) {
        const Tensor indices = input(node, 1), src = input(node, 2);
        out[0] = g;
        // Dropped (negative) indices read position 0 and are masked out again.
        const Tensor safe = maximum(indices, zeros({}, indices.dtype()));
        Tensor picked = where(less(indices, 0), zeros({}, g.dtype()), gather(g, axis, safe));
        if (picked.shape() != src.shape())
          picked = extend(picked, src.shape(), I64s(src.shape().size(), 0));
        out[2] = picked;
      } else if (n.op == Op::unwindow) {
        out[0] = window_view("unwindow", g, n.attrs.window, n.attrs.step, n.attrs.dilation);
      }
      break;
    }
    case OpKind::window2d: {
      const Tensor a = input(node, 0);
      const Tensor b = n.inputs.size() > 1 ? input(node, 1) : Tensor();
      const Attrs& at = n.attrs;
      switch (n.op) {
        case Op::conv2d:  // a = input, b = weight
          out[0] = window2d_node(Op::conv2d_grad_input, a.shape(), g, b, at);
          out[1] = window2d_node(Op::conv2d_grad_weight, b.shape(), a, g, at);
          break;
        case Op::conv2d_grad_input:  // a = output gradient, b = weight; linear in both
          out[0] = window2d_node(Op::conv2d, a.shape(), g, b, at);
          out[1] = window2d_node(Op::conv2d_grad_weight, b.shape(), g, a, at);
          break;
        case Op::conv2d_grad_weight:  // a = input, b = output gradient; linear in both
          out[0] = window2d_node(Op::conv2d_grad_input, a.shape(), b, g, at);
          out[1] = window2d_node(Op::conv2d, b.shape(), a, g, at);
          break;
        case Op::max_pool2d: out[0] = window2d_node(Op::max_pool2d_grad, a.shape(), a, g, at); break;
        case Op::max_pool2d_grad: out[1] = pooled_share(a, g, at, b.shape()); break;
        default: break;
      }
      break;
    }
    case OpKind::softmax: {
      // y = softmax(x): dx = y * (g - sum(g * y)); y = log_softmax(x): dx = g - exp(y) * sum(g).
      const int axis = static_cast<int>(n.attrs.axes[0]);
      if (n.op == Op::softmax)
        out[0] = node * (g - sum(g * node, {axis}, true));
      else
        out[0] = g - exp(node) * sum(g, {axis}, true);
      break;
    }
    case OpKind::custom: {
      if (n.op == Op::custom_map && n.attrs.custom && n.attrs.custom->derivative) {
        out[0] = g * map_elements(input(node, 0), n.attrs.custom->derivative);
        break;
      }
      fail(ErrorCode::illegal_derive, n.info().name,
           n.op == Op::custom_map ? "map_elements was given no derivative"
                                  : "reduce_rows has no derivative");
    }
  }
  return out;
}

}  // namespace kiln::detail
