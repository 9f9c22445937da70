// User-defined elementwise and row kernels as graph nodes.
#include "api/builder.hpp"
#include "graph/custom_kernel.hpp"
#include "kiln/custom.hpp"

namespace kiln {

Tensor map_elements(const Tensor& a, ElementFunction f, ElementFunction derivative) {
  detail::node_of(a, "map_elements");
  if (!f) detail::fail(ErrorCode::invalid_select, "map_elements", "empty function");
  auto kernel = std::make_shared<detail::CustomKernel>();
  kernel->element = std::move(f);
  kernel->derivative = std::move(derivative);
  detail::Attrs attrs;
  attrs.custom = std::move(kernel);
  return detail::make_node(detail::Op::custom_map,
                           detail::result_type(detail::Op::custom_map, a.dtype()), a.shape(),
                           {a.node()}, std::move(attrs));
}

Tensor reduce_rows(const Tensor& a, std::int64_t k, RowFunction f) {
  detail::node_of(a, "reduce_rows");
  if (!f) detail::fail(ErrorCode::invalid_select, "reduce_rows", "empty function");
  if (a.rank() < 1)
    detail::fail(ErrorCode::illegal_dimensionality, "reduce_rows",
                 "needs at least one dimension, got " + shape_to_string(a.shape()));
  if (k < 0)
    detail::fail(ErrorCode::illegal_dimension, "reduce_rows",
                 "negative result count " + std::to_string(k));
  auto kernel = std::make_shared<detail::CustomKernel>();
  kernel->rows = std::move(f);
  kernel->outputs = k;
  detail::Attrs attrs;
  attrs.custom = std::move(kernel);
  Shape shape = a.shape();
  shape.back() = k;
  return detail::make_node(detail::Op::custom_reduce,
                           detail::result_type(detail::Op::custom_reduce, a.dtype()),
                           std::move(shape), {a.node()}, std::move(attrs));
}

}  // namespace kiln
