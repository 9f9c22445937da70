// Internals of the C API (include/flint.h): the C++ side of an FGraphNode, the node registry,
// and the guard every exported function runs its body in so that nothing throws across the C
// boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "flint.h"
#include "graph/node.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln::capi {

// The C++ side of a node: the C struct users see (as the base, so that an FGraphNode* of a
// node made here converts back in O(1)) and the kiln tensor it stands for.
// The additional_data of FSLICE, FEXTEND and FSLIDING_WINDOW nodes and the arrays it points to.
struct CallArguments {
  std::vector<long> first, second, third;  // FSlice's start, end, step; FExtend's step
  std::vector<std::size_t> sizes;          // FExtend's start, FSlidingWindow's size
  std::vector<unsigned int> steps;         // FSlidingWindow's step
  FSlice slice{};
  FExtend extend{};
  FSlidingWindow window{};
};

struct CNode : FGraphNode {
  Tensor tensor;
  std::vector<std::size_t> shape;
  std::vector<FGraphNode*> preds;
  FResultData result{};
  FStore store{};
  std::unique_ptr<CallArguments> arguments;
  // The device copy result.mem_id names, kept alive while it is attached.
  std::shared_ptr<detail::DeviceMemory> result_device;
  // Keep the buffers result.data and store.data point into alive.
  std::shared_ptr<detail::Buffer> result_buffer;
  std::shared_ptr<detail::Buffer> store_buffer;
};

// An error found by the C layer itself (argument checks); its message has no function prefix.
class CError : public std::runtime_error {
 public:
  CError(FErrorType code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  FErrorType code() const noexcept { return code_; }

 private:
  FErrorType code_;
};

// ---- error state and logging (errors.cpp) ----------------------------------------------------
// Records an error of this thread and logs it at F_ERROR level. Never throws.
void set_error(FErrorType code, const char* message) noexcept;
void log_message(FLogType type, const char* message) noexcept;
bool logging_enabled(FLogType type) noexcept;

// ---- the call context every exported function uses ---------------------------------------------
class Call {
 public:
  explicit Call(const char* function) : function_(function) {}
  const char* function() const { return function_; }

  // The node behind an argument: non-NULL and alive, else an INVALID_SELECT error. Its shape is
  // remembered for error messages.
  CNode& node(const FGraphNode* p, const char* what = "operand");
  // The node's tensor as an operand: inverse-broadcast if the node is marked so.
  Tensor operand(const FGraphNode* p, const char* what = "operand");
  // A non-NULL array argument, else an INVALID_SELECT error.
  template <class T> const T* array(const T* p, const char* what) const {
    if (p == nullptr) throw CError(INVALID_SELECT, std::string(what) + " is NULL");
    return p;
  }
  // Records the error "<function>: <what>" (with the operand shapes if `what` does not name
  // them). `from_kiln`: `what` is a kiln::Error message, whose "<op>: " prefix is dropped.
  void fail(FErrorType code, const std::string& what, bool from_kiln = false) const noexcept;
  const std::vector<Shape>& operand_shapes() const { return shapes_; }

 private:
  const char* function_;
  std::vector<Shape> shapes_;
};

// Runs `body`, turning every exception into the C error state and `on_error`.
template <class R, class F> R guarded(Call& call, R on_error, F&& body) noexcept {
  try {
    return body();
  } catch (const CError& e) {
    call.fail(e.code(), e.what());
  } catch (const Error& e) {
    call.fail(static_cast<FErrorType>(static_cast<int>(e.code())), e.what(), true);
  } catch (const std::bad_alloc&) {
    call.fail(OUT_OF_MEMORY, "out of memory");
  } catch (const std::length_error&) {
    call.fail(OUT_OF_MEMORY, "out of memory (size too large)");
  } catch (const std::exception& e) {
    call.fail(INTERNAL_ERROR, e.what());
  } catch (...) {
    call.fail(INTERNAL_ERROR, "unknown exception");
  }
  return on_error;
}
template <class F> void guarded_void(Call& call, F&& body) noexcept {
  guarded(call, 0, [&] {
    body();
    return 0;
  });
}

// ---- nodes (nodes.cpp) -----------------------------------------------------------------------
// A new C node for `t` (reshaped to [1] if it is 0-dimensional, executed at once in eager mode)
// with `preds` as predecessors, whose reference counters are incremented.
// `arguments` (FSLICE, FEXTEND, FSLIDING_WINDOW) become the node's additional_data.
FGraphNode* make_node(Tensor t, FOperationType op, std::initializer_list<FGraphNode*> preds = {},
                      std::unique_ptr<CallArguments> arguments = nullptr);
// The node of a binary op with a scalar operand. Flint's graph shows the scalar as a constant
// node (FGEN_CONSTANT) of the tensor operand's shape and the scalar's type (decision 20): it is
// made here as the predecessor on the scalar's side, and freed with the node.
enum class ScalarSide { left, right };
FGraphNode* make_scalar_node(Tensor t, FOperationType op, FGraphNode* operand, Scalar scalar,
                             ScalarSide side);
// The node behind a live FGraphNode*, or nullptr for NULL and pointers not made here (or freed).
CNode* lookup(const FGraphNode* p) noexcept;
// Sets result_data from the tensor's computed result.
// Points the node's result_data at its tensor's values (once; safe from several threads).
void attach_result(CNode& node);
// The node's result_data, read under the lock attach_result writes it under.
FResultData* attached_result(CNode& node);
// Makes `node` an FSTORE node whose store points at `buffer`.
void attach_store(CNode& node, std::shared_ptr<detail::Buffer> buffer);
// The FOperationType that best describes a kiln node built outside a C function.
FOperationType op_type_of(const Tensor& t);
// For unsigned axis arguments.
int to_axis(unsigned int axis, const char* what);

// ---- conversions -----------------------------------------------------------------------------
DType to_dtype(FType t);  // WRONG_TYPE for values outside the enum
// WRONG_TYPE for the kiln types the Flint C API has no FType for (f16, bf16): a graph of such a
// type that reaches the C API is refused, never reinterpreted.
FType to_ftype(DType t);
// `dimensions` (>= 1) sizes from a size_t array; sizes above INT64_MAX are ILLEGAL_DIMENSION.
Shape to_shape(const std::size_t* shape, int dimensions, const char* what = "shape");

// ---- execution (execution.cpp) -----------------------------------------------------------------
bool eager_enabled() noexcept;
// Computes the node with the current executor (the CPU one unless KILN_EXECUTOR or
// set_executor chose another), initializing the CPU backend, and sets result_data.
void execute(CNode& node);
// The same on the CPU executor, whichever executor is current (fExecuteGraph_cpu).
void execute_on_cpu(CNode& node);
// Executes on the OpenCL executor (OCL_ERROR without one) and attaches the result.
void execute_on_gpu(CNode& node);

}  // namespace kiln::capi
