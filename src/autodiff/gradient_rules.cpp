#include "autodiff/gradient_rules.hpp"

#include <cmath>
#include <iterator>
#include <limits>
#include <numbers>

#include "api/builder.hpp"
#include "api/window_views.hpp"
#include "graph/custom_kernel.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/custom.hpp"
#include "kiln/indexing.hpp"
#include "kiln/linalg.hpp"
#include "kiln/ops.hpp"
#include "kiln/windows.hpp"

namespace kiln::detail {

namespace {

using I64s = std::vector<std::int64_t>;

// A real constant in the float type of `like` (of its parts, where `like` is complex, so that it
// keeps a c64 gradient c64).
Tensor c(double v, const Tensor& like) {
  return full({}, v, is_inexact(like.dtype()) ? real_type(like.dtype()) : DType::f64);
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

// 1 where `condition` holds, else 0, of type t: a selector, so that the gradient graph (which is
// differentiated again for second derivatives) holds no boolean value used as data, which
// gradients() refuses to differentiate through.
Tensor mask_of(const Tensor& condition, DType t) {
  return where(condition, ones({}, t), zeros({}, t));
}

// minimum/maximum: the chosen operand gets g; on a tie each gets half, or (Flint's rule, for the
// C API) the first operand all of it.
std::vector<Tensor> choice_gradients(const Tensor& a, const Tensor& b, const Tensor& g,
                                     bool take_smaller, bool flint_ties) {
  if (flint_ties) {
    const Tensor a_gets = mask_of(take_smaller ? less_equal(a, b) : greater_equal(a, b), g.dtype());
    return {g * a_gets, g * (c(1, g) - a_gets)};
  }
  const Tensor a_wins = mask_of(take_smaller ? less(a, b) : greater(a, b), g.dtype());
  const Tensor tie = mask_of(equal(a, b), g.dtype()) * c(0.5, g);
  const Tensor b_wins = c(1, g) - a_wins - tie - tie;
  return {g * (a_wins + tie), g * (b_wins + tie)};
}

// min/max: the gradient goes to the elements equal to the extreme, shared on ties, or (Flint's
// rule, for the C API) given whole to each of them.
Tensor extreme_gradient(const Tensor& node, const Tensor& x, const Tensor& g, const Node& n) {
  const Shape& s = x.shape();
  const Tensor hit = mask_of(equal(x, spread_back(node, n, s)), g.dtype());
  if (n.attrs.flint_ties) return spread_back(g, n, s) * hit;
  std::vector<int> axes(n.attrs.axes.begin(), n.attrs.axes.end());
  return spread_back(g, n, s) * hit / spread_back(sum(hit, axes), n, s);
}

// The adjoint of max_pool2d_grad in its gradient argument: for each window, the mean of `u`
// over the window's maximal elements of `x`. Written with window views, so it is differentiable.
Tensor pooled_share(const Tensor& x, const Tensor& u, const Attrs& at, const Shape& out_shape) {
  const I64s pad_lo{0, 0, at.padding[0], at.padding[1]};
  const I64s step{1, 1, at.step[0], at.step[1]}, dil{1, 1, at.dilation[0], at.dilation[1]};
  const Shape window{1, 1, at.window[0], at.window[1]};
  const Tensor xw = window_view("max_pool2d", pad(x, pad_lo, pad_lo, -std::numeric_limits<double>::infinity()),
                                window, step, dil);
  const Tensor uw = window_view("max_pool2d", pad(u, pad_lo, pad_lo, 0), window, step, dil);
  const std::vector<int> last{4, 5, 6, 7};
  const Tensor hit = mask_of(equal(xw, max(xw, last, true)), u.dtype());
  const Tensor r = sum(hit * uw, last) / sum(hit, last);
  return r.shape() == out_shape ? r : reshape(r, out_shape);
}

// What a gradient rule sees: the node, its output gradient `g` (the node's shape, a float type)
// and its inputs.
//
// Complex values follow PyTorch's convention: the gradient of a real loss L with respect to
// z = x + iy is dL/dx + i dL/dy (the conjugate Wirtinger derivative, times two). For a
// holomorphic f that is g * conj(f'(z)); and every holomorphic op kiln has is real on the real
// axis, where conj(f'(z)) = f'(conj(z)). So a real rule evaluated on the conjugates of the node's
// inputs and value is the complex rule: `node` and `in(i)` are those conjugates for a node that
// touches complex values, except for the ops that are not holomorphic (abs, real, imag, conj,
// angle, complex), whose rules below handle complex values themselves.
struct Backward {
  const Tensor& node;
  const Node& n;
  const Tensor& g;
  bool conjugated = false;
  Tensor in(std::size_t i) const {
    const Tensor x(n.inputs[i]);
    return conjugated && is_complex(x.dtype()) ? conj(x) : x;
  }
};

using Gradients = std::vector<Tensor>;

// The rule of a differentiable op (Gradient::rule in the registry): one entry per input, an
// undefined Tensor where an input gets nothing. Every such op has a specialisation below; a row
// without one stops the build here.
template <Op op> Gradients gradient_rule(const Backward&) {
  static_assert(op != op, "a differentiable op (Gradient::rule) has no gradient rule");
  return {};
}

#define KILN_RULE(op) template <> Gradients gradient_rule<Op::op>(const Backward & b)
// An elementwise rule of x (the input), y (the output) and g.
#define KILN_UNARY_RULE(op, ...)                                  \
  KILN_RULE(op) {                                                 \
    [[maybe_unused]] const Tensor x = b.in(0);                    \
    [[maybe_unused]] const Tensor& y = b.node;                    \
    const Tensor& g = b.g;                                        \
    return {__VA_ARGS__};                                         \
  }

// ---- views ----
KILN_RULE(reshape) { return {reshape(b.g, b.in(0).shape())}; }
KILN_RULE(permute) { return {permute(b.g, inverse_permutation(b.n.attrs.axes))}; }
KILN_RULE(slice) { return {unslice(b.g, b.n, b.in(0).shape())}; }
KILN_RULE(pad) {
  I64s stop(b.n.attrs.before);
  const Shape& in_shape = b.n.inputs[0]->shape;
  for (std::size_t d = 0; d < stop.size(); ++d) stop[d] += in_shape[d];
  return {slice(b.g, b.n.attrs.before, stop)};
}
KILN_RULE(broadcast) { return {unbroadcast(b.g, b.in(0).shape(), b.n.attrs.inverse)}; }
// The adjoint of taking windows is summing them back.
KILN_RULE(windows) {
  return {unwindow(b.g, b.in(0).shape(), b.n.attrs.step, b.n.attrs.dilation)};
}

// ---- elementwise ----
KILN_UNARY_RULE(neg, -g)
KILN_RULE(abs) {
  const Tensor x = b.in(0);
  if (is_complex(x.dtype()))  // g z / |z|, and 0 at z = 0
    return {where(equal(x, 0), zeros({}, x.dtype()), b.g * (x / b.node))};
  return {b.g * (mask_of(greater(x, 0), b.g.dtype()) - mask_of(less(x, 0), b.g.dtype()))};
}
// real(z) = x: g + 0i. imag(z) = y: 0 + gi. Of a real input, real is the identity, and imag
// (always 0) passes nothing.
KILN_RULE(real) { return {is_complex(b.in(0).dtype()) ? convert(b.g, b.in(0).dtype()) : b.g}; }
KILN_RULE(imag) {
  if (!is_complex(b.in(0).dtype())) return {Tensor()};
  return {complex(zeros_like(b.g), b.g)};
}
KILN_RULE(conj) { return {conj(b.g)}; }
// angle(z) = atan2(y, x): d/dx = -y / |z|^2, d/dy = x / |z|^2, so the gradient is g i z / |z|^2,
// and 0 at z = 0. The angle of a real value is piecewise constant.
KILN_RULE(angle) {
  const Tensor x = b.in(0);
  if (!is_complex(x.dtype())) return {Tensor()};
  const Tensor turned = complex(-imag(x), real(x));
  const Tensor magnitude = abs(x);
  return {where(equal(x, 0), zeros({}, x.dtype()), turned * (b.g / (magnitude * magnitude)))};
}
// complex(re, im): re gets the real part of g, im its imaginary part.
KILN_RULE(complex) { return {real(b.g), imag(b.g)}; }
KILN_UNARY_RULE(square, g * x * c(2, g))
// From the output (relu(x) > 0 exactly when x > 0): the forward pass then reads its input only
// once, and a producer such as a bias add fuses into the relu.
KILN_UNARY_RULE(relu, g * mask_of(greater(y, 0), g.dtype()))
KILN_UNARY_RULE(sqrt, g / (y * c(2, g)))
KILN_UNARY_RULE(exp, g * y)
KILN_UNARY_RULE(expm1, g * (y + c(1, g)))
KILN_UNARY_RULE(log, g / x)
KILN_UNARY_RULE(log2, g / (x * c(std::numbers::ln2, g)))
KILN_UNARY_RULE(log10, g / (x * c(std::numbers::ln10, g)))
KILN_UNARY_RULE(log1p, g / (x + c(1, g)))
KILN_UNARY_RULE(sin, g * cos(x))
KILN_UNARY_RULE(cos, -g * sin(x))
KILN_UNARY_RULE(tan, g * (c(1, g) + y * y))
KILN_UNARY_RULE(asin, g / sqrt(c(1, g) - x * x))
KILN_UNARY_RULE(acos, -g / sqrt(c(1, g) - x * x))
KILN_UNARY_RULE(atan, g / (c(1, g) + x * x))
KILN_UNARY_RULE(sinh, g * cosh(x))
KILN_UNARY_RULE(cosh, g * sinh(x))
KILN_UNARY_RULE(tanh, g * (c(1, g) - y * y))
KILN_UNARY_RULE(asinh, g / sqrt(x * x + c(1, g)))
// sqrt(x - 1) sqrt(x + 1), not sqrt(x^2 - 1): the two differ in sign off the real axis, and
// the first is acosh's derivative on its principal branch.
KILN_UNARY_RULE(acosh, g / (sqrt(x - c(1, g)) * sqrt(x + c(1, g))))
KILN_UNARY_RULE(atanh, g / (c(1, g) - x * x))
KILN_UNARY_RULE(reciprocal, -g * y * y)
KILN_UNARY_RULE(sigmoid, g * y * (c(1, g) - y))
KILN_UNARY_RULE(erf, g * c(2 / std::sqrt(std::numbers::pi), g) * exp(-(x * x)))
KILN_UNARY_RULE(softplus, g * sigmoid(x))
KILN_RULE(convert) {
  // Rounding to an integer is piecewise constant; otherwise the value passes through.
  const Tensor x = b.in(0);
  if (is_integer(b.n.dtype) && is_inexact(x.dtype())) return {Tensor()};
  return {is_inexact(x.dtype()) ? convert(b.g, promote(b.g.dtype(), x.dtype())) : b.g};
}

KILN_RULE(add) { return {b.g, b.g}; }
KILN_RULE(sub) { return {b.g, -b.g}; }
// The target of an assignment gives only its memory, not its values.
KILN_RULE(assign) { return {Tensor(), b.g}; }
KILN_RULE(mul) { return {b.g * b.in(1), b.g * b.in(0)}; }
KILN_RULE(div) {
  const Tensor d = b.in(1);
  return {b.g / d, -b.g * b.node / d};
}
KILN_RULE(pow) {
  const Tensor a = b.in(0), e = b.in(1);
  const Tensor log_a = log(a);
  // The exponent's gradient needs log(a): 0 where it is not finite (a real a <= 0, a complex 0).
  const Tensor defined = is_complex(a.dtype()) ? not_equal(a, 0) : greater(a, 0);
  const Tensor safe_log = where(defined, log_a, zeros({}, log_a.dtype()));
  return {b.g * e * pow(a, e - c(1, b.g)), b.g * b.node * safe_log};
}
KILN_RULE(atan2) {
  const Tensor y = b.in(0), x = b.in(1);
  const Tensor r2 = y * y + x * x;
  return {b.g * x / r2, -b.g * y / r2};
}
// a - trunc(a / b) * b and a - floor(a / b) * b: the quotient is piecewise constant.
KILN_RULE(fmod) { return {b.g, -b.g * trunc(b.in(0) / b.in(1))}; }
KILN_RULE(remainder) { return {b.g, -b.g * floor(b.in(0) / b.in(1))}; }
KILN_RULE(minimum) {
  return choice_gradients(b.in(0), b.in(1), b.g, true, b.n.attrs.flint_ties);
}
KILN_RULE(maximum) {
  return choice_gradients(b.in(0), b.in(1), b.g, false, b.n.attrs.flint_ties);
}
KILN_RULE(where) {
  const Tensor cond = b.in(0);
  const Tensor zero = zeros({}, b.g.dtype());
  return {Tensor(), where(cond, b.g, zero), where(cond, zero, b.g)};
}

// ---- reductions ----
KILN_RULE(sum) { return {spread_back(b.g, b.n, b.in(0).shape())}; }
KILN_RULE(mean) {
  const Shape& s = b.n.inputs[0]->shape;
  std::int64_t count = 1;
  for (auto a : b.n.attrs.axes) count *= s[a];
  return {spread_back(b.g, b.n, s) / c(static_cast<double>(count), b.g)};
}
KILN_RULE(prod) {
  // d prod / d x_j is the product of the other elements. With no zero in the group that is
  // prod / x_j; otherwise it is built from the product of the non-zero elements and the other
  // zeros, kept in the graph (as "sum of the zeros - x_j" when there are two) so that second
  // derivatives stay right.
  const Tensor x = b.in(0);
  const Node& n = b.n;
  const Shape& s = x.shape();
  std::vector<int> axes(n.attrs.axes.begin(), n.attrs.axes.end());
  const Tensor zero = zeros({}, x.dtype()), one = ones({}, x.dtype());
  const Tensor is_zero = equal(x, 0);
  const Tensor zeros_in_group = spread_back(sum(is_zero, axes), n, s);
  const Tensor nonzero_product = spread_back(prod(where(is_zero, one, x), axes), n, s);
  const Tensor other_zero = spread_back(sum(where(is_zero, x, zero), axes), n, s) - x;
  const Tensor at_zero =
      where(equal(zeros_in_group, 1), nonzero_product,
            where(equal(zeros_in_group, 2), nonzero_product * other_zero, zero));
  const Tensor local =
      where(is_zero, at_zero, spread_back(b.node, n, s) / where(is_zero, one, x));
  return {spread_back(b.g, n, s) * local};
}
KILN_RULE(min) { return {extreme_gradient(b.node, b.in(0), b.g, b.n)}; }
KILN_RULE(max) { return {extreme_gradient(b.node, b.in(0), b.g, b.n)}; }

// ---- products, joins, copies, indexing ----
// Whether `t` is a permute node that swaps its last two dimensions only.
bool is_matrix_transpose(const Tensor& t) {
  const Node& n = *t.node();
  if (n.op != Op::permute || n.shape.size() < 2) return false;
  const std::size_t r = n.shape.size();
  for (std::size_t i = 0; i + 2 < r; ++i)
    if (n.attrs.axes[i] != static_cast<std::int64_t>(i)) return false;
  return n.attrs.axes[r - 2] == static_cast<std::int64_t>(r - 1) &&
         n.attrs.axes[r - 1] == static_cast<std::int64_t>(r - 2);
}

KILN_RULE(matmul) {
  const Tensor a = b.in(0), m = b.in(1);
  // An operand that is a transposed view (nn::Linear's weight [out, in], read as [in, out]) gets
  // the transpose of the product laid out as its own input: the permute's rule transposes it
  // back, the two views cancel, and the optimiser reads the gradient in memory order instead of
  // through a transposing view (which cost the training step about a sixth).
  const Tensor da = is_matrix_transpose(a) ? transpose(matmul(m, transpose(b.g, -1, -2)), -1, -2)
                                           : matmul(b.g, transpose(m, -1, -2));
  const Tensor dm = is_matrix_transpose(m) ? transpose(matmul(transpose(b.g, -1, -2), a), -1, -2)
                                           : matmul(transpose(a, -1, -2), b.g);
  return {da, dm};
}
KILN_RULE(concat) {
  const int axis = static_cast<int>(b.n.attrs.axes[0]);
  Gradients out(b.n.inputs.size());
  std::int64_t at = 0;
  for (std::size_t i = 0; i < b.n.inputs.size(); ++i) {
    const std::int64_t size = b.n.inputs[i]->shape[axis];
    out[i] = slice_axis(b.g, axis, at, at + size);
    at += size;
  }
  return out;
}
KILN_RULE(contiguous) { return {b.g}; }

int indexing_axis(const Node& n) {
  return n.attrs.axes.empty() ? 0 : static_cast<int>(n.attrs.axes[0]);
}
KILN_RULE(gather) {
  return {scatter_add(zeros(b.in(0).shape(), b.g.dtype()), indexing_axis(b.n), b.in(1), b.g),
          Tensor()};
}
KILN_RULE(scatter_add) {
  const Tensor indices = b.in(1), src = b.in(2);
  // Dropped (negative) indices read position 0 and are masked out again.
  const Tensor safe = maximum(indices, zeros({}, indices.dtype()));
  Tensor picked = where(less(indices, 0), zeros({}, b.g.dtype()),
                        gather(b.g, indexing_axis(b.n), safe));
  if (picked.shape() != src.shape())
    picked = extend(picked, src.shape(), I64s(src.shape().size(), 0));
  return {b.g, Tensor(), picked};
}
KILN_RULE(unwindow) {
  return {window_view("unwindow", b.g, b.n.attrs.window, b.n.attrs.step, b.n.attrs.dilation)};
}
KILN_RULE(custom_map) {
  if (!b.n.attrs.custom || !b.n.attrs.custom->derivative)
    fail(ErrorCode::illegal_derive, b.n.info().name, "map_elements was given no derivative");
  return {b.g * map_elements(b.in(0), b.n.attrs.custom->derivative)};
}

// ---- linear algebra (kiln/linalg.hpp): PyTorch's formulas, built from ops with gradients ----
Tensor mT(const Tensor& x) { return transpose(x, -1, -2); }
Tensor identity_like(const Tensor& x) {  // I [n, n] for x [..., n, n] or [..., n]
  const std::int64_t n = x.shape().back();
  return eye(n, n, x.dtype());
}
Tensor diag_embed(const Tensor& v) { return unsqueeze(v, -1) * identity_like(v); }
Tensor diagonal_of(const Tensor& x) { return sum(x * identity_like(x), {x.rank() - 1}); }
Tensor right_divide(const Tensor& x, const Tensor& r) { return mT(solve(r, mT(x))); }  // x r^-T

KILN_RULE(solve) {  // X = A^-1 B: gB = A^-T g, gA = -gB X^T
  const Tensor gb = solve(mT(b.in(0)), b.g);
  return {neg(matmul(gb, mT(b.node))), gb};
}
KILN_RULE(det) {  // g det(A) A^-T (A must be invertible)
  const Tensor s = unsqueeze(unsqueeze(b.g * b.node, -1), -1);
  return {s * mT(inv(b.in(0)))};
}
KILN_RULE(cholesky) {  // L^-T Phi(L^T g) L^-1, Phi: the lower triangle symmetrised, diagonal halved
  const Tensor l = b.node;
  const Tensor p = tril(matmul(mT(l), b.g));
  const Tensor phi = (p + mT(tril(p, -1))) * 0.5;
  return {mT(solve(mT(l), mT(solve(mT(l), phi))))};  // (L^-T (L^-T phi)^T)^T
}
// The gradient of A = QR for square or tall A, from the gradients of Q and of R (either may be
// undefined: zero): (gQ + Q syminvadj(triu(gR R^T - Q^T gQ))) R^-T.
Tensor qr_backward(const Tensor& q, const Tensor& r, const Tensor& gq, const Tensor& gr) {
  Tensor m;
  if (gr.defined()) m = matmul(gr, mT(r));
  if (gq.defined()) m = m.defined() ? m - matmul(mT(q), gq) : neg(matmul(mT(q), gq));
  const Tensor x = triu(m);
  Tensor ga = matmul(q, x + mT(x) - diag_embed(diagonal_of(x)));
  if (gq.defined()) ga = ga + gq;
  return right_divide(ga, r);
}
KILN_RULE(qr) {  // wide A = [X | Y] (m < n): X = Q U is square, V = Q^T Y (PyTorch's approach)
  const Tensor a = b.in(0);
  const QR f = qr(a);
  const bool of_q = b.n.attrs.axes[0] == 0;
  const int last = a.rank() - 1;
  const std::int64_t m = a.shape()[static_cast<std::size_t>(last - 1)], n = a.shape().back();
  if (m >= n)
    return {of_q ? qr_backward(f.q, f.r, b.g, Tensor()) : qr_backward(f.q, f.r, Tensor(), b.g)};
  const Tensor y = slice_axis(a, last, m, n);
  const Tensor u = slice_axis(f.r, last, 0, m);
  if (of_q) return {concat(qr_backward(f.q, u, b.g, Tensor()), zeros_like(y), last)};
  const Tensor gu = slice_axis(b.g, last, 0, m), gv = slice_axis(b.g, last, m, n);
  return {concat(qr_backward(f.q, u, matmul(y, mT(gv)), gu), matmul(f.q, gv), last)};
}
KILN_RULE(eigh) {  // V (diag(gw) + skew(V^T gV) / E) V^T, E[i, j] = w[j] - w[i]
  const Eigh f = eigh(b.in(0));
  const Tensor& v = f.eigenvectors;
  Tensor inner;
  if (b.n.attrs.axes[0] == 0) {
    inner = diag_embed(b.g);
  } else {
    const Tensor& w = f.eigenvalues;
    const Tensor vg = matmul(mT(v), b.g);
    const Tensor e = unsqueeze(w, -2) - unsqueeze(w, -1) + identity_like(w);
    inner = (vg - mT(vg)) * 0.5 / e;
  }
  return {matmul(v, matmul(inner, mT(v)))};
}
KILN_RULE(svd) {  // PyTorch's svd_backward, one of gU, gS, gVh at a time (it is linear in them)
  const Tensor a = b.in(0);
  const std::int64_t m = a.shape()[a.shape().size() - 2], n = a.shape().back();
  const std::int64_t k = std::min(m, n);
  const SVD f = svd(a);
  const Tensor &u = f.u, &s = f.s, &vh = f.vh;
  const auto part = b.n.attrs.axes[0];
  if (part == 1) return {matmul(u, matmul(diag_embed(b.g), vh))};
  const Tensor s2 = s * s;
  const Tensor e = unsqueeze(s2, -2) - unsqueeze(s2, -1) + identity_like(s);  // s[k]^2 - s[j]^2
  if (part == 0) {  // gU
    const Tensor x = matmul(mT(u), b.g);
    Tensor ga = matmul(u, (x - mT(x)) * (unsqueeze(s, -2) / e));
    if (m > k) {
      const Tensor gus = b.g / unsqueeze(s, -2);
      ga = ga + gus - matmul(u, matmul(mT(u), gus));
    }
    return {matmul(ga, vh)};
  }
  const Tensor v = mT(vh);  // gVh
  const Tensor x = matmul(vh, mT(b.g));
  Tensor ga = matmul(unsqueeze(s, -1) * (x - mT(x)) / e, vh);
  if (n > k) {
    const Tensor sgvh = b.g / unsqueeze(s, -1);
    ga = ga + sgvh - matmul(matmul(sgvh, v), vh);
  }
  return {matmul(u, ga)};
}
KILN_RULE(lstsq) {  // A of full rank; tall or square through the normal equations (A^T A)^-1
  const Tensor a = b.in(0), rhs = b.in(1), x = b.node;
  const Shape& s = a.shape();
  if (s[s.size() - 2] >= s.back()) {
    const Tensor g = solve(matmul(mT(a), a), b.g);
    const Tensor r = rhs - matmul(a, x);
    return {matmul(r, mT(g)) - matmul(a, matmul(g, mT(x))), matmul(a, g)};
  }
  // Wide: the minimum-norm solution X = A^T H B, H = (A A^T)^-1. With Z = H B and gB = H A g:
  // gA = Z g^T - (gB Z^T + Z gB^T) A.
  const Tensor h_rows = matmul(a, mT(a));
  const Tensor z = solve(h_rows, rhs);
  const Tensor gb = solve(h_rows, matmul(a, b.g));
  return {matmul(z, mT(b.g)) - matmul(matmul(gb, mT(z)) + matmul(z, mT(gb)), a), gb};
}

// ---- convolution and pooling ----
KILN_RULE(conv2d) {  // a = input, w = weight
  const Tensor a = b.in(0), w = b.in(1);
  return {window2d_node(Op::conv2d_grad_input, a.shape(), b.g, w, b.n.attrs),
          window2d_node(Op::conv2d_grad_weight, w.shape(), a, b.g, b.n.attrs)};
}
KILN_RULE(conv2d_grad_input) {  // a = output gradient, w = weight; linear in both
  const Tensor a = b.in(0), w = b.in(1);
  return {window2d_node(Op::conv2d, a.shape(), b.g, w, b.n.attrs),
          window2d_node(Op::conv2d_grad_weight, w.shape(), b.g, a, b.n.attrs)};
}
KILN_RULE(conv2d_grad_weight) {  // a = input, o = output gradient; linear in both
  const Tensor a = b.in(0), o = b.in(1);
  return {window2d_node(Op::conv2d_grad_input, a.shape(), o, b.g, b.n.attrs),
          window2d_node(Op::conv2d, o.shape(), a, b.g, b.n.attrs)};
}
KILN_RULE(max_pool2d) {
  const Tensor a = b.in(0);
  return {window2d_node(Op::max_pool2d_grad, a.shape(), a, b.g, b.n.attrs)};
}
KILN_RULE(max_pool2d_grad) {
  return {Tensor(), pooled_share(b.in(0), b.g, b.n.attrs, b.in(1).shape())};
}

// ---- normalisation ----
// y = softmax(x): dx = y * (g - sum(g * y)); y = log_softmax(x): dx = g - exp(y) * sum(g).
KILN_RULE(softmax) {
  const int axis = static_cast<int>(b.n.attrs.axes[0]);
  return {b.node * (b.g - sum(b.g * b.node, {axis}, true))};
}
KILN_RULE(log_softmax) {
  const int axis = static_cast<int>(b.n.attrs.axes[0]);
  return {b.g - exp(b.node) * sum(b.g, {axis}, true)};
}

// ---- scans ----
// cumsum: out[j] sums x[i] for i <= j, so x[i] gets the sum of g[j] for j >= i: the reversed
// cumsum of g.
KILN_RULE(cumsum) {
  const int axis = static_cast<int>(b.n.attrs.axes[0]);
  return {flip(cumsum(flip(b.g, {axis}), axis), {axis})};
}
// cumprod (libtorch's treatment of zeros): d out[j] / d x[i] (i <= j) is the product of x[k] for
// k <= j, k != i. With z the first zero of the line (or its end):
//   i < z:  the reversed cumsum of g * out, divided by x[i] (out is 0 from z on, so only j < z
//           count, and x[i] != 0);
//   i = z:  the sum over j >= z of g[j] times the cumprod of the line with x[z] read as 1;
//   i > z:  0 (every product holds x[z] = 0).
// With no zero in the line this is the first case throughout, and exact to any order. At a zero,
// the gradient is exact, but its own derivative misses the terms through x[z] of the positions
// after z (they are the constant 0 here), so second derivatives are right only away from zeros.
KILN_RULE(cumprod) {
  const int axis = static_cast<int>(b.n.attrs.axes[0]);
  const Tensor x = b.in(0), &y = b.node, &g = b.g;
  const Tensor is_zero = equal(x, 0);                 // i32
  const Tensor seen = cumsum(is_zero, axis);          // zeros at or before each position
  const Tensor before_zero = equal(seen, 0);
  const Tensor first_zero = equal(is_zero * seen, 1);
  const Tensor one = ones({}, x.dtype());
  const Tensor reversed = flip(cumsum(flip(g * y, {axis}), axis), {axis});
  const Tensor before = reversed / where(before_zero, x, one);
  const Tensor skipped = cumprod(where(first_zero, one, x), axis);
  const Tensor from_zero = mask_of(greater(seen, 0), g.dtype());
  const Tensor at_zero = broadcast_to(sum(g * skipped * from_zero, {axis}, true), x.shape());
  const Tensor zero = zeros({}, before.dtype());
  return {where(before_zero, before, where(first_zero, at_zero, zero))};
}

// ---- sorting ----
// argsort is index-valued (Gradient::zero); sort and topk gather their values with its indices,
// so their gradient is gather's.

// The transform is linear: y = F x (F[k, j] = exp(-2 pi i jk / n)) gives x the gradient
// F^H g = n ifft(g), and the inverse, (1 / n) F^H x, gives (1 / n) F g = fft(g) / n.
KILN_RULE(fft) {
  const int axis = static_cast<int>(b.n.attrs.axes[0]);
  const auto n = static_cast<double>(b.n.shape[static_cast<std::size_t>(axis)]);
  if (b.n.attrs.inverse) return {fft(b.g, std::nullopt, axis) / n};
  return {ifft(b.g, std::nullopt, axis) * n};
}
#undef KILN_RULE
#undef KILN_UNARY_RULE

// Gradient::zero: piecewise constant or index-valued ops pass no gradient to their inputs.
Gradients no_gradient(const Backward& b) { return Gradients(b.n.inputs.size()); }

// Gradient::none: asking for a gradient through the op is an error.
Gradients not_differentiable(const Backward& b) {
  // custom_reduce is what reduce_rows builds: the message names the function the user called.
  fail(ErrorCode::illegal_derive, b.n.info().name,
       b.n.op == Op::custom_reduce ? "reduce_rows has no derivative" : "is not differentiable");
}

using GradientRule = Gradients (*)(const Backward&);
#define KILN_GRADIENT_rule(name) &gradient_rule<Op::name>
#define KILN_GRADIENT_zero(name) &no_gradient
#define KILN_GRADIENT_none(name) &not_differentiable
constexpr GradientRule kGradientRules[] = {
#define KILN_OP_ROW(name, kind, arity, operands, result, gradient, flint) \
  KILN_GRADIENT_##gradient(name),
    KILN_OP_ROWS()
#undef KILN_OP_ROW
};
#undef KILN_GRADIENT_rule
#undef KILN_GRADIENT_zero
#undef KILN_GRADIENT_none
static_assert(std::size(kGradientRules) == kOpCount);

}  // namespace

std::vector<Tensor> input_gradients(const Tensor& node, const Tensor& g) {
  const Node& n = *node.node();
  bool complex_values = is_complex(n.dtype);
  for (const NodePtr& in : n.inputs) complex_values = complex_values || is_complex(in->dtype);
  const bool own_complex_rule = n.op == Op::abs || n.op == Op::real || n.op == Op::imag ||
                                n.op == Op::conj || n.op == Op::angle || n.op == Op::complex;
  Gradients out;
  if (complex_values && !own_complex_rule) {
    const Tensor conjugated = is_complex(n.dtype) ? conj(node) : node;
    out = kGradientRules[static_cast<std::size_t>(n.op)](Backward{conjugated, n, g, true});
  } else {
    out = kGradientRules[static_cast<std::size_t>(n.op)](Backward{node, n, g});
  }
  out.resize(n.inputs.size());
  return out;
}

}  // namespace kiln::detail
