// Helpers every op builder uses: validation with uniform error messages, and node creation.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "graph/node.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln::detail {

// Throws kiln::Error(code, "<op>: <what>").
[[noreturn]] void fail(ErrorCode code, std::string_view op, const std::string& what);

// The operand of an op whose values are floats, as the C++ API takes it: an integer tensor is
// or bool tensor is converted to default_dtype() first (libtorch's rule). Flint's rule, which the C API keeps,
// computes such ops of integers in f64 (the registry's float_valued type rule).
Tensor float_operand(const Tensor& a);
// The same, for the operand of `op` when its type rule is float_valued; others pass unchanged.
Tensor float_operand(Op op, const Tensor& a);

// The node of a defined handle; an empty handle is an error of `op`.
const NodePtr& node_of(const Tensor& t, std::string_view op);

// A new node after checking that `shape` has no negative sizes and an addressable element count.
Tensor make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs, Attrs attrs);
// The same for an op without attributes (most nodes: the attributes are not built twice).
Tensor make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> inputs);

// A view node over `input`: `fold` applies the view op to the input's own map, so chains of views
// compose into one map over the nearest node that holds or will hold a buffer.
Tensor make_view(Op op, const Tensor& input, Shape shape, Attrs attrs,
                 const std::function<ViewMap(const ViewMap&)>& fold);

// `axis` in [-rank, rank) as a non-negative axis, else an illegal_dimension error of `op`.
int normalize_axis(std::string_view op, int axis, int rank, const Shape& shape);
// `value` for a tensor of type t: a u8, i8 or i16 fill outside the type's range is
// kiln::Error(wrong_type) naming `op` (as libtorch's "value cannot be converted to type uint8_t
// without overflow"); arithmetic with such a scalar wraps instead, as libtorch's does.
Scalar fitting_value(std::string_view op, Scalar value, DType t);
// `value` saturated to a u8, i8 or i16 type's range (clamp's bounds); other types keep it.
Scalar saturated_to(Scalar value, DType t);

// A per-dimension argument must have one entry per dimension.
void check_arity(std::string_view op, std::size_t given, const Shape& shape, const char* what);

std::string shape_str(const Shape& s);

// While one lives on a thread, the nodes that thread builds are not evaluated for their depth.
// gradients() builds a whole backward graph under one: each of its nodes deeper than the limit
// would otherwise evaluate the forward graph below it again, and deep graphs took quadratic time.
class PauseAutoEvaluation {
 public:
  PauseAutoEvaluation();
  ~PauseAutoEvaluation();
  PauseAutoEvaluation(const PauseAutoEvaluation&) = delete;
  PauseAutoEvaluation& operator=(const PauseAutoEvaluation&) = delete;
};
bool auto_evaluation_paused();

// The op the user called, while a composite builds it from other ops: errors raised inside name
// it and its operands' shapes, and the nodes built meanwhile remember it (Node::called_as), so
// that an error their evaluation raises later (an index out of range) names it too. The
// outermost on a thread counts: a composite built from composites is named as the user called
// it. `name` must be a string literal (nodes keep the pointer).
class CalledOp {
 public:
  explicit CalledOp(const char* name);
  ~CalledOp();
  CalledOp(const CalledOp&) = delete;
  CalledOp& operator=(const CalledOp&) = delete;
  bool outermost() const { return outermost_; }

 private:
  bool outermost_;
};
// Rethrows the kiln::Error being handled as raised by `name` called with `operands`, unless it
// names `name` already.
[[noreturn]] void rethrow_as_called(const char* name, std::initializer_list<const Tensor*> operands);
// Runs `build` (which builds the op `name`) as described for CalledOp.
template <class Build>
auto as_called(const char* name, std::initializer_list<const Tensor*> operands, Build&& build)
    -> decltype(build()) {
  const CalledOp scope(name);
  if (!scope.outermost()) return build();
  try {
    return build();
  } catch (const Error&) {
    rethrow_as_called(name, operands);
  }
}

// A seed drawn from the global generator (reset by manual_seed).
std::uint64_t next_global_seed();

}  // namespace kiln::detail
