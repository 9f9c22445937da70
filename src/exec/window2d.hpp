// Geometry of the 2-D convolution and pooling ops (NCHW), shared by their kernels.
#pragma once

#include <cstdint>

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
};

// From a node of the window2d kind: the input is [N,C,H,W]; conv weights [O,C,kH,kW].
Window2d window2d_of(const Node& n);

}  // namespace kiln::detail
