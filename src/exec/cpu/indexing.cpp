#include "exec/cpu/indexing.hpp"

#include <algorithm>

#include "exec/cpu/source.hpp"
#include "exec/cpu/thread_pool.hpp"
#include "exec/operand.hpp"

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
    if (*bad < 0 || *bad >= from[axis])
      throw Error(ErrorCode::invalid_select,
                  std::string(n.info().name) + ": index " + std::to_string(*bad) +
                      " out of range for a dimension of size " + std::to_string(from[axis]));

  const auto strides = row_major_strides(from);
  const std::size_t last = rank - 1;
  const std::int64_t row_length = shape[last];
  const std::int64_t rows = total / row_length;
  dispatch(n.dtype, [&]<class T>() {
    const T* a = source.node->result->as<T>();
    T* o = out.as<T>();
    parallel_for(rows, std::max<std::int64_t>(1, 4096 / row_length),
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

}  // namespace kiln::detail::cpu
