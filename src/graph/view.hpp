// ViewMap: the composed index map of a chain of view ops (reshape, permute, slice, pad,
// broadcast) from a view's elements to the elements of the buffer it reads. Views never copy.
//
// A map is a stack of strided layers. The bottom layer indexes the base buffer; each layer above
// indexes the row-major positions of the layer below. A layer may carry a valid range per
// dimension: positions outside it read the layer's fill value (padding). Ops fold into the top
// layer whenever strides can express the result, and push a new layer otherwise (for example a
// reshape across a permutation), so any chain of views stays one map.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/types.hpp"

namespace kiln::detail {

struct ViewLayer {
  Shape shape;
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> valid;  // empty: everything is valid
  Scalar fill;
};

class ViewMap {
 public:
  static ViewMap identity(const Shape& shape);

  const Shape& shape() const { return layers_.back().shape; }
  const std::vector<ViewLayer>& layers() const { return layers_; }
  bool is_identity() const;

  // Each returns the map of the view op applied on top of this one. Arguments are validated by
  // the caller.
  ViewMap reshape(const Shape& shape) const;
  ViewMap permute(const std::vector<int>& perm) const;
  // Dimension d keeps `count[d]` positions start[d] + j * step[d].
  ViewMap slice(const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& step,
                const Shape& count) const;
  ViewMap pad(const std::vector<std::int64_t>& before, const std::vector<std::int64_t>& after,
              Scalar fill) const;
  // To `shape`, aligning dimensions at the right (normal) or at the left (inverse).
  ViewMap broadcast(const Shape& shape, bool inverse) const;
  // All windows of `window` elements (spaced `dilation` apart) at every `step` in every
  // dimension: shape [counts..., window...], where counts[d] windows fit dimension d.
  ViewMap windows(const Shape& window, const std::vector<std::int64_t>& step,
                  const std::vector<std::int64_t>& dilation, const Shape& counts) const;

  // The base buffer position of the element at row-major `position` of the view, or false when
  // the element is padding, with `*fill` set to its value.
  bool locate(std::int64_t position, std::int64_t* base_position, const Scalar** fill) const;

 private:
  ViewMap with_plain_top() const;  // pushes a mask-free identity layer if the top has a mask
  std::vector<ViewLayer> layers_;
};

std::vector<std::int64_t> row_major_strides(const Shape& shape);
std::int64_t shape_numel(const Shape& shape);

}  // namespace kiln::detail
