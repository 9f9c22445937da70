/// @file
/// Compiled functions (Theano's `function`): a graph over placeholders, copied, optimised and
/// scheduled once, then called with new input values as often as needed. A call binds the
/// arguments to the copy's inputs and runs the prepared schedule: no graph is built, hashed or
/// scheduled again, so a small graph called in a loop (a training step) pays only for its kernels.
///
///   kiln::Tensor x = kiln::placeholder({32, 64}, kiln::DType::f32, "x");
///   kiln::Function f = kiln::compile({x}, {kiln::sum(kiln::relu(x))});
///   kiln::Tensor total = f(batch)[0];
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kiln/executor.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

/// A state and its new value (Theano's updates). `state` is a leaf holding values (a parameter,
/// an optimiser's moment, a tensor made from data) of the value's shape and dtype.
struct Update {
  Tensor state;
  Tensor value;
};

struct CompileOptions {
  /// After each call, every state holds its value as computed by that call: all values are
  /// computed from the states as they were before the call, then stored in the order given. The
  /// state is a shared variable, as in Theano: every handle to it reads the new values (a copy made
  /// with clone() keeps the old ones).
  std::vector<Update> updates;
  /// Where the function runs; null: the device its outputs live on (Tensor::to), else the
  /// executor current when compile() is called.
  std::shared_ptr<Executor> executor;
  /// Rewrite the copy before scheduling it: merge duplicates, fold subgraphs over constants and
  /// apply exact algebraic simplifications (see kiln/graph_passes.hpp). The results are
  /// bit-identical either way.
  bool passes = true;
};

class Function {
 public:
  Function() = default;  ///< an empty function; calling it throws

  /// The outputs for these inputs, one fresh leaf tensor per output (an earlier call's results
  /// stay as they were). Each argument must have the shape and dtype of its placeholder
  /// (incompatible_shapes / wrong_type otherwise, naming the argument); unevaluated arguments are
  /// evaluated first. Calls on one function from several threads take turns.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  template <class... T>
  requires(std::same_as<T, Tensor>&&...) std::vector<Tensor>
  operator()(const T&... inputs) const { return (*this)(std::vector<Tensor>{inputs...}); }

  bool defined() const { return impl_ != nullptr; }
  std::size_t num_inputs() const;
  std::size_t num_outputs() const;
  /// The nodes of the compiled copy that its outputs and updates reach, and what the rewrite
  /// passes changed in it (one line each, as KILN_DEBUG prints them).
  std::size_t num_nodes() const;
  const std::vector<std::string>& rewrites() const;

  struct Impl;

 private:
  friend Function compile(const std::vector<Tensor>&, const std::vector<Tensor>&, CompileOptions);
  std::shared_ptr<Impl> impl_;
};

/// Compiles the graph from `inputs` (distinct placeholders) to `outputs`. Every placeholder the
/// outputs and update values read must be among the inputs. The other leaves (parameters, data)
/// are read at each call from the tensors the graph was built on, so an update made by this or
/// another compiled function is seen; a tensor replaced by a new one (nn::Parameter::set, an
/// optimiser's step) is not: compile the training step itself, with its updates. The user's graph
/// is copied, never changed.
Function compile(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                 CompileOptions options = {});

}  // namespace kiln
