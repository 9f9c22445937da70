// Geometry of the 2-D convolution and pooling ops (NCHW), shared by their kernels.
#pragma once

#include <cstdint>
#include <utility>

#include "graph/node.hpp"

namespace kiln::detail {

struct Window2d {
  std::int64_t n, c, h, w;      // input
  std::int64_t o, oh, ow;       // output channels (conv) and spatial size
  std::int64_t kh, kw;          // window
  std::int64_t sh, sw, ph, pw, dh, dw;

  // Input row/column of output position i and window offset k.
  std::int64_t row(std::int64_t i, std::int64_t k) const { return i * sh - ph + k * dh; }
  std::int64_t col(std::int64_t j, std::int64_t k) const { return j * sw - pw + k * dw; }
  // The window offsets [first, end) of output row i (column j) that land inside the input, so
  // that a window far larger than the input costs what its overlap does.
  std::pair<std::int64_t, std::int64_t> rows_inside(std::int64_t i) const {
    return inside(row(i, 0), dh, kh, h);
  }
  std::pair<std::int64_t, std::int64_t> cols_inside(std::int64_t j) const {
    return inside(col(j, 0), dw, kw, w);
  }
  static std::pair<std::int64_t, std::int64_t> inside(std::int64_t base, std::int64_t step,
                                                      std::int64_t count, std::int64_t size) {
    const std::int64_t first = base >= 0 ? 0 : (-(base + 1)) / step + 1;
    const std::int64_t end = base >= size ? 0 : (size - 1 - base) / step + 1;
    const std::int64_t clipped = end < count ? end : count;
    return {first, first < clipped ? clipped : first};
  }
};

// From a node of the window2d kind: the input is [N,C,H,W]; conv weights [O,C,kH,kW].
Window2d window2d_of(const Node& n);

}  // namespace kiln::detail
