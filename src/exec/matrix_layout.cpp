#include "exec/matrix_layout.hpp"

#include <algorithm>

#include "graph/node.hpp"

namespace kiln::detail {

MatrixLayout row_major_layout(const Shape& shape) {
  MatrixLayout m;
  const auto strides = row_major_strides(shape);
  m.batch_strides.assign(strides.begin(), strides.end() - 2);
  m.ld = std::max<std::int64_t>(1, shape.back());
  return m;
}

std::optional<MatrixLayout> library_layout(const KernelInput& in, const Shape& shape, DType type) {
  const Buffer& base = *in.node->result;
  if (base.dtype() != type) return std::nullopt;
  const ViewMap* view = in.view;
  if (view == nullptr || view->is_identity()) return row_major_layout(shape);
  if (view->layers().size() != 1 || !view->layers()[0].valid.empty()) return std::nullopt;
  const ViewLayer& l = view->layers()[0];
  const std::size_t rank = shape.size();
  const std::int64_t rows = shape[rank - 2], cols = shape[rank - 1];
  // The stride of a dimension of size 1 is never used: give it the value libraries accept.
  const std::int64_t rs = rows == 1 ? cols : l.strides[rank - 2];
  const std::int64_t cs = cols == 1 ? rows : l.strides[rank - 1];
  // One of the two strides must be 1 and the other cover a whole row (column).
  const bool row_major = cs == 1 && rs >= cols;
  const bool column_major = !row_major && rs == 1 && cs >= rows;
  if (!row_major && !column_major) return std::nullopt;
  MatrixLayout m;
  m.offset = l.offset;
  m.batch_strides.assign(l.strides.begin(), l.strides.end() - 2);
  m.transposed = column_major;
  m.ld = std::max<std::int64_t>(1, column_major ? cs : rs);
  return m;
}

std::int64_t batch_offset(const MatrixLayout& layout, const Shape& batch, std::int64_t index) {
  std::int64_t offset = layout.offset;
  for (std::size_t d = batch.size(); d-- > 0;) {
    offset += (index % batch[d]) * layout.batch_strides[d];
    index /= batch[d];
  }
  return offset;
}

std::optional<std::int64_t> single_batch_stride(const MatrixLayout& layout, const Shape& batch) {
  // Dimensions of size 1 take no steps; the others must nest: stride[d] = stride[d+1] * size[d+1].
  std::optional<std::int64_t> inner;  // the stride of the innermost dimension that moves
  std::int64_t span = 0;              // what the inner dimensions cover
  for (std::size_t d = batch.size(); d-- > 0;) {
    if (batch[d] == 1) continue;
    const std::int64_t s = layout.batch_strides[d];
    if (!inner) {
      inner = s;
      span = s * batch[d];
    } else if (s == span) {
      span = s * batch[d];
    } else {
      return std::nullopt;
    }
  }
  return inner.value_or(0);
}

}  // namespace kiln::detail
