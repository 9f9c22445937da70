// Reading a computed buffer through a view map in chunks of row-major positions: the loads of
// the CPU executor's kernels.
#pragma once

#include <memory>
#include <optional>

#include "exec/fusion.hpp"
#include "graph/buffer.hpp"
#include "graph/view.hpp"

namespace kiln::detail::cpu {

// A buffer read in row-major order, or through one strided layer (with optional padding).
// A map of several layers has its lower layers materialised when the source is prepared, so
// every read is a single strided walk.
class Source {
 public:
  Source(const Buffer& base, const ViewMap* view);
  // A source whose map is one strided layer prepared before (the same for every graph of a
  // structure; null: the buffer as it is), which outlives the source: nothing is computed,
  // allocated or counted here.
  Source(const Buffer& base, const ViewLayer* layer);
  // The prepared layer, for the constructor above, when the map needed no staging.
  std::shared_ptr<const ViewLayer> prepared_layer() const { return staged_ ? nullptr : owned_; }

  DType dtype() const { return buffer_->dtype(); }
  // The buffer the source reads (before any staging of lower view layers).
  const Buffer* base() const { return base_; }
  // Writes the values at row-major positions [start, start + n) of the view, converted to `as`.
  void read(std::int64_t start, std::int64_t n, void* out, DType as) const;
  // The values at positions [start, start + n) when they lie contiguously in the buffer (the
  // source is read in row-major order, or the positions are one unpadded run of its innermost
  // dimension with stride 1), else null.
  const void* contiguous(std::int64_t start, std::int64_t n) const;
  // For reads of whole rows of `row` values: how many elements one row's values lie after the
  // previous row's, when every row is one contiguous run (`row` for a row-major source, 0 for a
  // row broadcast down the rows), else nullopt.
  std::optional<std::int64_t> row_step(std::int64_t row) const;
  // Whether every position reads the same element (a broadcast scalar).
  bool constant() const;
  // Writes that element n times, converted to `as` (for constant sources).
  void fill(std::int64_t n, void* out, DType as) const;

 private:
  template <class S, class T>
  void read_typed(std::int64_t start, std::int64_t n, T* out, T fill) const;

  const Buffer* base_;
  const Buffer* buffer_;
  std::shared_ptr<Buffer> staged_;  // owns the materialised lower layers, when there are any
  bool row_major_ = true;
  std::int64_t offset_ = 0;  // where row-major reads start in the buffer
  std::shared_ptr<const ViewLayer> owned_;  // the layer, when this source made it
  const ViewLayer* layer_ = nullptr;        // null for a buffer read as it is

  void read_in_order_if_possible();
};

// An input of a kernel as contiguous row-major values of type T: the buffer itself when it is
// that already, else a converted copy.
template <class T> struct Contiguous {
  std::shared_ptr<Buffer> copy;
  const T* data;
  explicit Contiguous(const KernelInput& in) {
    const Buffer& b = *in.node->result;
    if (b.dtype() == dtype_of_v<T> && (in.view == nullptr || in.view->is_identity())) {
      data = b.as<T>();
      return;
    }
    const Source src(b, in.view);
    const std::int64_t n = in.view ? shape_numel(in.view->shape()) : b.numel();
    copy = std::make_shared<Buffer>(dtype_of_v<T>, n);
    src.read(0, n, copy->data(), dtype_of_v<T>);
    data = copy->as<T>();
  }
};

// Copies n values of type `from` to type `to` (with kiln's conversion rules).
void convert_values(const void* in, DType from, void* out, DType to, std::int64_t n);

// Runs `kernel(Buffer& values)`, a kernel of f32 values, for node `n`: into `out` itself, or,
// where n is of a 16-bit float type, into an f32 buffer that is then rounded into `out` (the
// reference's rule: the op computed in f32, its result rounded). Returns what the kernel returns
// (false: it did not compute, and `out` is left alone).
template <class F> bool computed_as_f32(const Node& n, Buffer& out, F&& kernel) {
  if (!is_narrow_float(n.dtype)) return kernel(out);
  Buffer wide(DType::f32, out.numel());
  if (!kernel(wide)) return false;
  convert_values(wide.data(), DType::f32, out.data(), n.dtype, out.numel());
  return true;
}

}  // namespace kiln::detail::cpu
