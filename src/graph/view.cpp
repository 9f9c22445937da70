#include "graph/view.hpp"

#include <optional>

#include "graph/shape_math.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

namespace {
[[noreturn]] void too_large(const Shape& shape) {
  throw Error(ErrorCode::out_of_memory, "shape " + shape_to_string(shape) + " is too large");
}
}  // namespace

// Node shapes never overflow here (see shape_math.hpp); the checks keep a caller that passes an
// unchecked shape from computing with a wrapped-around value.
std::vector<std::int64_t> row_major_strides(const Shape& shape) {
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    if (__builtin_mul_overflow(s, shape[i], &s)) too_large(shape);
  }
  return strides;
}

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape)
    if (__builtin_mul_overflow(n, d, &n)) too_large(shape);
  return n;
}

Checked checked_numel(const Shape& shape) {
  std::int64_t nonzero = 1;
  bool empty = false;
  for (auto d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (nonzero > kMaxElements / d) return std::nullopt;
    nonzero *= d;
  }
  return empty ? 0 : nonzero;
}

ViewMap ViewMap::identity(const Shape& shape) {
  ViewMap m;
  m.layers_.push_back(ViewLayer{shape, row_major_strides(shape), 0, {}, {}});
  return m;
}

bool ViewMap::is_identity() const {
  if (layers_.size() != 1) return false;
  const ViewLayer& l = layers_[0];
  if (!l.valid.empty() || l.offset != 0) return false;
  auto rm = row_major_strides(l.shape);
  for (std::size_t d = 0; d < l.shape.size(); ++d)
    if (l.shape[d] != 1 && l.strides[d] != rm[d]) return false;
  return true;
}

ViewMap ViewMap::with_plain_top() const {
  if (layers_.back().valid.empty()) return *this;
  ViewMap m = *this;
  const Shape& s = shape();
  m.layers_.push_back(ViewLayer{s, row_major_strides(s), 0, {}, {}});
  return m;
}

namespace {
// Strides that let `new_shape` read the same elements as (old_shape, old_strides) in row-major
// order, when strides can express it (the rule of PyTorch's view()).
std::optional<std::vector<std::int64_t>> restride(const Shape& old_shape,
                                                  const std::vector<std::int64_t>& old_strides,
                                                  const Shape& new_shape) {
  std::vector<std::int64_t> out(new_shape.size(), 0);
  if (shape_numel(old_shape) == 0) return row_major_strides(new_shape);
  if (old_shape.empty()) return out;  // one element: any strides work
  std::int64_t view_d = static_cast<std::int64_t>(new_shape.size()) - 1;
  std::int64_t chunk_stride = old_strides.back();
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (std::int64_t d = static_cast<std::int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    // Strides of hostile views can be far outside any buffer: a product that overflows ends a
    // chunk, and a new stride that would overflow makes the reshape a copy instead of a view.
    std::int64_t contiguous_stride = 0;
    const bool chunk_ends =
        d == 0 ||
        (old_shape[d - 1] != 1 &&
         (__builtin_mul_overflow(tensor_numel, chunk_stride, &contiguous_stride) ||
          old_strides[d - 1] != contiguous_stride));
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      if (__builtin_mul_overflow(view_numel, chunk_stride, &out[view_d])) return std::nullopt;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}
}  // namespace

ViewMap ViewMap::reshape(const Shape& new_shape) const {
  ViewMap m = *this;
  ViewLayer& top = m.layers_.back();
  if (top.valid.empty()) {
    if (auto strides = restride(top.shape, top.strides, new_shape)) {
      top.shape = new_shape;
      top.strides = *strides;
      return m;
    }
  }
  m.layers_.push_back(ViewLayer{new_shape, row_major_strides(new_shape), 0, {}, {}});
  return m;
}

ViewMap ViewMap::permute(const std::vector<int>& perm) const {
  ViewMap m = *this;
  ViewLayer& top = m.layers_.back();
  ViewLayer old = top;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    top.shape[i] = old.shape[perm[i]];
    top.strides[i] = old.strides[perm[i]];
    if (!old.valid.empty()) top.valid[i] = old.valid[perm[i]];
  }
  return m;
}

ViewMap ViewMap::slice(const std::vector<std::int64_t>& start,
                       const std::vector<std::int64_t>& step, const Shape& count) const {
  ViewMap m = with_plain_top();
  ViewLayer& top = m.layers_.back();
  for (std::size_t d = 0; d < count.size(); ++d) {
    if (count[d] > 0) top.offset += start[d] * top.strides[d];
    // The step matters only between two kept positions, where it stays inside the dimension;
    // one or none kept (a step of INT64_MAX, say) keeps the stride from overflowing.
    if (count[d] > 1) top.strides[d] *= step[d];
    top.shape[d] = count[d];
  }
  return m;
}

ViewMap ViewMap::pad(const std::vector<std::int64_t>& before,
                     const std::vector<std::int64_t>& after, Scalar fill) const {
  ViewMap m = with_plain_top();
  ViewLayer& top = m.layers_.back();
  // The offset moves back by `before` positions. A stride stretched by slicing can make that
  // leave int64_t; over a fresh row-major layer it cannot, since the padded shape is bounded.
  Checked offset = top.offset;
  for (std::size_t d = 0; d < top.shape.size(); ++d)
    offset = checked_sub(offset, checked_mul(before[d], top.strides[d]));
  if (!offset) {
    const Shape& s = shape();
    m.layers_.push_back(ViewLayer{s, row_major_strides(s), 0, {}, {}});
    offset = 0;
    for (std::size_t d = 0; d < s.size(); ++d)
      offset = checked_sub(offset, checked_mul(before[d], m.layers_.back().strides[d]));
  }
  ViewLayer& padded = m.layers_.back();
  padded.valid.resize(padded.shape.size());
  for (std::size_t d = 0; d < padded.shape.size(); ++d) {
    padded.valid[d] = {before[d], before[d] + padded.shape[d]};
    padded.shape[d] += before[d] + after[d];
  }
  padded.offset = value_or_fail(offset, ErrorCode::internal_error, "pad", [&] {
    return "the offset of padding " + shape_to_string(shape()) + " overflows";
  });
  padded.fill = fill;
  return m;
}

ViewMap ViewMap::broadcast(const Shape& shape, bool inverse) const {
  ViewMap m = *this;
  ViewLayer& top = m.layers_.back();
  const ViewLayer old = top;
  const std::size_t lead = inverse ? 0 : shape.size() - old.shape.size();
  top.shape = shape;
  top.strides.assign(shape.size(), 0);
  if (!old.valid.empty()) top.valid.assign(shape.size(), {0, 0});
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const bool mapped = d >= lead && d - lead < old.shape.size();
    if (!mapped) {
      if (!old.valid.empty()) top.valid[d] = {0, shape[d]};
      continue;
    }
    const std::size_t o = d - lead;
    if (old.shape[o] == shape[d]) {
      top.strides[d] = old.strides[o];
      if (!old.valid.empty()) top.valid[d] = old.valid[o];
    } else if (!old.valid.empty()) {  // a size-1 dimension repeated: valid everywhere or nowhere
      const bool ok = old.valid[o].first <= 0 && old.valid[o].second > 0;
      top.valid[d] = ok ? std::pair<std::int64_t, std::int64_t>{0, shape[d]}
                        : std::pair<std::int64_t, std::int64_t>{0, 0};
    }
  }
  return m;
}

ViewMap ViewMap::windows(const Shape& window, const std::vector<std::int64_t>& step,
                         const std::vector<std::int64_t>& dilation, const Shape& counts) const {
  ViewMap m = with_plain_top();
  ViewLayer& top = m.layers_.back();
  const std::size_t rank = window.size();
  Shape shape(counts);
  shape.insert(shape.end(), window.begin(), window.end());
  std::vector<std::int64_t> strides(2 * rank);
  // A step (dilation) matters only between two windows (window elements), where it stays inside
  // the dimension; with one of them a huge step cannot overflow the stride.
  for (std::size_t d = 0; d < rank; ++d) {
    strides[d] = counts[d] > 1 ? top.strides[d] * step[d] : top.strides[d];
    strides[rank + d] = window[d] > 1 ? top.strides[d] * dilation[d] : top.strides[d];
  }
  top.shape = std::move(shape);
  top.strides = std::move(strides);
  return m;
}

bool ViewMap::locate(std::int64_t position, std::int64_t* base_position,
                     const Scalar** fill) const {
  thread_local std::vector<std::int64_t> index;
  std::int64_t pos = position;
  for (std::size_t k = layers_.size(); k-- > 0;) {
    const ViewLayer& l = layers_[k];
    const std::size_t rank = l.shape.size();
    index.resize(rank);
    for (std::size_t d = rank; d-- > 0;) {
      index[d] = pos % l.shape[d];
      pos /= l.shape[d];
    }
    std::int64_t next = l.offset;
    for (std::size_t d = 0; d < rank; ++d) {
      if (!l.valid.empty() && (index[d] < l.valid[d].first || index[d] >= l.valid[d].second)) {
        *fill = &l.fill;
        return false;
      }
      next += index[d] * l.strides[d];
    }
    pos = next;
  }
  *base_position = pos;
  return true;
}

}  // namespace kiln::detail
