// Reverse-mode differentiation as a graph-to-graph transform: the gradient of every node is
// built from ordinary ops, walking the forward graph once in reverse topological order.
#include <unordered_map>
#include <unordered_set>

#include "api/builder.hpp"
#include "autodiff/gradient_rules.hpp"
#include "exec/evaluate.hpp"
#include "graph/graph_lock.hpp"
#include "graph/values.hpp"
#include "kiln/autodiff.hpp"
#include "kiln/eager_mode.hpp"
#include "kiln/graph.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {
std::string describe(const Tensor& t) {
  return shape_to_string(t.shape()) + (t.name().empty() ? "" : " \"" + t.name() + "\"");
}
}  // namespace

namespace {

// Whether `x` is `from` or among its inputs, transitively.
bool reaches(detail::Node* from, const detail::Node* x) {
  std::vector<detail::Node*> stack{from};
  std::unordered_set<detail::Node*> seen;
  while (!stack.empty()) {
    detail::Node* n = stack.back();
    stack.pop_back();
    if (n == x) return true;
    if (!seen.insert(n).second) continue;
    for (const auto& in : n->inputs) stack.push_back(in.get());
  }
  return false;
}

// y depends on x, but only through an op that passes no gradient (argmax, a comparison, a
// rounding to integers) whose result is then used as data: libtorch refuses such a request too,
// rather than give zeros that look like a result.
[[noreturn]] void no_differentiable_path(const Tensor& y, const Tensor& x,
                                         const detail::Node& cutter) {
  detail::fail(ErrorCode::illegal_derive, "gradients",
               "the output " + describe(y) + " depends on the variable " + describe(x) +
                   " only through " + std::string(cutter.info().name) + " " +
                   dtype_name(cutter.dtype) + shape_to_string(cutter.shape) +
                   ", whose index or boolean values pass no gradient; a variable the output does "
                   "not depend on at all gets zeros");
}

// The backward graph, unevaluated.
std::vector<Tensor> build_gradients(const Tensor& y, const std::vector<Tensor>& xs) {
  detail::node_of(y, "gradients");
  // The backward graph is built whole, reading the forward graph's inputs throughout.
  detail::GraphReadLock lock;
  detail::PauseAutoEvaluation whole;
  std::unordered_set<detail::Node*> variables;
  for (const Tensor& x : xs) {
    detail::node_of(x, "gradients");
    if (!x.is_watched())
      detail::fail(ErrorCode::illegal_derive, "gradients",
                   "the variable " + describe(x) + " is not watched (call watch() on it)");
    variables.insert(x.node().get());
  }
  if (!y.node()->in_gradient_context && !y.is_watched())
    detail::fail(ErrorCode::illegal_derive, "gradients",
                 "the output " + describe(y) +
                     " was not built inside a gradient context (GradientContext)");

  // The nodes on a path from y to some variable, found in one pass over the topological order.
  const std::vector<Tensor> order = topological_order(y);
  std::unordered_set<detail::Node*> leads;
  for (const Tensor& t : order) {
    bool on_path = variables.count(t.node().get()) != 0;
    for (const auto& in : t.node()->inputs) on_path = on_path || leads.count(in.get()) != 0;
    if (on_path) leads.insert(t.node().get());
  }

  // Flint's rule: f32 gradients of f32 values, else f64. A 16-bit float keeps its type, as in
  // PyTorch: the gradient reaching a 16-bit value is rounded to its type, so that the backward
  // pass through 16-bit activations runs in 16-bit memory as the forward pass does.
  if (is_complex(y.dtype()))
    detail::fail(ErrorCode::illegal_derive, "gradients",
                 "the output " + describe(y) +
                     " is complex: gradients are of real functions (take abs, real, imag, ... of "
                     "it first)");
  const DType seed_type = is_narrow_float(y.dtype()) || y.dtype() == DType::f32 ? y.dtype()
                                                                                : DType::f64;
  std::unordered_map<detail::Node*, Tensor> grad;
  if (leads.count(y.node().get())) grad[y.node().get()] = ones(y.shape(), seed_type);
  // Where a path to a variable was cut: the input, and the node whose op passes it no gradient.
  std::vector<std::pair<detail::Node*, detail::Node*>> cuts;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    detail::Node* n = it->node().get();
    auto g = grad.find(n);
    if (g == grad.end()) continue;
    const std::vector<Tensor> parts = detail::input_gradients(*it, g->second);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      detail::Node* in = n->inputs[i].get();
      if (!leads.count(in)) continue;
      // A gradient that reached an index- or bool-valued node (argmax, a comparison, a rounding
      // to integers) used as data goes no further: the path is cut. Float-valued piecewise
      // constant ops (floor) and selectors (where's condition) pass zeros, as libtorch's do.
      if (!parts[i].defined()) {
        if (!is_inexact(n->dtype)) cuts.emplace_back(in, n);
        continue;
      }
      // A real value's gradient is real: the real part of a complex one (the imaginary part
      // is the derivative along a direction the value cannot move in).
      const Tensor real_part = is_complex(parts[i].dtype()) && !is_complex(in->dtype)
                                   ? kiln::real(parts[i])
                                   : parts[i];
      const Tensor part = is_narrow_float(in->dtype) && real_part.dtype() != in->dtype
                              ? convert(real_part, in->dtype)
                              : real_part;
      auto [slot, fresh] = grad.try_emplace(in, part);
      if (!fresh) slot->second = slot->second + part;
    }
    // Interior gradients are no longer needed once passed on; variables keep theirs.
    if (!variables.count(n)) grad.erase(n);
  }

  std::vector<Tensor> out;
  for (const Tensor& x : xs) {
    const bool y_f32_or_narrower = y.dtype() == DType::f32 || is_narrow_float(y.dtype());
    const DType real = is_narrow_float(x.dtype())                            ? x.dtype()
                       : y_f32_or_narrower && real_type(x.dtype()) == DType::f32 ? DType::f32
                                                                                 : DType::f64;
    const DType type = is_complex(x.dtype()) ? complex_type(real) : real;
    auto g = grad.find(x.node().get());
    if (g == grad.end()) {
      for (const auto& [input, cutter] : cuts)
        if (reaches(input, x.node().get())) no_differentiable_path(y, x, *cutter);
      out.push_back(zeros(x.shape(), type));
    } else {
      out.push_back(g->second.dtype() == type ? g->second : convert(g->second, type));
    }
  }
  return out;
}

}  // namespace

std::vector<Tensor> gradients(const Tensor& y, const std::vector<Tensor>& xs) {
  std::vector<Tensor> out = build_gradients(y, xs);
  if (in_eager_mode()) eval_all(out);  // built with automatic evaluation paused
  return out;
}

Tensor gradient(const Tensor& y, const Tensor& x) { return gradients(y, {x})[0]; }

const Tensor& Tensor::watch() const {
  detail::node_of(*this, "watch")->watched = true;
  return *this;
}
const Tensor& Tensor::unwatch() const {
  detail::node_of(*this, "unwatch")->watched = false;
  return *this;
}
bool Tensor::is_watched() const { return detail::node_of(*this, "is_watched")->watched; }

Tensor Tensor::grad() const {
  const auto& n = detail::node_of(*this, "grad");
  return n->grad ? Tensor(n->grad) : Tensor();
}
void Tensor::zero_grad() const { detail::node_of(*this, "zero_grad")->grad.reset(); }

void Tensor::backward() const {
  detail::node_of(*this, "backward");
  if (numel() != 1)
    detail::fail(ErrorCode::illegal_derive, "backward",
                 "needs a one-element output, got shape " + shape_to_string(shape()));
  std::vector<Tensor> variables;
  for (const Tensor& t : topological_order(*this))
    if (t.is_watched()) variables.push_back(t);
  const std::vector<Tensor> grads = gradients(*this, variables);
  std::vector<Tensor> totals;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const Tensor old = variables[i].grad();
    totals.push_back(old.defined() ? kiln::convert(old + grads[i], grads[i].dtype()) : grads[i]);
  }
  eval_all(totals);
  // Store each total as a leaf, so the gradient does not keep this step's graph alive.
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const auto& total = totals[i].node();
    auto leaf = std::make_shared<detail::Node>(detail::Op::store, total->dtype, total->shape,
                                               std::vector<detail::NodePtr>{});
    detail::set_host_values(*leaf, detail::host_buffer(*total));
    leaf->home = total->home;  // a gradient stays on its variable's device
    variables[i].node()->grad = std::move(leaf);
  }
}

void eval_all(const std::vector<Tensor>& tensors) {
  std::vector<detail::Node*> nodes;
  for (const Tensor& t : tensors) nodes.push_back(detail::node_of(t, "eval_all").get());
  detail::evaluate(nodes);
}

}  // namespace kiln
