#include "exec/cpu/source.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "exec/cpu/float_loops.hpp"
#include "exec/operand.hpp"

namespace kiln::detail::cpu {

namespace {

// convert_values where either type is a 16-bit float: through f32 with the vector loops where the
// other type is f32 or 16-bit (every such value is exactly an f32), else one value at a time,
// rounded once from f64.
void convert_narrow_values(const void* in, DType from, void* out, DType to, std::int64_t n) {
  const FloatLoops& loops = float_loops();
  const auto widen = from == DType::f16 ? loops.widen_f16 : loops.widen_bf16;
  const auto narrow = to == DType::f16 ? loops.narrow_f16 : loops.narrow_bf16;
  if (is_narrow_float(from) && to == DType::f32)
    return widen(static_cast<const std::uint16_t*>(in), static_cast<float*>(out), n);
  if (from == DType::f32 && is_narrow_float(to))
    return narrow(static_cast<const float*>(in), static_cast<std::uint16_t*>(out), n);
  if (is_narrow_float(from)) {  // to f64, an integer type, or the other 16-bit float
    float wide[256];
    for (std::int64_t i = 0; i < n; i += 256) {
      const std::int64_t m = std::min<std::int64_t>(256, n - i);
      widen(static_cast<const std::uint16_t*>(in) + i, wide, m);
      if (is_narrow_float(to)) narrow(wide, static_cast<std::uint16_t*>(out) + i, m);
      else convert_values(wide, DType::f32, static_cast<std::byte*>(out) + i * size_of(to), to, m);
    }
    return;
  }
  dispatch_stored(from, [&]<class S>() {  // f64 or an integer type to a 16-bit float
    const S* s = static_cast<const S*>(in);
    auto* t = static_cast<std::uint16_t*>(out);
    for (std::int64_t i = 0; i < n; ++i) t[i] = narrow_bits(to, static_cast<double>(s[i]));
  });
}

// convert_values where either type is bool: a bool is 0 or 1 of the other type (any non-zero
// byte is true); to bool, a value is true where it is non-zero (NaN included).
void convert_bool_values(const void* in, DType from, void* out, DType to, std::int64_t n) {
  if (is_bool(from)) {
    const auto* s = static_cast<const std::uint8_t*>(in);
    if (is_narrow_float(to)) {
      const std::uint16_t one = narrow_bits(to, 1.0);
      auto* t = static_cast<std::uint16_t*>(out);
      for (std::int64_t i = 0; i < n; ++i) t[i] = s[i] != 0 ? one : 0;
      return;
    }
    return dispatch_stored(to, [&]<class T>() {
      T* t = static_cast<T*>(out);
      for (std::int64_t i = 0; i < n; ++i) t[i] = s[i] != 0 ? T{1} : T{0};
    });
  }
  auto* t = static_cast<std::uint8_t*>(out);
  if (is_narrow_float(from)) {  // any bits but those of +0 and -0
    const auto* s = static_cast<const std::uint16_t*>(in);
    for (std::int64_t i = 0; i < n; ++i) t[i] = (s[i] & 0x7fff) != 0 ? 1 : 0;
    return;
  }
  dispatch_stored(from, [&]<class S>() {
    const S* s = static_cast<const S*>(in);
    for (std::int64_t i = 0; i < n; ++i) t[i] = s[i] != S{0} ? 1 : 0;
  });
}

}  // namespace

void convert_values(const void* in, DType from, void* out, DType to, std::int64_t n) {
  if (n <= 0) return;  // `in` may be null then (nothing to read), which memcpy does not allow
  if (from == to) {
    std::memcpy(out, in, static_cast<std::size_t>(n) * size_of(to));
    return;
  }
  if (is_bool(from) || is_bool(to)) [[unlikely]]
    return convert_bool_values(in, from, out, to, n);
  if (is_narrow_float(from) || is_narrow_float(to)) [[unlikely]]
    return convert_narrow_values(in, from, out, to, n);
  dispatch_stored(from, [&]<class S>() {
    dispatch_stored(to, [&]<class T>() {
      const S* s = static_cast<const S*>(in);
      T* t = static_cast<T*>(out);
      for (std::int64_t i = 0; i < n; ++i) t[i] = convert_value<T>(s[i]);
    });
  });
}

namespace {

// The same layer with fewer dimensions: dimensions of size 1 are dropped and neighbours that
// step through memory as one dimension (stride[d] == stride[d + 1] * shape[d + 1]) are merged,
// unless padding masks them. Row-major positions are unchanged, and reads walk longer runs:
// a broadcast scalar becomes one run of stride 0, a contiguous slice one run of stride 1.
ViewLayer coalesced(const ViewLayer& l) {
  const std::size_t rank = l.shape.size();
  auto unmasked = [&](std::size_t d) {
    return l.valid.empty() || (l.valid[d].first <= 0 && l.valid[d].second >= l.shape[d]);
  };
  ViewLayer out;
  out.offset = l.offset;
  out.fill = l.fill;
  bool any_mask = false;
  for (std::size_t d = 0; d < rank; ++d) {
    const bool free = unmasked(d);
    if (l.shape[d] == 1 && free) continue;
    const bool mergeable = !out.shape.empty() && free &&
                           (out.valid.empty() || out.valid.back().second == -1) &&
                           out.strides.back() == l.strides[d] * l.shape[d];
    if (mergeable) {
      out.shape.back() *= l.shape[d];
      out.strides.back() = l.strides[d];
      continue;
    }
    out.shape.push_back(l.shape[d]);
    out.strides.push_back(l.strides[d]);
    // -1 marks "no mask" while merging; real ranges are restored below.
    out.valid.emplace_back(free ? std::pair<std::int64_t, std::int64_t>{0, -1} : l.valid[d]);
    any_mask = any_mask || !free;
  }
  if (!any_mask) {
    out.valid.clear();
  } else {
    for (std::size_t d = 0; d < out.shape.size(); ++d)
      if (out.valid[d].second == -1) out.valid[d] = {0, out.shape[d]};
  }
  return out;
}

}  // namespace

Source::Source(const Buffer& base, const ViewMap* view) : base_(&base), buffer_(&base) {
  if (view == nullptr || view->is_identity()) return;
  const auto& layers = view->layers();
  // Each lower layer is copied out in turn; the top layer is then read directly.
  const Buffer* current = &base;
  for (std::size_t k = 0; k + 1 < layers.size(); ++k) {
    owned_ = std::make_shared<const ViewLayer>(coalesced(layers[k]));
    layer_ = owned_.get();
    row_major_ = false;
    buffer_ = current;
    auto next = std::make_shared<Buffer>(base.dtype(), shape_numel(layer_->shape));
    read(0, next->numel(), next->data(), base.dtype());
    staged_ = std::move(next);
    current = staged_.get();
  }
  buffer_ = current;
  owned_ = std::make_shared<const ViewLayer>(coalesced(layers.back()));
  layer_ = owned_.get();
  read_in_order_if_possible();
}

Source::Source(const Buffer& base, const ViewLayer* layer)
    : base_(&base), buffer_(&base), layer_(layer) {
  if (layer_) read_in_order_if_possible();
}

void Source::read_in_order_if_possible() {
  // A view that walks its buffer in order from some offset (a slice of leading rows, a
  // reshape) is read in place.
  const ViewLayer& l = *layer_;
  const bool in_order = l.shape.empty() || (l.shape.size() == 1 && l.strides[0] == 1);
  row_major_ = l.valid.empty() && in_order;
  offset_ = row_major_ ? l.offset : 0;
}

const void* Source::contiguous(std::int64_t start, std::int64_t n) const {
  // Nothing to read (a view with an empty dimension, whose index arithmetic would divide by 0).
  if (n <= 0) return nullptr;
  const auto* base = static_cast<const std::byte*>(buffer_->data());
  const std::size_t width = size_of(buffer_->dtype());
  if (row_major_) return base + static_cast<std::size_t>(offset_ + start) * width;
  const std::size_t rank = layer_->shape.size();
  if (rank == 0 || !layer_->valid.empty() || layer_->strides[rank - 1] != 1) return nullptr;
  const std::int64_t length = layer_->shape[rank - 1];
  if (length <= 0 || start % length + n > length) return nullptr;
  // The outermost index needs no division: it is what is left, and must lie inside the view.
  std::int64_t at = layer_->offset, p = start;
  for (std::size_t d = rank; d-- > 1;) {
    at += (p % layer_->shape[d]) * layer_->strides[d];
    p /= layer_->shape[d];
  }
  if (p >= layer_->shape[0]) return nullptr;
  at += p * layer_->strides[0];
  return base + static_cast<std::size_t>(at) * width;
}

std::optional<std::int64_t> Source::row_step(std::int64_t row) const {
  if (row_major_) return row;
  const ViewLayer& l = *layer_;
  if (!l.valid.empty() || l.shape.size() != 2 || l.shape[1] != row || l.strides[1] != 1)
    return std::nullopt;
  return l.strides[0];
}

bool Source::constant() const {
  if (row_major_) return false;
  if (!layer_->valid.empty()) return false;
  return std::all_of(layer_->strides.begin(), layer_->strides.end(),
                     [](std::int64_t s) { return s == 0; });
}

void Source::fill(std::int64_t n, void* out, DType as) const {
  if (is_narrow(buffer_->dtype()) || is_narrow(as)) {
    // One value converted, then repeated.
    alignas(8) std::byte one[8];
    convert_values(static_cast<const std::byte*>(buffer_->data()) +
                       layer_->offset * static_cast<std::int64_t>(size_of(buffer_->dtype())),
                   buffer_->dtype(), one, as, 1);
    const std::size_t width = size_of(as);
    for (std::int64_t i = 0; i < n; ++i)
      std::memcpy(static_cast<std::byte*>(out) + i * static_cast<std::int64_t>(width), one, width);
    return;
  }
  dispatch(buffer_->dtype(), [&]<class S>() {
    dispatch(as, [&]<class T>() {
      const T v = convert_value<T>(buffer_->as<S>()[layer_->offset]);
      std::fill_n(static_cast<T*>(out), n, v);
    });
  });
}

void Source::read(std::int64_t start, std::int64_t n, void* out, DType as) const {
  if (row_major_) {
    convert_values(contiguous(start, n), buffer_->dtype(), out, as, n);
    return;
  }
  const DType from = buffer_->dtype();
  if (is_narrow(from) || is_narrow(as)) [[unlikely]] {
    // The narrow values are walked as their bits (the fill as the bits of its value), then
    // converted; another source is read as f32 (exact for f32) or f64 (exact for i32, and the
    // value itself for f64) first, and rounded once.
    if (from == as && size_of(from) == 1) {  // bool, u8, i8
      const Scalar v = layer_->fill.cast(from);
      const auto fill = static_cast<std::uint8_t>(v.as<std::int32_t>());  // true is 1
      return read_typed<std::uint8_t, std::uint8_t>(start, n, static_cast<std::uint8_t*>(out),
                                                    fill);
    }
    if (from == as) {  // f16, bf16, i16
      const std::uint16_t fill =
          from == DType::i16 ? static_cast<std::uint16_t>(layer_->fill.as<std::int16_t>())
                             : narrow_bits(from, layer_->fill.as<double>());
      return read_typed<std::uint16_t, std::uint16_t>(start, n, static_cast<std::uint16_t*>(out),
                                                      fill);
    }
    // (An integer becomes a narrow integer through i64, so that it wraps rather than saturates.)
    const DType step = is_narrow(from)                                   ? from
                       : from == DType::f32                              ? DType::f32
                       : is_integer(from) && is_narrow_integer(as) ? DType::i64
                                                                         : DType::f64;
    alignas(8) std::byte staged[256 * 8];
    const std::size_t width = size_of(as);
    for (std::int64_t i = 0; i < n; i += 256) {
      const std::int64_t m = std::min<std::int64_t>(256, n - i);
      read(start + i, m, staged, step);
      convert_values(staged, step, static_cast<std::byte*>(out) + i * static_cast<std::int64_t>(width),
                     as, m);
    }
    return;
  }
  dispatch(from, [&]<class S>() {
    dispatch(as, [&]<class T>() {
      read_typed<S, T>(start, n, static_cast<T*>(out), layer_->fill.as<T>());
    });
  });
}

template <class S, class T>
void Source::read_typed(std::int64_t start, std::int64_t n, T* out, T fill) const {
  if (n <= 0) return;
  const S* src = buffer_->as<S>();
  const ViewLayer& l = *layer_;
  const std::size_t rank = l.shape.size();
  const bool masked = !l.valid.empty();
  if (rank == 0) {
    if (n > 0) out[0] = convert_value<T>(src[l.offset]);
    return;
  }
  std::int64_t index[16];
  std::vector<std::int64_t> big_index;
  std::int64_t* idx = index;
  if (rank > 16) {
    big_index.resize(rank);
    idx = big_index.data();
  }
  std::int64_t p = start;
  for (std::size_t d = rank; d-- > 0;) {
    idx[d] = p % l.shape[d];
    p /= l.shape[d];
  }
  const std::size_t last = rank - 1;
  const std::int64_t stride = l.strides[last];
  std::int64_t done = 0;
  while (done < n) {
    const std::int64_t run = std::min(n - done, l.shape[last] - idx[last]);
    bool row_valid = true;
    std::int64_t base = l.offset;
    for (std::size_t d = 0; d < last; ++d) {
      if (masked && (idx[d] < l.valid[d].first || idx[d] >= l.valid[d].second)) row_valid = false;
      base += idx[d] * l.strides[d];
    }
    T* o = out + done;
    const std::int64_t j0 = idx[last];
    if (!row_valid) {
      for (std::int64_t j = 0; j < run; ++j) o[j] = fill;
    } else {
      std::int64_t lo = 0, hi = run;  // the valid part of the run, relative to j0
      if (masked) {
        lo = std::clamp(l.valid[last].first - j0, std::int64_t{0}, run);
        hi = std::clamp(l.valid[last].second - j0, lo, run);
        for (std::int64_t j = 0; j < lo; ++j) o[j] = fill;
        for (std::int64_t j = hi; j < run; ++j) o[j] = fill;
      }
      // A run all of padding reads nothing: its position may lie outside the buffer (an empty
      // tensor padded and broadcast has an offset before its first element).
      const S* s = lo < hi ? src + base + (j0 + lo) * stride : nullptr;
      if (s == nullptr) {
      } else if (stride == 1) {
        for (std::int64_t j = lo; j < hi; ++j) o[j] = convert_value<T>(s[j - lo]);
      } else if (stride == 0) {
        const T v = convert_value<T>(*s);
        for (std::int64_t j = lo; j < hi; ++j) o[j] = v;
      } else {
        for (std::int64_t j = lo; j < hi; ++j) o[j] = convert_value<T>(s[(j - lo) * stride]);
      }
    }
    done += run;
    idx[last] += run;
    for (std::size_t d = last; d > 0 && idx[d] == l.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

}  // namespace kiln::detail::cpu
