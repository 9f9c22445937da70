// Reference kernels whose addressing depends on data or on user code: gather, scatter_add,
// unwindow (the adjoint of the windows view) and the custom kernels.
#include <type_traits>

#include "exec/operand.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/semantics/indexing.hpp"
#include "graph/custom_kernel.hpp"

namespace kiln::detail {

namespace {

std::vector<std::int64_t> unravel(std::int64_t position, const Shape& shape) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = position % shape[d];
    position /= shape[d];
  }
  return index;
}

std::int64_t checked_index(const Node& n, const Operand& indices, std::int64_t position,
                           std::int64_t size) {
  const auto k = indices.get<std::int64_t>(position);
  if (!index_in_range(k, size)) index_out_of_range(n, k, size);
  return k;
}

void gather_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const Operand indices = Operand::of(*n.inputs[1]);
  const auto axis = static_cast<std::size_t>(n.attrs.axes[0]);
  const auto strides = row_major_strides(a.shape);
  dispatch_with_complex(n.dtype, [&]<class T>() {
    T* o = out.as<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      auto m = unravel(i, indices.shape);
      m[axis] = checked_index(n, indices, i, a.shape[axis]);
      std::int64_t source = 0;
      for (std::size_t d = 0; d < m.size(); ++d) source += m[d] * strides[d];
      o[i] = a.get<T>(source);
    }
  });
}

void scatter_add_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const Operand indices = Operand::of(*n.inputs[1]);
  const Operand src = Operand::of(*n.inputs[2]);
  const auto axis = static_cast<std::size_t>(n.attrs.axes[0]);
  const bool drop_negative = n.attrs.drop_negative;
  const auto out_strides = row_major_strides(n.shape);
  const auto src_strides = row_major_strides(src.shape);
  dispatch_with_complex(n.dtype, [&]<class T>() {
    T* o = out.as<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = a.get<T>(i);
    const std::int64_t count = shape_numel(indices.shape);
    for (std::int64_t i = 0; i < count; ++i) {
      auto m = unravel(i, indices.shape);
      std::int64_t from = 0;
      for (std::size_t d = 0; d < m.size(); ++d) from += m[d] * src_strides[d];
      if (drop_negative && indices.get<std::int64_t>(i) < 0) continue;
      m[axis] = checked_index(n, indices, i, n.shape[axis]);
      std::int64_t to = 0;
      for (std::size_t d = 0; d < m.size(); ++d) to += m[d] * out_strides[d];
      o[to] = accumulate(o[to], src.get<T>(from));
    }
  });
}

void unwindow_kernel(const Node& n, Buffer& out) {
  const Operand w = Operand::of(*n.inputs[0]);
  const std::size_t rank = n.shape.size();
  const auto out_strides = row_major_strides(n.shape);
  dispatch_with_complex(n.dtype, [&]<class T>() {
    T* o = out.as<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = T{0};
    const std::int64_t count = shape_numel(w.shape);
    for (std::int64_t i = 0; i < count; ++i) {
      const auto m = unravel(i, w.shape);  // [window position..., element in window...]
      std::int64_t to = 0;
      for (std::size_t d = 0; d < rank; ++d)
        to += (m[d] * n.attrs.step[d] + m[rank + d] * n.attrs.dilation[d]) * out_strides[d];
      o[to] = accumulate(o[to], w.get<T>(i));
    }
  });
}

void custom_map_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const auto& f = n.attrs.custom->element;
  dispatch(n.dtype, [&]<class T>() {
    T* o = out.as<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = static_cast<T>(f(a.get<double>(i)));
  });
}

void custom_reduce_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const std::int64_t width = a.shape.back(), k = n.attrs.custom->outputs;
  const std::int64_t rows = shape_numel(Shape(n.shape.begin(), n.shape.end() - 1));
  std::vector<double> row(static_cast<std::size_t>(width)), results(static_cast<std::size_t>(k));
  dispatch(n.dtype, [&]<class T>() {
    T* o = out.as<T>();
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < width; ++j) row[j] = a.get<double>(r * width + j);
      std::fill(results.begin(), results.end(), 0.0);
      n.attrs.custom->rows(row, results);
      for (std::int64_t j = 0; j < k; ++j) o[r * k + j] = static_cast<T>(results[j]);
    }
  });
}

}  // namespace

void run_reference_indexing_kernel(const Node& n, Buffer& out) {
  switch (n.op) {
    case Op::gather: return gather_kernel(n, out);
    case Op::scatter_add: return scatter_add_kernel(n, out);
    case Op::unwindow: return unwindow_kernel(n, out);
    case Op::custom_map: return custom_map_kernel(n, out);
    case Op::custom_reduce: return custom_reduce_kernel(n, out);
    default: break;
  }
  throw Error(ErrorCode::internal_error,
              std::string(n.info().name) + ": no reference kernel for this op");
}

}  // namespace kiln::detail
