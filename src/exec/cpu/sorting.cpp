#include "exec/cpu/sorting.hpp"

#include <vector>

#include "exec/cpu/parallel.hpp"
#include "exec/cpu/source.hpp"
#include "exec/operand.hpp"
#include "exec/reduction_geometry.hpp"
#include "exec/semantics/sorting.hpp"

namespace kiln::detail::cpu {

// Per block of `len * inner` values, position j of every line is one step from position j - 1:
// the inner loop runs over `inner` neighbouring lines (contiguous, so it vectorises), and each
// line is still walked in order, as the semantics ask.
void run_scan(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  const AxisLines l(n);
  if (n.numel() == 0) return;
  dispatch(n.dtype, [&]<class T>() {
    const Contiguous<T> x(k.inputs[0]);
    T* o = out.as<T>();
    const Op op = n.op;
    const std::int64_t block = l.len * l.inner;
    parallel_for(l.outer, grain_for(block), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) {
        const T* in = x.data + b * block;
        T* to = o + b * block;
        for (std::int64_t i = 0; i < l.inner; ++i) to[i] = in[i];
        for (std::int64_t j = 1; j < l.len; ++j) {
          const T* prev = to + (j - 1) * l.inner;
          const T* row = in + j * l.inner;
          T* now = to + j * l.inner;
          if (op == Op::cumsum)
            for (std::int64_t i = 0; i < l.inner; ++i) now[i] = scan_step(Op::cumsum, prev[i], row[i]);
          else
            for (std::int64_t i = 0; i < l.inner; ++i) now[i] = scan_step(Op::cumprod, prev[i], row[i]);
        }
      }
    });
  });
}

// std::stable_sort of each line (semantics/sorting.hpp); lines along an inner axis are copied
// out first.
void run_argsort(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  const AxisLines l(n);
  if (n.numel() == 0) return;
  const bool descending = n.attrs.descending;
  dispatch(k.inputs[0].node->dtype, [&]<class T>() {
    const Contiguous<T> x(k.inputs[0]);
    std::int64_t* o = out.as<std::int64_t>();
    const std::int64_t lines = l.outer * l.inner;
    parallel_for(lines, grain_for(l.len * 8), [&](std::int64_t begin, std::int64_t end) {
      std::vector<T> line(l.inner == 1 ? 0 : static_cast<std::size_t>(l.len));
      std::vector<std::int64_t> order(l.inner == 1 ? 0 : static_cast<std::size_t>(l.len));
      for (std::int64_t r = begin; r < end; ++r) {
        const std::int64_t b = r / l.inner, i = r % l.inner;
        const std::int64_t first = b * l.len * l.inner + i;
        if (l.inner == 1) {
          argsort_line(x.data + first, o + first, l.len, descending);
          continue;
        }
        for (std::int64_t j = 0; j < l.len; ++j) line[j] = x.data[first + j * l.inner];
        argsort_line(line.data(), order.data(), l.len, descending);
        for (std::int64_t j = 0; j < l.len; ++j) o[first + j * l.inner] = order[j];
      }
    });
  });
}

}  // namespace kiln::detail::cpu
