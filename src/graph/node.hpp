// Node: one vertex of the graph. Its IR (op, dtype, shape, inputs, attributes, view) is fixed when
// it is built (tests/layering.py checks that only the builders write it), with one exception: an
// evaluated node that no gradient passes through becomes a leaf holding its values, releasing the
// graph below it (exec/executor.cpp; Flint's fOptimizeMemory). That is what bounds the memory of
// a loop that evaluates as it goes, with every handle to the node seeing the leaf. The values
// themselves (`result`) are the runtime's: only exec/ and graph/values.hpp touch them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/buffer.hpp"
#include "graph/op_registry.hpp"
#include "graph/view.hpp"
#include "kiln/types.hpp"

namespace kiln {
class Executor;
}

namespace kiln::detail {

struct CustomKernel;

// What a store node (a leaf) is: data (values given or computed), a constant (values that take
// part in the graph's optimisation), or a placeholder (a symbolic input without values).
enum class StoreKind : std::uint8_t { data, constant, placeholder };

// Op arguments besides the inputs; each field has one meaning, and each op uses the fields its
// comment names.
struct Attrs {
  std::vector<std::int64_t> axes;      // permute: perm; reductions: sorted axes;
                                       // concat, gather, scatter_add, softmax, scans,
                                       // argsort: {axis}
  std::vector<std::int64_t> start;     // slice: first index per dimension
  std::vector<std::int64_t> before;    // pad: elements before, per dimension
  std::vector<std::int64_t> after;     // pad: elements after, per dimension
  std::vector<std::int64_t> padding;   // conv2d, max_pool2d (and gradients): zeros on each side
  std::vector<std::int64_t> step;      // slice, windows, unwindow, conv2d, max_pool2d: step
  std::vector<std::int64_t> window;    // windows, unwindow, max_pool2d: window size
  std::vector<std::int64_t> dilation;  // windows, unwindow, conv2d, max_pool2d
  Scalar value;                        // pad: fill value
  std::uint64_t seed = 0;              // random_uniform
  bool inverse = false;                // broadcast: aligned at the left
  bool drop_negative = false;          // scatter_add: negative indices are dropped
  bool descending = false;             // argsort: largest first
  // min, max, minimum, maximum built by the C API: Flint's gradient on ties (every element equal
  // to a min/max gets the whole gradient; minimum/maximum give it all to the first operand).
  bool flint_ties = false;
  StoreKind store_kind = StoreKind::data;  // store
  std::shared_ptr<const CustomKernel> custom;  // custom_map, custom_reduce
};

struct Node;
using NodePtr = std::shared_ptr<Node>;

struct Node {
  Op op;
  DType dtype;
  Shape shape;
  std::vector<NodePtr> inputs;
  Attrs attrs;
  std::string name;

  // Views only: the node whose buffer this view reads, and the composed map into it. The base
  // is a non-view node, or a view whose result is already materialised.
  NodePtr view_base;
  ViewMap view;

  // The computed values (row-major, of `shape`), when present.
  std::shared_ptr<Buffer> result;
  // The executor this node lives on (Tensor::to placed it or an operand there), which computes it
  // when no executor is named; null: unplaced, computed by the thread's current executor.
  std::shared_ptr<Executor> home;
  // The op the user called when a composite built this node (a string literal), or null: errors
  // its evaluation raises name it (api/builder.hpp's CalledOp).
  const char* called_as = nullptr;
  // Autodiff: whether the node was built inside a gradient context, whether it is a marked
  // variable, and the gradient backward() accumulated for it (a leaf, or null).
  bool in_gradient_context = false;
  // Whether the node reads a placeholder (directly or below): it cannot be evaluated, so it is
  // never evaluated as it is built (deep graphs, eager mode).
  bool symbolic = false;
  std::atomic<bool> watched{false};
  NodePtr grad;

  // The longest path of nodes without results below this one (0 once it has a result).
  std::uint32_t depth = 0;

  // How many Tensor handles refer to this node. Executors may release the result of a node
  // that no handle refers to once its last consumer has run.
  std::atomic<int> handles{0};

  Node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs, Attrs attrs)
      : op(op), dtype(dtype), shape(std::move(shape)), inputs(std::move(inputs)),
        attrs(std::move(attrs)) {}
  Node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs)
      : op(op), dtype(dtype), shape(std::move(shape)), inputs(std::move(inputs)) {}
  // Iterative, so that destroying a very deep graph cannot overflow the stack.
  ~Node();

  const OpInfo& info() const { return op_info(op); }
  bool is_view() const { return info().kind == OpKind::view; }
  std::int64_t numel() const { return shape_numel(shape); }
};

}  // namespace kiln::detail
