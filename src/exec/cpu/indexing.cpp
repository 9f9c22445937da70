#include "exec/cpu/indexing.hpp"

#include <algorithm>
#include <type_traits>

#include "exec/cpu/source.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/operand.hpp"
#include "exec/semantics/indexing.hpp"

namespace kiln::detail::cpu {

bool run_gather(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  const KernelInput& source = k.inputs[0];
  const Shape& shape = n.shape;  // the indices' shape
  const std::size_t rank = shape.size();
  if (rank == 0 || (source.view != nullptr && !source.view->is_identity())) return false;
  const Shape& from = n.inputs[0]->shape;  // the source node may be a reshaped base
  const auto axis = static_cast<std::size_t>(n.attrs.axes[0]);
  const Contiguous<std::int64_t> indices(k.inputs[1]);
  const std::int64_t total = shape_numel(shape);
  if (total == 0) return true;

  // Every index is checked before any is used, so a bad one throws on this thread.
  const auto [lo, hi] = std::minmax_element(indices.data, indices.data + total);
  for (const std::int64_t* bad : {lo, hi})
    if (!index_in_range(*bad, from[axis])) index_out_of_range(n, *bad, from[axis]);

  const auto strides = row_major_strides(from);
  const std::size_t last = rank - 1;
  const std::int64_t row_length = shape[last];
  const std::int64_t rows = total / row_length;
  dispatch(n.dtype, [&]<class T>() {
    const T* a = source.node->result->as<T>();
    T* o = out.as<T>();
    parallel_for(rows, grain_for(row_length),
                 [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        // The source offset of the row's first element, without the gathered axis.
        std::int64_t base = 0, rest = row;
        for (std::size_t d = last; d-- > 0;) {
          if (d != axis) base += (rest % shape[d]) * strides[d];
          rest /= shape[d];
        }
        const std::int64_t* idx = indices.data + row * row_length;
        T* dst = o + row * row_length;
        if (axis == last) {
          for (std::int64_t j = 0; j < row_length; ++j) dst[j] = a[base + idx[j]];
        } else {
          const std::int64_t step = strides[axis];
          for (std::int64_t j = 0; j < row_length; ++j) dst[j] = a[base + idx[j] * step + j];
        }
      }
    });
  });
  return true;
}

bool run_scatter_add(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  const Shape& shape = n.inputs[1]->shape;  // the indices' shape, a prefix box of src's
  const std::size_t rank = shape.size();
  if (rank == 0 || rank != n.shape.size()) return false;
  const auto axis = static_cast<std::size_t>(n.attrs.axes[0]);
  const bool drop_negative = n.attrs.drop_negative;
  const std::int64_t total = shape_numel(shape);
  const Contiguous<std::int64_t> indices(k.inputs[1]);
  // Every index is checked before any is used (the reference kernel's message).
  for (std::int64_t i = 0; i < total; ++i) {
    const std::int64_t v = indices.data[i];
    if (!(v < 0 && drop_negative) && !index_in_range(v, n.shape[axis]))
      index_out_of_range(n, v, n.shape[axis]);
  }
  const auto out_strides = row_major_strides(n.shape);
  const auto src_strides = row_major_strides(n.inputs[2]->shape);
  const std::size_t last = rank - 1;
  const std::int64_t row_length = shape[last];
  dispatch(n.dtype, [&]<class T>() {
    T* o = out.as<T>();
    Source(*k.inputs[0].node->result, k.inputs[0].view).read(0, out.numel(), o, n.dtype);
    if (total == 0) return;
    const Contiguous<T> src(k.inputs[2]);
    // One row of indices at a time; rows may hit the same outputs, so this stays on one thread.
    for (std::int64_t row = 0; row < total / row_length; ++row) {
      std::int64_t from = 0, to = 0, rest = row;
      for (std::size_t d = last; d-- > 0;) {
        const std::int64_t m = rest % shape[d];
        rest /= shape[d];
        from += m * src_strides[d];
        if (d != axis) to += m * out_strides[d];
      }
      const std::int64_t* idx = indices.data + row * row_length;
      const T* values = src.data + from;
      for (std::int64_t j = 0; j < row_length; ++j) {
        if (idx[j] < 0) continue;  // dropped (checked above)
        T& dst = o[to + (axis == last ? idx[j] : idx[j] * out_strides[axis] + j)];
        dst = accumulate(dst, values[j]);
      }
    }
  });
  return true;
}

}  // namespace kiln::detail::cpu
