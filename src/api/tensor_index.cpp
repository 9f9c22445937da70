// Tensor::operator[] and Tensor::index: libtorch's index vocabulary as slice, squeeze, unsqueeze
// and index_select nodes.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "api/builder.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"
#include "kiln/tensor_index.hpp"

namespace kiln {

namespace {

constexpr std::int64_t kFar = std::numeric_limits<std::int64_t>::max();

// How many dimensions of the indexed tensor an entry consumes: a bool mask as many as it has.
int consumes(const TensorIndex& e) {
  if (const Tensor* t = std::get_if<Tensor>(&e.value()); t != nullptr && t->defined() &&
                                                         is_bool(t->dtype()))
    return t->rank();
  return std::holds_alternative<indexing::NoneIndex>(e.value()) ||
                 std::holds_alternative<indexing::EllipsisIndex>(e.value())
             ? 0
             : 1;
}

std::string describe(const Shape& shape, std::size_t entries) {
  return std::to_string(entries) + " indices for " + shape_to_string(shape);
}

// The single element position i of dimension `axis` of `r`, the dimension removed.
Tensor pick(const Tensor& r, int axis, std::int64_t i, const Shape& original) {
  const std::int64_t n = r.shape()[axis];
  if (i < -n || i >= n)
    detail::fail(ErrorCode::invalid_select, "index",
                 "index " + std::to_string(i) + " is out of range for dimension of size " +
                     std::to_string(n) + " of " + shape_to_string(original));
  const std::int64_t at = i < 0 ? i + n : i;
  return squeeze(slice_axis(r, axis, at, at + 1), axis);
}

Tensor range(const Tensor& r, int axis, const indexing::Slice& s) {
  const std::int64_t step = s.step();
  if (step == 0)
    detail::fail(ErrorCode::invalid_select, "index",
                 "slice step 0 in dimension " + std::to_string(axis) + " of " +
                     shape_to_string(r.shape()));
  // Unset bounds lie beyond either end; slice clamps them as Python does.
  const std::int64_t start = s.start().given() ? s.start().value() : (step > 0 ? 0 : kFar);
  const std::int64_t stop =
      s.stop().given() ? s.stop().value() : (step > 0 ? kFar : std::numeric_limits<std::int64_t>::min());
  return slice_axis(r, axis, start, stop, step);
}

// The slices named by an integer index tensor of any shape, its dimensions in place of `axis`.
Tensor select_by(const Tensor& r, int axis, const Tensor& indices) {
  detail::node_of(indices, "index");
  if (!is_integer(indices.dtype()))
    detail::fail(ErrorCode::wrong_type, "index",
                 std::string("an index tensor must have an integer type, got ") +
                     dtype_name(indices.dtype()) + " " + shape_to_string(indices.shape()));
  const Tensor picked = index_select(r, axis, flatten(indices));
  Shape shape(r.shape().begin(), r.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), r.shape().begin() + axis + 1, r.shape().end());
  return reshape(picked, shape);
}

// The slices where a bool mask over dimensions axis, ..., axis + mask.rank() - 1 of `r` is true,
// in row-major order, as one dimension (libtorch's x[mask]). Like nonzero, it evaluates the mask.
Tensor select_where(const Tensor& r, int axis, const Tensor& mask) {
  const Shape& s = r.shape();
  const auto first = s.begin() + axis;
  if (axis + mask.rank() > r.rank() || !std::equal(mask.shape().begin(), mask.shape().end(), first))
    detail::fail(ErrorCode::incompatible_shapes, "index",
                 "a bool mask of shape " + shape_to_string(mask.shape()) +
                     " does not match the dimensions from " + std::to_string(axis) + " of " +
                     shape_to_string(s));
  Shape flat(s.begin(), first);
  flat.push_back(mask.numel());
  flat.insert(flat.end(), first + mask.rank(), s.end());
  const Tensor positions = reshape(nonzero(reshape(mask, {-1})), {-1});
  return index_select(reshape(r, flat), axis, positions);
}

// Whether `from` broadcasts normally (aligned at the right) to `to`.
bool broadcast_fits(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const std::size_t lead = to.size() - from.size();
  for (std::size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[d + lead]) return false;
  return true;
}

}  // namespace

Tensor Tensor::operator[](std::int64_t i) const {
  const Tensor& self = *this;
  detail::node_of(self, "index");
  if (rank() == 0)
    detail::fail(ErrorCode::illegal_dimensionality, "index", "a 0-d tensor cannot be indexed");
  return pick(normal_broadcast(), 0, i, shape());
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(std::vector<TensorIndex>(indices));
}

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  detail::node_of(*this, "index");
  int consumed = 0, ellipses = 0;
  for (const TensorIndex& e : indices) {
    consumed += consumes(e);
    ellipses += std::holds_alternative<indexing::EllipsisIndex>(e.value()) ? 1 : 0;
  }
  if (ellipses > 1)
    detail::fail(ErrorCode::invalid_select, "index",
                 "more than one Ellipsis in " + describe(shape(), indices.size()));
  if (consumed > rank())
    detail::fail(ErrorCode::invalid_select, "index",
                 "too many indices: " + describe(shape(), indices.size()));
  Tensor r = normal_broadcast();
  int axis = 0;  // the dimension of r the next entry applies to
  for (const TensorIndex& e : indices) {
    std::visit(
        [&]<class T>(const T& v) {
          if constexpr (std::is_same_v<T, std::int64_t>) {
            r = pick(r, axis, v, shape());
          } else if constexpr (std::is_same_v<T, indexing::Slice>) {
            r = range(r, axis, v);
            ++axis;
          } else if constexpr (std::is_same_v<T, indexing::NoneIndex>) {
            r = kiln::unsqueeze(r, axis);
            ++axis;
          } else if constexpr (std::is_same_v<T, indexing::EllipsisIndex>) {
            axis += rank() - consumed;
          } else if (v.defined() && is_bool(v.dtype())) {
            r = select_where(r, axis, v);
            ++axis;
          } else {
            r = select_by(r, axis, v);
            axis += v.rank();
          }
        },
        e.value());
  }
  return r;
}

Tensor Tensor::index_put(std::initializer_list<TensorIndex> indices, const Tensor& values) const {
  return index_put(std::vector<TensorIndex>(indices), values);
}

Tensor Tensor::index_put(std::initializer_list<TensorIndex> indices, Scalar value) const {
  return index_put(std::vector<TensorIndex>(indices),
                   kiln::scalar(value, detail::node_of(*this, "index_put")->dtype));
}

Tensor Tensor::index_put(const std::vector<TensorIndex>& indices, const Tensor& values) const {
  detail::node_of(*this, "index_put");
  detail::node_of(values, "index_put");
  // The flat positions the index names, found by indexing the positions themselves; the new
  // values are then scattered there.
  const Tensor positions = kiln::reshape(kiln::arange(numel()), shape()).index(indices);
  const Tensor typed = values.dtype() == dtype() ? values : kiln::convert(values, dtype());
  if (!broadcast_fits(typed.shape(), positions.shape()))
    detail::fail(ErrorCode::incompatible_shapes, "index_put",
                 "values of shape " + shape_to_string(values.shape()) +
                     " do not broadcast to the indexed shape " +
                     shape_to_string(positions.shape()) + " of " + shape_to_string(shape()));
  const Tensor spread = kiln::broadcast_to(typed.normal_broadcast(), positions.shape());
  const Tensor flat = kiln::index_set(kiln::flatten(*this), kiln::flatten(spread),
                                      kiln::flatten(positions));
  return kiln::reshape(flat, shape());
}

Tensor Tensor::clone() const {
  detail::node_of(*this, "clone");
  return kiln::contiguous(*this);
}

Tensor Tensor::flatten(int start_dim, int end_dim) const {
  return kiln::flatten(*this, start_dim, end_dim);
}
Tensor Tensor::t() const { return kiln::t(*this); }
Tensor Tensor::expand(Shape shape) const { return kiln::expand(*this, std::move(shape)); }

Tensor& operator+=(Tensor& a, const Tensor& b) { return a = a + b; }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a = a - b; }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a = a * b; }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a = a / b; }
Tensor& operator+=(Tensor& a, Scalar b) { return a = a + b; }
Tensor& operator-=(Tensor& a, Scalar b) { return a = a - b; }
Tensor& operator*=(Tensor& a, Scalar b) { return a = a * b; }
Tensor& operator/=(Tensor& a, Scalar b) { return a = a / b; }

}  // namespace kiln
