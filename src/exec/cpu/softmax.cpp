#include "exec/cpu/softmax.hpp"

#include <cmath>
#include <vector>

#include "exec/cpu/float_loops.hpp"
#include "exec/cpu/source.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/operand.hpp"
#include "exec/semantics/softmax.hpp"

namespace kiln::detail::cpu {

namespace {

template <class T>
void rows(const Node& n, const T* x, T* o, std::int64_t count, std::int64_t len) {
  const bool log = n.op == Op::log_softmax;
  parallel_for(count, grain_for(len), [&](std::int64_t begin, std::int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      const FloatLoops& loops = float_loops();
      for (std::int64_t r = begin; r < end; ++r)
        loops.softmax_row_f32(x + r * len, o + r * len, len, log);
      return;
    } else {
      std::vector<T> e(static_cast<std::size_t>(len));
      for (std::int64_t r = begin; r < end; ++r) {
        const T* in = x + r * len;
        T* out = o + r * len;
        T m = -std::numeric_limits<T>::infinity();
        for (std::int64_t j = 0; j < len; ++j) m = in[j] > m ? in[j] : m;
        m = softmax_shift(m);
        for (std::int64_t j = 0; j < len; ++j) e[j] = in[j] - m;
        float_loops().unary_f64(Op::exp, e.data(), e.data(), len);
        double total = 0;
        for (std::int64_t j = 0; j < len; ++j) total += e[j];
        if (!log) {
          const T scale = static_cast<T>(1.0 / total);
          for (std::int64_t j = 0; j < len; ++j) out[j] = e[j] * scale;
        } else {
          const T shift = static_cast<T>(std::log(total));
          for (std::int64_t j = 0; j < len; ++j) out[j] = (in[j] - m) - shift;
        }
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
  return computed_as_f32(n, out, [&](Buffer& values) {
    dispatch(arithmetic_type(n.dtype), [&]<class T>() {
      if constexpr (std::is_floating_point_v<T>) {
        const Contiguous<T> x(k.inputs[0]);
        rows<T>(n, x.data, values.as<T>(), n.numel() / len, len);
      }
    });
    return true;
  });
}

}  // namespace kiln::detail::cpu
