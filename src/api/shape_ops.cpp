// Shape ops. All are views (index maps, no copy) except concat and contiguous; the composite
// ones (extend, repeat, expand, squeeze, ...) are built from the five view primitives.
#include <algorithm>

#include "api/builder.hpp"
#include "graph/shape_math.hpp"
#include "kiln/ops.hpp"

namespace kiln {

using detail::Op;
using I64s = std::vector<std::int64_t>;

Tensor reshape(const Tensor& a, Shape shape) {
  detail::node_of(a, "reshape");
  int inferred = -1;
  std::int64_t known = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && inferred < 0) {
      inferred = static_cast<int>(d);
    } else if (shape[d] < 0) {
      detail::fail(ErrorCode::incompatible_shapes, "reshape",
                   "cannot reshape " + shape_to_string(a.shape()) + " to " +
                       shape_to_string(shape) + " (one -1 at most, no other negative sizes)");
    } else if (shape[d] != 0 && known > (std::int64_t{1} << 62) / shape[d]) {
      known = -1;  // more elements than any tensor can hold: cannot match
      break;
    } else {
      known *= shape[d];
    }
  }
  const std::int64_t n = a.numel();
  if (inferred >= 0 && known > 0 && n % known == 0) shape[inferred] = n / known;
  if (known < 0 || (inferred >= 0 && shape[inferred] == -1) ||
      detail::shape_numel(shape) != n)
    detail::fail(ErrorCode::incompatible_shapes, "reshape",
                 "cannot reshape " + shape_to_string(a.shape()) + " (" + std::to_string(n) +
                     " elements) to " + shape_to_string(shape));
  Shape target = shape;
  return detail::make_view(Op::reshape, a, std::move(shape), {},
                           [&](const detail::ViewMap& m) { return m.reshape(target); });
}

Tensor flatten(const Tensor& a) { return reshape(a, {-1}); }

Tensor flatten(const Tensor& a, int start_dim, int end_dim) {
  detail::node_of(a, "flatten");
  // A 0-d tensor counts as having one dimension, as in libtorch.
  const int rank = std::max(a.rank(), 1);
  const int first = detail::normalize_axis("flatten", start_dim, rank, a.shape());
  const int last = detail::normalize_axis("flatten", end_dim, rank, a.shape());
  if (first > last)
    detail::fail(ErrorCode::illegal_dimension, "flatten",
                 "start dimension " + std::to_string(start_dim) + " comes after end dimension " +
                     std::to_string(end_dim) + " of " + shape_to_string(a.shape()));
  if (a.rank() == 0) return reshape(a, {1});
  Shape s(a.shape().begin(), a.shape().begin() + first);
  std::int64_t merged = 1;
  for (int d = first; d <= last; ++d) merged *= a.shape()[d];
  s.push_back(merged);
  s.insert(s.end(), a.shape().begin() + last + 1, a.shape().end());
  return reshape(a, s);
}

Tensor flatten_dimension(const Tensor& a, int axis) {
  detail::node_of(a, "flatten_dimension");
  const int rank = a.rank();
  const int ax = detail::normalize_axis("flatten_dimension", axis, rank, a.shape());
  if (ax == 0)
    detail::fail(ErrorCode::illegal_dimension, "flatten_dimension",
                 "dimension 0 of " + shape_to_string(a.shape()) + " has no dimension before it");
  Shape s = a.shape();
  s[ax - 1] *= s[ax];
  s.erase(s.begin() + ax);
  return reshape(a, s);
}

Tensor permute(const Tensor& a, std::vector<int> perm) {
  detail::node_of(a, "permute");
  const int rank = a.rank();
  detail::check_arity("permute", perm.size(), a.shape(), "permutation");
  std::vector<bool> seen(perm.size(), false);
  for (int& p : perm) {
    p = detail::normalize_axis("permute", p, rank, a.shape());
    if (seen[p])
      detail::fail(ErrorCode::illegal_dimension, "permute",
                   "dimension " + std::to_string(p) + " appears twice in the permutation of " +
                       shape_to_string(a.shape()));
    seen[p] = true;
  }
  Shape shape(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) shape[i] = a.shape()[perm[i]];
  detail::Attrs attrs;
  attrs.axes.assign(perm.begin(), perm.end());
  return detail::make_view(Op::permute, a, std::move(shape), std::move(attrs),
                           [&](const detail::ViewMap& m) { return m.permute(perm); });
}

Tensor reverse_dims(const Tensor& a) {
  detail::node_of(a, "reverse_dims");
  std::vector<int> perm(a.rank());
  for (int i = 0; i < a.rank(); ++i) perm[i] = a.rank() - 1 - i;
  return permute(a, perm);
}

Tensor t(const Tensor& a) {
  detail::node_of(a, "t");
  if (a.rank() > 2)
    detail::fail(ErrorCode::illegal_dimensionality, "t",
                 "needs a tensor of at most 2 dimensions, got " + shape_to_string(a.shape()) +
                     " (use transpose(a, d0, d1) or permute)");
  return a.rank() < 2 ? a : transpose(a, 0, 1);
}

Tensor transpose(const Tensor& a, int axis_a, int axis_b) {
  detail::node_of(a, "transpose");
  const int x = detail::normalize_axis("transpose", axis_a, a.rank(), a.shape());
  const int y = detail::normalize_axis("transpose", axis_b, a.rank(), a.shape());
  std::vector<int> perm(a.rank());
  for (int i = 0; i < a.rank(); ++i) perm[i] = i;
  std::swap(perm[x], perm[y]);
  return permute(a, perm);
}

Tensor slice(const Tensor& a, I64s start, I64s stop, I64s step) {
  detail::node_of(a, "slice");
  const Shape& in = a.shape();
  detail::check_arity("slice", start.size(), in, "start");
  detail::check_arity("slice", stop.size(), in, "stop");
  detail::check_arity("slice", step.size(), in, "step");
  Shape count(in.size());
  for (std::size_t d = 0; d < in.size(); ++d) {
    const std::int64_t n = in[d], s = step[d];
    if (s == 0)
      detail::fail(ErrorCode::invalid_select, "slice",
                   "step 0 in dimension " + std::to_string(d) + " of " + shape_to_string(in));
    std::int64_t b = start[d] < 0 ? start[d] + n : start[d];
    std::int64_t e = stop[d] < 0 ? stop[d] + n : stop[d];
    // Python's clamping: forwards within [0, n], backwards within [-1, n - 1].
    const std::int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? n : n - 1;
    b = std::clamp(b, lo, hi);
    e = std::clamp(e, lo, hi);
    // ceil(distance / |s|), in unsigned arithmetic: a step of INT64_MAX or INT64_MIN keeps one
    // element, as in Python, where e - b + s - 1 or -s would overflow.
    const std::int64_t distance = s > 0 ? e - b : b - e;
    const std::uint64_t stride = s > 0 ? static_cast<std::uint64_t>(s)
                                       : std::uint64_t{0} - static_cast<std::uint64_t>(s);
    count[d] = distance <= 0 ? 0
                             : static_cast<std::int64_t>(
                                   (static_cast<std::uint64_t>(distance) - 1) / stride + 1);
    start[d] = b;
  }
  detail::Attrs attrs;
  attrs.start = start;
  attrs.step = step;
  Shape shape = count;
  return detail::make_view(Op::slice, a, std::move(shape), std::move(attrs),
                           [&](const detail::ViewMap& m) { return m.slice(start, step, count); });
}

Tensor slice(const Tensor& a, I64s start, I64s stop) {
  detail::node_of(a, "slice");
  return slice(a, std::move(start), std::move(stop), I64s(a.shape().size(), 1));
}

Tensor slice_axis(const Tensor& a, int axis, std::int64_t start, std::int64_t stop,
                  std::int64_t step) {
  detail::node_of(a, "slice");
  const int ax = detail::normalize_axis("slice", axis, a.rank(), a.shape());
  I64s b(a.rank(), 0), e(a.shape().begin(), a.shape().end()), s(a.rank(), 1);
  b[ax] = start;
  e[ax] = stop;
  s[ax] = step;
  return slice(a, b, e, s);
}

Tensor pad(const Tensor& a, I64s before, I64s after, Scalar value) {
  detail::node_of(a, "pad");
  detail::check_arity("pad", before.size(), a.shape(), "before");
  detail::check_arity("pad", after.size(), a.shape(), "after");
  Shape shape = a.shape();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (before[d] < 0 || after[d] < 0)
      detail::fail(ErrorCode::invalid_select, "pad",
                   "negative padding in dimension " + std::to_string(d) + " of " +
                       shape_to_string(a.shape()));
    shape[d] = detail::value_or_fail(
        detail::checked_add(shape[d], detail::checked_add(before[d], after[d])),
        ErrorCode::out_of_memory, "pad", [&] {
          return "padding " + std::to_string(before[d]) + " and " + std::to_string(after[d]) +
                 " of dimension " + std::to_string(d) + " of " + shape_to_string(a.shape()) +
                 " is too large";
        });
  }
  // The fill in the tensor's type, as every executor reads it (a u8 fill out of range is refused).
  value = detail::fitting_value("pad", value, a.dtype()).cast(a.dtype());
  detail::Attrs attrs;
  attrs.before = before;
  attrs.after = after;
  attrs.value = value;
  return detail::make_view(Op::pad, a, std::move(shape), std::move(attrs),
                           [&](const detail::ViewMap& m) { return m.pad(before, after, value); });
}

Tensor broadcast_to(const Tensor& a, Shape shape, bool inverse) {
  detail::node_of(a, "broadcast");
  const Shape& in = a.shape();
  bool fits = in.size() <= shape.size();
  const std::size_t lead = inverse ? 0 : shape.size() - std::min(shape.size(), in.size());
  for (std::size_t d = 0; fits && d < in.size(); ++d)
    fits = in[d] == 1 || in[d] == shape[d + lead];
  if (!fits)
    detail::fail(ErrorCode::incompatible_shapes, "broadcast",
                 "cannot broadcast " + shape_to_string(in) + " to " + shape_to_string(shape) +
                     (inverse ? " (inverse)" : ""));
  detail::Attrs attrs;
  attrs.inverse = inverse;
  Shape target = shape;
  return detail::make_view(Op::broadcast, a, std::move(shape), std::move(attrs),
                           [&](const detail::ViewMap& m) { return m.broadcast(target, inverse); });
}

Tensor unsqueeze(const Tensor& a, int axis) {
  detail::node_of(a, "unsqueeze");
  const int ax = detail::normalize_axis("unsqueeze", axis, a.rank() + 1, a.shape());
  Shape s = a.shape();
  s.insert(s.begin() + ax, 1);
  return reshape(a, s);
}

Tensor squeeze(const Tensor& a, int axis) {
  detail::node_of(a, "squeeze");
  const int ax = detail::normalize_axis("squeeze", axis, a.rank(), a.shape());
  if (a.shape()[ax] != 1)
    detail::fail(ErrorCode::illegal_dimension, "squeeze",
                 "dimension " + std::to_string(ax) + " of " + shape_to_string(a.shape()) +
                     " does not have size 1");
  Shape s = a.shape();
  s.erase(s.begin() + ax);
  return reshape(a, s);
}

Tensor squeeze(const Tensor& a) {
  detail::node_of(a, "squeeze");
  Shape s;
  for (auto d : a.shape())
    if (d != 1) s.push_back(d);
  return reshape(a, s);
}

Tensor expand(const Tensor& a, Shape shape) {
  detail::node_of(a, "expand");
  const Shape& in = a.shape();
  if (shape.size() < in.size())
    detail::fail(
        ErrorCode::incompatible_shapes, "expand",
        "cannot expand " + shape_to_string(in) + " to fewer dimensions " + shape_to_string(shape));
  const std::size_t lead = shape.size() - in.size();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != -1) continue;
    if (d < lead)
      detail::fail(
          ErrorCode::illegal_dimension, "expand",
          "-1 in " + shape_to_string(shape) + " names a new dimension of " + shape_to_string(in));
    shape[d] = in[d - lead];
  }
  return broadcast_to(a, std::move(shape));
}

Tensor unsqueeze_expand(const Tensor& a, int axis, std::int64_t size) {
  detail::node_of(a, "unsqueeze_expand");
  if (size < 0)
    detail::fail(ErrorCode::invalid_select, "unsqueeze_expand",
                 "negative size " + std::to_string(size));
  const int ax = detail::normalize_axis("unsqueeze_expand", axis, a.rank() + 1, a.shape());
  Shape s = a.shape();
  s.insert(s.begin() + ax, size);
  return broadcast_to(unsqueeze(a, ax), s);
}

Tensor repeat(const Tensor& a, I64s reps) {
  detail::node_of(a, "repeat");
  detail::check_arity("repeat", reps.size(), a.shape(), "repetitions");
  for (std::size_t d = 0; d < reps.size(); ++d)
    if (reps[d] < 1)
      detail::fail(ErrorCode::invalid_select, "repeat",
                   "repetition count " + std::to_string(reps[d]) + " below 1 for dimension " +
                       std::to_string(d) + " of " + shape_to_string(a.shape()));
  // Dimension d of size n repeated r times: a new size-r dimension in front, merged into it.
  Tensor t = a;
  for (std::size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] == 1) continue;
    Shape grown = t.shape();
    grown.insert(grown.begin() + d, reps[d]);
    Shape merged = t.shape();
    merged[d] = detail::value_or_fail(
        detail::checked_mul(merged[d], reps[d]), ErrorCode::out_of_memory, "repeat", [&] {
          return "repeating " + shape_to_string(a.shape()) + " " + std::to_string(reps[d]) +
                 " times in dimension " + std::to_string(d) + " is too large";
        });
    t = reshape(broadcast_to(unsqueeze(t, static_cast<int>(d)), grown), merged);
  }
  return t;
}

Tensor repeat_interleave(const Tensor& a, std::int64_t repeats, std::optional<int> dim) {
  detail::node_of(a, "repeat_interleave");
  if (repeats < 0)
    detail::fail(ErrorCode::invalid_select, "repeat_interleave",
                 "repeats " + std::to_string(repeats) + " is negative");
  const Tensor t = dim ? a : reshape(a, {a.numel()});
  const int d = dim ? detail::normalize_axis("repeat_interleave", *dim, t.rank(), a.shape()) : 0;
  // A new size-`repeats` dimension after d, merged into it.
  Shape grown = t.shape();
  grown.insert(grown.begin() + d + 1, repeats);
  Shape merged = t.shape();
  merged[d] = detail::value_or_fail(
      detail::checked_mul(merged[d], repeats), ErrorCode::out_of_memory, "repeat_interleave",
      [&] { return "repeating " + shape_to_string(a.shape()) + " " + std::to_string(repeats) +
                   " times is too large"; });
  return reshape(broadcast_to(unsqueeze(t, d + 1), grown), merged);
}

Tensor extend(const Tensor& a, Shape shape, I64s insert_at, I64s step) {
  detail::node_of(a, "extend");
  detail::check_arity("extend", shape.size(), a.shape(), "shape");
  detail::check_arity("extend", insert_at.size(), a.shape(), "insert_at");
  detail::check_arity("extend", step.size(), a.shape(), "step");
  Tensor t = a;
  for (std::size_t d = 0; d < step.size(); ++d) {
    const int ax = static_cast<int>(d);
    const std::int64_t n = t.shape()[d], s = step[d];
    if (s == 0)
      detail::fail(ErrorCode::invalid_select, "extend",
                   "step 0 in dimension " + std::to_string(d) + " of " + shape_to_string(a.shape()));
    if (s < 0) t = slice_axis(t, ax, -1, -n - 1, -1);
    // |s| - 1 zeros between elements (-(INT64_MIN) is out of reach, but so is any such gap).
    const std::int64_t gap = s > 0 ? s - 1 : -(s + 1);
    if (gap > 0 && n > 1) {  // each element followed by `gap` zeros, the last one's cut off
      I64s before(t.rank() + 1, 0), after(t.rank() + 1, 0);
      after[d + 1] = gap;
      Shape spread = t.shape();
      spread[d] = detail::value_or_fail(
          detail::checked_mul(n, detail::checked_add(gap, 1)), ErrorCode::out_of_memory,
          "extend", [&] {
            return "step " + std::to_string(s) + " spreads dimension " + std::to_string(d) +
                   " of " + shape_to_string(a.shape()) + " too far";
          });
      t = slice_axis(reshape(pad(unsqueeze(t, ax + 1), before, after, 0), spread), ax, 0,
                     (n - 1) * (gap + 1) + 1);
    }
  }
  I64s after(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const bool fits = insert_at[d] >= 0 && insert_at[d] <= shape[d];
    after[d] = fits ? shape[d] - insert_at[d] - t.shape()[d] : -1;
    if (after[d] < 0)
      detail::fail(ErrorCode::invalid_select, "extend",
                   shape_to_string(a.shape()) + " placed at index " + std::to_string(insert_at[d]) +
                       " does not fit dimension " + std::to_string(d) + " of " +
                       shape_to_string(shape));
  }
  return pad(t, insert_at, after, 0);
}

Tensor extend(const Tensor& a, Shape shape, I64s insert_at) {
  detail::node_of(a, "extend");
  return extend(a, std::move(shape), std::move(insert_at), I64s(a.shape().size(), 1));
}

Tensor concat(const std::vector<Tensor>& parts, int axis) {
  if (parts.empty())
    detail::fail(ErrorCode::illegal_dimensionality, "concat", "needs at least one tensor");
  for (const auto& p : parts) detail::node_of(p, "concat");
  const Shape& first = parts[0].shape();
  const int ax = detail::normalize_axis("concat", axis, static_cast<int>(first.size()), first);
  Shape shape = first;
  shape[ax] = 0;
  DType dtype = parts[0].dtype();
  std::vector<detail::NodePtr> inputs;
  for (const auto& p : parts) {
    const Shape& s = p.shape();
    if (s.size() != first.size())
      detail::fail(ErrorCode::illegal_dimensionality, "concat",
                   "ranks differ: " + shape_to_string(first) + " and " + shape_to_string(s));
    for (std::size_t d = 0; d < s.size(); ++d)
      if (static_cast<int>(d) != ax && s[d] != first[d])
        detail::fail(ErrorCode::incompatible_shapes, "concat",
                     "shapes " + shape_to_string(first) + " and " + shape_to_string(s) +
                         " differ outside axis " + std::to_string(ax));
    shape[ax] = detail::value_or_fail(
        detail::checked_add(shape[ax], s[ax]), ErrorCode::out_of_memory, "concat", [&] {
          return "concatenating " + std::to_string(parts.size()) + " tensors of shape " +
                 shape_to_string(s) + " gives too many elements";
        });
    dtype = promote(dtype, p.dtype());
    inputs.push_back(p.node());
  }
  detail::Attrs attrs;
  attrs.axes = {ax};
  return detail::make_node(Op::concat, dtype, std::move(shape), std::move(inputs),
                           std::move(attrs));
}

Tensor concat(const Tensor& a, const Tensor& b, int axis) { return concat({a, b}, axis); }

Tensor contiguous(const Tensor& a) {
  detail::node_of(a, "contiguous");
  return detail::make_node(Op::contiguous, a.dtype(), a.shape(), {a.node()});
}

}  // namespace kiln
