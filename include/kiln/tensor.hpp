/// @file
/// kiln::Tensor: a cheap, copyable handle to a node of an immutable, lazily evaluated graph.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "kiln/types.hpp"

namespace kiln {

/// A tensor's shape as Tensor::sizes() gives it (libtorch's IntArrayRef): a view of the shape that
/// converts to `const Shape&`, indexes, iterates, compares and prints as libtorch does
/// (`std::cout << x.sizes()` writes "[2, 3]"). Valid while the tensor it came from lives.
class Sizes {
 public:
  explicit Sizes(const Shape& shape) : shape_(&shape) {}
  operator const Shape&() const { return *shape_; }
  Shape vec() const { return *shape_; }  ///< a copy, as libtorch's IntArrayRef::vec()
  std::size_t size() const { return shape_->size(); }
  bool empty() const { return shape_->empty(); }
  std::int64_t operator[](std::size_t i) const { return (*shape_)[i]; }
  std::int64_t front() const { return shape_->front(); }
  std::int64_t back() const { return shape_->back(); }
  const std::int64_t* data() const { return shape_->data(); }
  Shape::const_iterator begin() const { return shape_->begin(); }
  Shape::const_iterator end() const { return shape_->end(); }
  friend bool operator==(const Sizes& a, const Sizes& b) { return *a.shape_ == *b.shape_; }
  friend bool operator==(const Sizes& a, const Shape& b) { return *a.shape_ == b; }

 private:
  const Shape* shape_;
};
std::ostream& operator<<(std::ostream& out, const Sizes& sizes);

namespace detail {
struct Node;
class Variable;
}
class TensorIndex;
class Executor;
struct ValuesIndices;

/// An evaluated tensor that no gradient can pass through (built outside a gradient context, not
/// watched) becomes a leaf holding its values: the graph below it is let go, as Flint's C++ API
/// does after every execution. A graph built outside a gradient context that grows deeper than
/// 4096 unevaluated nodes is evaluated where it crosses that depth. So loops like `x = x + y`,
/// with or without `x.eval()` in them, run in bounded memory however long they run.
class Tensor {
 public:
  /// An empty handle; every operation on it except `defined()` throws.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<detail::Node> node);
  /// A handle that reads `variable`'s current value, as do all its copies: when the variable is
  /// given a new value (an optimiser's step on a module parameter), every such handle sees it,
  /// as PyTorch's parameters change in place. Assigning another tensor to the handle rebinds it.
  explicit Tensor(std::shared_ptr<detail::Variable> variable);
  /// Handles are counted per node, so that executors know which results users can still read.
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  /// Copies `data` (shape's product elements, row-major) into a new leaf tensor.
  template <class T> static Tensor from(const T* data, Shape shape) {
    return from_bytes(data, dtype_of_v<T>, std::move(shape));
  }
  template <class T> static Tensor from(const std::vector<T>& data, Shape shape) {
    check_count(static_cast<std::int64_t>(data.size()), shape);
    return from_bytes(data.data(), dtype_of_v<T>, std::move(shape));
  }
  /// A 1-D tensor holding `data`.
  template <class T> static Tensor from(const std::vector<T>& data) {
    return from(data, Shape{static_cast<std::int64_t>(data.size())});
  }
  /// std::vector<bool> packs its bits, so it has an overload of its own.
  static Tensor from(const std::vector<bool>& data, Shape shape);
  static Tensor from(const std::vector<bool>& data) {
    return from(data, Shape{static_cast<std::int64_t>(data.size())});
  }
  /// Copies raw values of `dtype`; of bool, every non-zero byte is true.
  static Tensor from_bytes(const void* data, DType dtype, Shape shape);
  /// A leaf that reads the caller's memory (shape's product elements of `dtype`, row-major)
  /// without copying it. The values must not change while the tensor or anything computed from it
  /// lives (graphs are immutable; kiln never writes into this memory). When the last reference
  /// goes, `deleter` (if given) is called with `data`; without one the caller keeps the memory
  /// alive at least as long. Memory that is not 64-byte aligned (what kiln's kernels assume) is
  /// copied right away and `deleter` is called then, as is bool memory holding a byte other than
  /// 0 and 1 (stored as true, 1).
  static Tensor from_blob(void* data, Shape shape, DType dtype,
                          std::function<void(void*)> deleter = nullptr);

  bool defined() const { return node() != nullptr; }
  const Shape& shape() const;
  Sizes sizes() const { return Sizes(shape()); }  ///< libtorch's name and type of the shape
  std::int64_t size(int axis) const;              ///< negative axes count from the end
  int dim() const { return rank(); }              // the number of dimensions, as in libtorch
  int rank() const;
  std::int64_t numel() const;
  DType dtype() const;

  /// ---- evaluation and reading -------------------------------------------------------------
  /// Computes this tensor (and whatever of its graph is not computed yet) and keeps the result;
  /// outside gradient contexts the tensor then becomes a leaf (see above).
  const Tensor& eval() const;
  /// The same on a given executor (kiln::executors() lists them; find_executor picks one by
  /// name) instead of the current one; this thread's other evaluations are not affected.
  const Tensor& eval(Executor& executor) const;
  bool is_evaluated() const;
  /// Evaluates on `executor` if needed and makes the values present in its memory, uploading
  /// them to its device now: the values keep their other copies, and a later evaluation anywhere
  /// reads the copy it needs. Placing on the CPU executor reads values computed on a device back
  /// to the host. Only the values move: computations with this tensor still run where it lives
  /// (to(device) moves those).
  const Tensor& place_on(Executor& executor) const;
  /// Whether the values are present in `executor`'s memory now (false before evaluation).
  bool is_on(const Executor& executor) const;

  /// ---- devices (see device.hpp) -------------------------------------------------------------
  /// This tensor on `device`, as libtorch's `x.to(device)`: a leaf with the same values
  /// (evaluated where this tensor lives, uploaded now, and shared rather than copied) whose ops
  /// all run on that device. A tensor that lives there already is returned as it is. No gradient
  /// passes through the move, so moving a tensor a gradient could pass through (watched, or
  /// computed in a gradient context from a watched one) is device_error: move data and modules
  /// (Module::to) before computing with them.
  Tensor to(const Device& device) const;
  Tensor to(const Device& device, DType dtype) const;
  /// Where this tensor lives: the device to() placed it or its operands on; an unplaced tensor
  /// is computed by this thread's DeviceGuard's device, else current_executor().
  Device device() const;
  /// Whether to() placed this tensor, or an operand it was computed from, on a device.
  bool is_placed() const;
  /// A new leaf with this tensor's values (evaluated first if needed). It shares the values'
  /// memory instead of copying them, and has no graph behind it.
  Tensor detach() const;
  /// The values in row-major order, converted to T. Evaluates if needed.
  template <class T> std::vector<T> to_vector() const {
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data() to copy into
      const std::vector<std::uint8_t> bytes = to_bytes_of_bool();
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> out(static_cast<std::size_t>(numel()));
      copy_to(out.data(), dtype_of_v<T>);
      return out;
    }
  }
  /// Writes numel() values of type `as` to `dst` (no alignment needed). Evaluates if needed.
  void copy_to(void* dst, DType as) const;
  /// The values in row-major order without a copy (evaluates if needed); T must be the dtype's
  /// type (else wrong_type). Valid while this node lives; this handle keeps it alive.
  template <class T> std::span<const T> data() const {
    return {static_cast<const T*>(data_ptr(dtype_of_v<T>)), static_cast<std::size_t>(numel())};
  }
  const void* data_ptr(DType expected) const;
  /// The values converted to bool, one byte (0 or 1) each.
  std::vector<std::uint8_t> to_bytes_of_bool() const;
  /// One element, converted to T; negative indices count from the end.
  template <class T> T at(std::span<const std::int64_t> index) const {
    return element(index).template as<T>();
  }
  template <class T> T at(std::initializer_list<std::int64_t> index) const {
    return at<T>(std::span<const std::int64_t>(index.begin(), index.size()));
  }
  /// The only element of a tensor with exactly one element (of any rank).
  template <class T> T item() const { return item_scalar().template as<T>(); }
  Scalar item_scalar() const;
  Scalar element(std::span<const std::int64_t> index) const;

  /// ---- graph introspection -----------------------------------------------------------------
  std::string_view op_name() const;  ///< "store", "add", "reshape", ...
  std::vector<Tensor> inputs() const;
  const std::string& name() const;
  Tensor& set_name(std::string name);
  /// True when both handles refer to the same graph node.
  bool same_node(const Tensor& other) const { return node() == other.node(); }
  /// For executors and the C API: the node this handle refers to now.
  const std::shared_ptr<detail::Node>& node() const;
  /// Whether this handle reads a variable's current value (see the constructor).
  bool is_variable_handle() const { return variable_ != nullptr; }

  /// ---- autodiff (see autodiff.hpp) ----------------------------------------------------------
  /// Marks this node as a variable that gradients can be taken with respect to.
  const Tensor& watch() const;
  const Tensor& unwatch() const;
  bool is_watched() const;
  /// For a one-element tensor built in a gradient context: evaluates the gradient of this value
  /// with respect to every watched variable it depends on and adds it to that variable's grad().
  void backward() const;
  /// The gradient accumulated by backward() (an undefined handle before the first backward()).
  Tensor grad() const;
  void zero_grad() const;

  /// ---- broadcasting mode ------------------------------------------------------------------
  /// A handle to the same node that binary ops broadcast inversely (aligned at the left).
  /// The mark belongs to this handle only and never passes to results.
  Tensor inverse_broadcast() const;
  Tensor normal_broadcast() const;
  bool is_inverse_broadcast() const { return inverse_broadcast_; }

  /// ---- indexing (views; see tensor_index.hpp for the index vocabulary) ---------------------
  /// x[i]: the slice at index i of dimension 0, without that dimension (negative i counts from
  /// the end; out of range is an invalid_select error).
  Tensor operator[](std::int64_t i) const;
  /// libtorch's x.index({...}): integers, Slice(start, stop, step), All, None (a new dimension of
  /// size 1), Ellipsis, integer index tensors (index_select along that dimension) and bool masks
  /// (x.index({x > 0}) selects the positive elements; index_put with one assigns to them).
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  Tensor index(const std::vector<TensorIndex>& indices) const;
  /// A new tensor: this one with the elements index(indices) names replaced by `values`
  /// (broadcast to their shape, converted to this dtype); this tensor is unchanged (libtorch's
  /// functional index_put). An index tensor naming an element twice gives that element the sum.
  Tensor index_put(std::initializer_list<TensorIndex> indices, const Tensor& values) const;
  Tensor index_put(const std::vector<TensorIndex>& indices, const Tensor& values) const;
  Tensor index_put(std::initializer_list<TensorIndex> indices, Scalar value) const;

  /// ---- method forms of common ops (see ops.hpp for all ops) --------------------------------
  Tensor reshape(Shape shape) const;
  Tensor view(Shape shape) const { return reshape(std::move(shape)); }
  Tensor flatten() const;
  Tensor flatten(int start_dim, int end_dim = -1) const;
  Tensor permute(std::vector<int> perm) const;
  Tensor transpose(int axis_a, int axis_b) const;
  Tensor t() const;
  Tensor expand(Shape shape) const;
  Tensor to(DType dtype) const { return convert(dtype); }
  /// A new node holding a copy of the values (graphs are immutable, so a copy is never needed to
  /// protect data; clone gives a tensor that shares no node with this one).
  Tensor clone() const;
  Tensor slice(std::vector<std::int64_t> start, std::vector<std::int64_t> stop) const;
  Tensor slice(std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
               std::vector<std::int64_t> step) const;
  Tensor squeeze() const;
  Tensor squeeze(int axis) const;
  Tensor unsqueeze(int axis) const;
  Tensor contiguous() const;
  Tensor convert(DType to) const;
  Tensor sum() const;
  Tensor sum(std::vector<int> axes, bool keepdims = false) const;
  Tensor mean() const;
  Tensor mean(std::vector<int> axes, bool keepdims = false) const;
  Tensor max() const;
  Tensor max(std::vector<int> axes, bool keepdims = false) const;
  Tensor max(std::initializer_list<int> axes, bool keepdims = false) const;
  Tensor min() const;
  Tensor min(std::vector<int> axes, bool keepdims = false) const;
  Tensor min(std::initializer_list<int> axes, bool keepdims = false) const;
  /// libtorch's x.max(1): the values and the indices of the first maxima along one dimension.
  ValuesIndices max(int dim, bool keepdim = false) const;
  ValuesIndices min(int dim, bool keepdim = false) const;
  /// One dimension, as libtorch's x.sum(1) and x.mean(-1, /*keepdim=*/true).
  Tensor sum(int axis, bool keepdims = false) const;
  Tensor mean(int axis, bool keepdims = false) const;

  /// The method forms of the free functions of the same names (kiln/ops.hpp, activations.hpp,
  /// composite_ops.hpp), as libtorch spells them: x.exp() is exp(x).
  Tensor exp() const;
  Tensor log() const;
  Tensor abs() const;
  Tensor sqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor neg() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor trunc() const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(Scalar exponent) const;
  Tensor atan2(const Tensor& other) const;
  Tensor atan2(Scalar other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(Scalar other) const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(Scalar other) const;
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int axis) const;
  Tensor log_softmax(int axis) const;
  Tensor argmax() const;
  Tensor argmax(int axis, bool keepdims = false) const;
  Tensor argmin() const;
  Tensor argmin(int axis, bool keepdims = false) const;
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  Tensor all() const;
  Tensor any() const;
  /// Over every element, with Bessel's correction (libtorch's default).
  Tensor std() const;
  Tensor var() const;
  /// Comparisons as bool tensors: eq is ==, ne !=, lt <, le <=, gt >, ge >=.
  Tensor eq(const Tensor& other) const;
  Tensor eq(Scalar other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(Scalar other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(Scalar other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(Scalar other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(Scalar other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(Scalar other) const;
  std::vector<Tensor> chunk(std::int64_t chunks, int dim = 0) const;
  std::vector<Tensor> split(std::int64_t split_size, int dim = 0) const;

 private:
  static void check_count(std::int64_t count, const Shape& shape);
  const detail::Node& n() const;

  std::shared_ptr<detail::Node> node_;          // null in a variable's handle
  std::shared_ptr<detail::Variable> variable_;  // set in a variable's handle
  bool inverse_broadcast_ = false;
};

/// Values and the i64 positions they came from (libtorch's (values, indices) tuple:
/// `auto [v, i] = kiln::sort(x);` works as with libtorch).
struct ValuesIndices {
  Tensor values;
  Tensor indices;
};

namespace detail {
/// One value that many handles share (a module parameter's): Tensor(variable) handles read the
/// value it holds now. It holds a plain handle, counted once however many handles read it, so a
/// replaced value that nothing else reads can give its memory to the update that replaced it.
class Variable {
 public:
  explicit Variable(const Tensor& value) { set(value); }
  const Tensor& value() const { return value_; }
  void set(const Tensor& value) { value_ = Tensor(value.node()); }

 private:
  Tensor value_;
};
}  // namespace detail

inline const std::shared_ptr<detail::Node>& Tensor::node() const {
  return variable_ ? variable_->value().node_ : node_;
}

/// Compound assignment rebinds the handle: `x += y` is `x = x + y`, a new node. Other handles to
/// the old value keep seeing the old value (graphs are immutable, so nothing shared changes).
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, Scalar b);
Tensor& operator-=(Tensor& a, Scalar b);
Tensor& operator*=(Tensor& a, Scalar b);
Tensor& operator/=(Tensor& a, Scalar b);

/// Evaluates several tensors in one pass, computing shared parts of their graphs once.
void eval_all(const std::vector<Tensor>& tensors);

/// Prints shape, dtype and values (abbreviated with "..." when large).
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

}  // namespace kiln
