// The geometry of a reduction over a block of adjacent axes, which every backend's reduction
// kernels share: the input is [outer, reduced, inner] in row-major order, each output reduces
// `reduced` values spaced `inner` apart. The same geometry for one axis (AxisLines) serves the
// ops that work along lines: scans and sorting.
#pragma once

#include <cstdint>

#include "graph/node.hpp"

namespace kiln::detail {

// The block of node `n`'s reduced axes over an input of shape `in`; false when the axes are not
// adjacent (the scheduler then fuses nothing into the reduction).
inline bool as_block(const Node& n, const Shape& in, std::int64_t& outer, std::int64_t& reduced,
                     std::int64_t& inner) {
  const auto& axes = n.attrs.axes;
  for (std::size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return false;
  outer = reduced = inner = 1;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(in.size()); ++d) {
    if (!axes.empty() && d < axes.front()) outer *= in[d];
    else if (!axes.empty() && d <= axes.back()) reduced *= in[d];
    else inner *= in[d];
  }
  return true;
}

// Node `n`'s lines along attrs.axes[0]: `outer` blocks of `len` positions `inner` apart.
struct AxisLines {
  std::int64_t outer = 1, len = 1, inner = 1;
  explicit AxisLines(const Node& n) {
    const auto axis = static_cast<std::size_t>(n.attrs.axes[0]);
    for (std::size_t d = 0; d < axis; ++d) outer *= n.shape[d];
    for (std::size_t d = axis + 1; d < n.shape.size(); ++d) inner *= n.shape[d];
    len = n.shape[axis];
  }
  // The row-major position of element j of the line (i, k).
  std::int64_t at(std::int64_t i, std::int64_t k, std::int64_t j) const {
    return (i * len + j) * inner + k;
  }
};

}  // namespace kiln::detail
