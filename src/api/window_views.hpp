// The two window primitives shared by the window ops and their gradients.
#pragma once

#include <string_view>
#include <vector>

#include "graph/node.hpp"
#include "kiln/tensor.hpp"

namespace kiln::detail {

// [counts..., window...]: every window of `a` (one entry per dimension) as a view.
Tensor window_view(std::string_view op, const Tensor& a, Shape window,
                   std::vector<std::int64_t> step, std::vector<std::int64_t> dilation);
// The adjoint of window_view: windows [counts..., window...] summed back into `shape`.
Tensor unwindow(const Tensor& windows, Shape shape, std::vector<std::int64_t> step,
                std::vector<std::int64_t> dilation);

// A conv2d/max_pool2d family node (see the op table) of `shape` over inputs a (and b, when
// defined), with stride (step), padding (start), dilation and, for pooling, window attributes.
Tensor window2d_node(Op op, Shape shape, const Tensor& a, const Tensor& b, const Attrs& attrs);

}  // namespace kiln::detail
