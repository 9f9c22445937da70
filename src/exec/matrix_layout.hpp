// How an operand of a matrix product lies in memory, in the terms BLAS libraries take (a
// leading dimension, a transposition flag, an offset and a stride per batch dimension), so that
// every backend hands its library (OpenBLAS and oneDNN on the CPU, CLBlast on OpenCL) operands
// read through transposing or batch-broadcasting views without copying them first.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "exec/fusion.hpp"

namespace kiln::detail {

// A stack of matrices: element (b, i, j) is at
// offset + sum(batch index * batch stride) + i * row stride + j * column stride of the buffer,
// where one of the two strides is 1 and the other is `ld`.
struct MatrixLayout {
  std::int64_t offset = 0;
  std::vector<std::int64_t> batch_strides;
  bool transposed = false;  // stored column-major (the row stride is 1)
  std::int64_t ld = 1;      // the leading dimension
};

// The layout of the operand `in` (its node's buffer, through its view) read as `shape` of type
// `type`, when a library can take it as it is: the buffer holds `type`, and the view is none,
// the identity or one strided layer without padding whose last two strides are 1 and a whole row
// or column. Otherwise none: the operand must be copied (or computed another way) first.
std::optional<MatrixLayout> library_layout(const KernelInput& in, const Shape& shape, DType type);

// The layout of a contiguous row-major stack of `shape`.
MatrixLayout row_major_layout(const Shape& shape);

// A batch index's offset in the layout's buffer (batch index in row-major order over `batch`).
std::int64_t batch_offset(const MatrixLayout& layout, const Shape& batch, std::int64_t index);

// The one stride that steps through all of a layout's batches in order, when there is one (a
// plain stack, or every batch dimension broadcast): a strided-batched library call takes it.
std::optional<std::int64_t> single_batch_stride(const MatrixLayout& layout, const Shape& batch);

}  // namespace kiln::detail
