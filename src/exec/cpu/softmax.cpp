#include "exec/cpu/softmax.hpp"

#include <cmath>
#include <vector>

#include "exec/cpu/chunk_ops.hpp"
#include "exec/cpu/source.hpp"
#include "exec/cpu/thread_pool.hpp"
#include "exec/operand.hpp"

namespace kiln::detail::cpu {

namespace {

template <class T> void rows(const Node& n, const T* x, T* o, std::int64_t count, std::int64_t len) {
  const FloatLoops& loops = float_loops();
  auto exp_row = [&](const T* in, T* out) {
    if constexpr (std::is_same_v<T, float>) loops.unary_f32(Op::exp, in, out, len);
    else loops.unary_f64(Op::exp, in, out, len);
  };
  parallel_for(count, 4, [&](std::int64_t begin, std::int64_t end) {
    std::vector<T> scratch(static_cast<std::size_t>(len));
    for (std::int64_t r = begin; r < end; ++r) {
      const T* in = x + r * len;
      T* out = o + r * len;
      T m = -std::numeric_limits<T>::infinity();
      if constexpr (std::is_same_v<T, float>) {
        m = loops.row_max_f32(in, len);
      } else {
        for (std::int64_t j = 0; j < len; ++j) m = in[j] > m ? in[j] : m;
      }
      if (!std::isfinite(m)) m = 0;  // NaN rows stay NaN through the exponentials below  // as the reference: a line of infinities is not shifted
      for (std::int64_t j = 0; j < len; ++j) out[j] = in[j] - m;
      T* e = n.op == Op::softmax ? out : scratch.data();
      exp_row(out, e);
      double total = 0;
      if constexpr (std::is_same_v<T, float>) {
        total = loops.row_sum_f32(e, len);
      } else {
        for (std::int64_t j = 0; j < len; ++j) total += e[j];
      }
      if (n.op == Op::softmax) {
        const T scale = static_cast<T>(1.0 / total);
        for (std::int64_t j = 0; j < len; ++j) out[j] *= scale;
      } else {
        const T shift = static_cast<T>(std::log(total));
        for (std::int64_t j = 0; j < len; ++j) out[j] -= shift;
      }
    }
  });
}

}  // namespace

bool run_softmax(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  if (static_cast<std::size_t>(n.attrs.axes[0]) + 1 != n.shape.size() || !is_float(n.dtype))
    return false;
  const std::int64_t len = n.shape.back();
  if (len == 0 || n.numel() == 0) return true;
  dispatch(n.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const Contiguous<T> x(k.inputs[0]);
      rows<T>(n, x.data, out.as<T>(), n.numel() / len, len);
    }
  });
  return true;
}

}  // namespace kiln::detail::cpu
