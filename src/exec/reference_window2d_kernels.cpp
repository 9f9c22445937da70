// Reference kernels of the 2-D convolution and max-pooling ops and their gradients: direct
// loops over NCHW data.
#include <algorithm>
#include <cmath>
#include <vector>

#include "exec/operand.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/semantics/elementwise.hpp"
#include "exec/semantics/window_max.hpp"
#include "exec/window2d.hpp"

namespace kiln::detail {

Window2d window2d_of(const Node& n) {
  Window2d g{};
  const Shape* x = nullptr;
  const Shape* out = nullptr;  // [N, O, oH, oW] (or [N, C, oH, oW] for pooling)
  switch (n.op) {
    case Op::conv2d: x = &n.inputs[0]->shape; out = &n.shape; break;
    case Op::conv2d_grad_input: x = &n.shape; out = &n.inputs[0]->shape; break;
    case Op::conv2d_grad_weight: x = &n.inputs[0]->shape; out = &n.inputs[1]->shape; break;
    case Op::max_pool2d: x = &n.inputs[0]->shape; out = &n.shape; break;
    default: x = &n.inputs[0]->shape; out = &n.inputs[1]->shape; break;  // max_pool2d_grad
  }
  g.n = (*x)[0], g.c = (*x)[1], g.h = (*x)[2], g.w = (*x)[3];
  g.o = (*out)[1], g.oh = (*out)[2], g.ow = (*out)[3];
  if (n.op == Op::max_pool2d || n.op == Op::max_pool2d_grad) {
    g.kh = n.attrs.window[0], g.kw = n.attrs.window[1];
  } else {
    const Shape& w = n.op == Op::conv2d_grad_weight ? n.shape : n.inputs[1]->shape;
    g.kh = w[2], g.kw = w[3];
  }
  g.sh = n.attrs.step[0], g.sw = n.attrs.step[1];
  g.ph = n.attrs.padding[0], g.pw = n.attrs.padding[1];
  g.dh = n.attrs.dilation[0], g.dw = n.attrs.dilation[1];
  return g;
}

namespace {

// An input's values as a dense host array of T, in a kiln Buffer: an input too large for the
// machine (a broadcast of hostile size) is kiln's out_of_memory error, not std::bad_alloc.
template <class T> class DenseValues {
 public:
  DenseValues() = default;
  explicit DenseValues(const Node& input) {
    const Operand op = Operand::of(input);
    buffer_ = std::make_shared<Buffer>(dtype_of_v<T>, shape_numel(op.shape));
    T* d = buffer_->as<T>();
    for (std::int64_t i = 0; i < buffer_->numel(); ++i) d[i] = op.get<T>(i);
  }
  const T* data() const { return buffer_ ? buffer_->as<T>() : nullptr; }
  const T& operator[](std::int64_t i) const { return data()[i]; }

 private:
  std::shared_ptr<Buffer> buffer_;
};

template <class T> DenseValues<T> values_of(const Node& input) { return DenseValues<T>(input); }

// Calls f(n, o, i, j, c, ki, kj, y, x) for every product term of a convolution whose input
// position (y, x) lies inside the input.
template <class F> void for_each_term(const Window2d& g, F f) {
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.o; ++o)
      for (std::int64_t i = 0; i < g.oh; ++i)
        for (std::int64_t j = 0; j < g.ow; ++j)
          for (std::int64_t c = 0; c < g.c; ++c)
            for (std::int64_t ki = 0; ki < g.kh; ++ki) {
              const std::int64_t y = g.row(i, ki);
              if (y < 0 || y >= g.h) continue;
              for (std::int64_t kj = 0; kj < g.kw; ++kj) {
                const std::int64_t x = g.col(j, kj);
                if (x < 0 || x >= g.w) continue;
                f(n, o, i, j, c, ki, kj, y, x);
              }
            }
}

template <class T> void conv_kernel(const Node& node, Buffer& out) {
  const Window2d g = window2d_of(node);
  T* o = out.as<T>();
  std::fill(o, o + out.numel(), T{0});
  auto xi = [&](auto n, auto c, auto y, auto x) { return ((n * g.c + c) * g.h + y) * g.w + x; };
  auto wi = [&](auto oc, auto c, auto ki, auto kj) { return ((oc * g.c + c) * g.kh + ki) * g.kw + kj; };
  auto gi = [&](auto n, auto oc, auto i, auto j) { return ((n * g.o + oc) * g.oh + i) * g.ow + j; };
  switch (node.op) {
    case Op::conv2d: {
      const auto x = values_of<T>(*node.inputs[0]), w = values_of<T>(*node.inputs[1]);
      for_each_term(g, [&](auto n, auto oc, auto i, auto j, auto c, auto ki, auto kj, auto y, auto xx) {
        o[gi(n, oc, i, j)] += x[xi(n, c, y, xx)] * w[wi(oc, c, ki, kj)];
      });
      break;
    }
    case Op::conv2d_grad_input: {
      const auto gr = values_of<T>(*node.inputs[0]), w = values_of<T>(*node.inputs[1]);
      for_each_term(g, [&](auto n, auto oc, auto i, auto j, auto c, auto ki, auto kj, auto y, auto xx) {
        o[xi(n, c, y, xx)] += gr[gi(n, oc, i, j)] * w[wi(oc, c, ki, kj)];
      });
      break;
    }
    case Op::conv2d_grad_weight: {
      const auto x = values_of<T>(*node.inputs[0]), gr = values_of<T>(*node.inputs[1]);
      for_each_term(g, [&](auto n, auto oc, auto i, auto j, auto c, auto ki, auto kj, auto y, auto xx) {
        o[wi(oc, c, ki, kj)] += gr[gi(n, oc, i, j)] * x[xi(n, c, y, xx)];
      });
      break;
    }
    default: break;
  }
}

// Max pooling over the window positions inside the input; the gradient of a window goes to its
// maximal elements, shared equally between ties.
// T: the input's type; G: the output's (the gradient's type for max_pool2d_grad).
template <class T, class G> void pool_kernel(const Node& node, Buffer& out) {
  const Window2d g = window2d_of(node);
  const auto x = values_of<T>(*node.inputs[0]);
  DenseValues<G> grad;
  if (node.op == Op::max_pool2d_grad) grad = values_of<G>(*node.inputs[1]);
  G* o = out.as<G>();
  if (node.op == Op::max_pool2d_grad) std::fill(o, o + out.numel(), G{0});
  for (std::int64_t p = 0; p < g.n * g.c; ++p)
    for (std::int64_t i = 0; i < g.oh; ++i)
      for (std::int64_t j = 0; j < g.ow; ++j) {
        const T* plane = x.data() + p * g.h * g.w;
        T best{};
        bool any = false;
        for (std::int64_t ki = 0; ki < g.kh; ++ki)
          for (std::int64_t kj = 0; kj < g.kw; ++kj) {
            const std::int64_t y = g.row(i, ki), xx = g.col(j, kj);
            if (y < 0 || y >= g.h || xx < 0 || xx >= g.w) continue;
            const T v = plane[y * g.w + xx];
            if (!any || replaces(v, best, /*maximum=*/true)) best = v;
            any = true;
            if (is_nan(best)) break;
          }
        const std::int64_t out_index = (p * g.oh + i) * g.ow + j;
        if (node.op == Op::max_pool2d) {
          o[out_index] = static_cast<G>(best);
          continue;
        }
        int ties = 0;
        for (int pass = 0; pass < 2; ++pass)
          for (std::int64_t ki = 0; ki < g.kh; ++ki)
            for (std::int64_t kj = 0; kj < g.kw; ++kj) {
              const std::int64_t y = g.row(i, ki), xx = g.col(j, kj);
              if (y < 0 || y >= g.h || xx < 0 || xx >= g.w) continue;
              if (!(plane[y * g.w + xx] == best)) continue;
              if (pass == 0) ++ties;
              else o[p * g.h * g.w + y * g.w + xx] += tie_share(grad[out_index], ties);
            }
      }
}

}  // namespace

void run_reference_window2d_kernel(const Node& node, Buffer& out) {
  if (node.op == Op::max_pool2d || node.op == Op::max_pool2d_grad) {
    dispatch(node.inputs[0]->dtype, [&]<class T>() {
      dispatch(node.dtype, [&]<class G>() { pool_kernel<T, G>(node, out); });
    });
    return;
  }
  dispatch(node.dtype, [&]<class T>() { conv_kernel<T>(node, out); });
}

}  // namespace kiln::detail
