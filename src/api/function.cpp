// Compiled functions: the copy of the user's graph, and a call that binds values to its leaves and
// runs the schedule the executor prepared for it.
#include "kiln/function.hpp"

#include <algorithm>
#include <iostream>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "api/builder.hpp"
#include "api/graph_passes.hpp"
#include "exec/evaluate.hpp"
#include "graph/graph_lock.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"

namespace kiln {

using detail::Node;
using detail::NodePtr;
using detail::Op;
using detail::StoreKind;

struct Function::Impl {
  std::shared_ptr<Executor> executor;
  // The copy's leaves: one per input (bound to the arguments) and one per leaf of the user's
  // graph that holds values (bound to that node's values at each call).
  std::vector<NodePtr> arguments;
  std::vector<std::pair<NodePtr, NodePtr>> bound;  // (copy's leaf, user's node)
  // Every node of the copy that a kernel computes; cleared before each run.
  std::vector<NodePtr> computed;
  std::vector<NodePtr> outputs;
  // Per update: the user's state and the copy's node computing its value.
  std::vector<std::pair<NodePtr, NodePtr>> updates;
  std::vector<Node*> targets;
  std::unique_ptr<Executor::Prepared> prepared;
  std::vector<std::string> rewrites;
  std::size_t nodes = 0;
  std::mutex mutex;
};

namespace {

[[noreturn]] void fail(ErrorCode code, const std::string& what) {
  detail::fail(code, "compile", what);
}

std::string describe(const Node& n) {
  return std::string(dtype_name(n.dtype)) + shape_to_string(n.shape) +
         (n.name.empty() ? "" : " \"" + n.name + "\"");
}

bool is_placeholder(const Node& n) {
  return n.op == Op::store && n.attrs.store_kind == StoreKind::placeholder;
}

NodePtr new_leaf(const Node& like, StoreKind kind) {
  detail::Attrs attrs;
  attrs.store_kind = kind;
  auto leaf = std::make_shared<Node>(Op::store, like.dtype, like.shape, std::vector<NodePtr>{},
                                     std::move(attrs));
  leaf->name = like.name;
  return leaf;
}

// Copies the graph below `roots` (inputs and view bases are its edges), bottom-up and without
// recursion, so that a graph of any depth can be compiled. The caller holds the read lock.
class GraphCopy {
 public:
  GraphCopy(Function::Impl& f, const std::unordered_map<const Node*, NodePtr>& arguments)
      : f_(f), copies_(arguments.begin(), arguments.end()) {}

  NodePtr copy(const NodePtr& root) {
    std::vector<std::pair<const NodePtr*, bool>> stack{{&root, false}};
    while (!stack.empty()) {
      auto [p, expanded] = stack.back();
      stack.pop_back();
      const Node& n = **p;
      if (copies_.count(&n) != 0) continue;
      if (!expanded && !is_leaf(n)) {
        stack.emplace_back(p, true);
        for (const NodePtr& in : n.inputs) stack.emplace_back(&in, false);
        if (n.view_base) stack.emplace_back(&n.view_base, false);
        continue;
      }
      copies_.emplace(&n, is_leaf(n) ? leaf_for(*p) : copy_node(n));
    }
    return copies_.at(root.get());
  }

  // The copy's leaf for the user's node `n` (which must hold values), made if not made yet.
  NodePtr bound_leaf(const NodePtr& n) {
    auto it = copies_.find(n.get());
    if (it != copies_.end()) return it->second;
    return copies_.emplace(n.get(), leaf_for(n)).first->second;
  }

 private:
  static bool is_leaf(const Node& n) { return n.op == Op::store || detail::has_values(n); }

  // A leaf of the copy that takes the values of the user's node `n` at each call.
  NodePtr leaf_for(const NodePtr& user) {
    const Node& n = *user;
    if (is_placeholder(n))
      fail(ErrorCode::invalid_select, "the graph reads the placeholder " + describe(n) +
                                          ", which is not among the function's inputs");
    if (!detail::has_values(n))
      fail(ErrorCode::internal_error, "a leaf " + describe(n) + " holds no values");
    const bool constant = n.op == Op::store && n.attrs.store_kind == StoreKind::constant;
    NodePtr leaf = new_leaf(n, constant ? StoreKind::constant : StoreKind::data);
    detail::set_storage(*leaf, detail::storage_of(n));
    f_.bound.emplace_back(leaf, user);
    return leaf;
  }

  NodePtr copy_node(const Node& n) {
    std::vector<NodePtr> inputs;
    inputs.reserve(n.inputs.size());
    std::uint32_t depth = 0;
    for (const NodePtr& in : n.inputs) {
      inputs.push_back(copies_.at(in.get()));
      depth = std::max(depth, inputs.back()->depth);
    }
    auto c = std::make_shared<Node>(n.op, n.dtype, n.shape, std::move(inputs), n.attrs);
    c->name = n.name;
    if (n.view_base) c->view_base = copies_.at(n.view_base.get());
    c->view = n.view;
    c->depth = depth + 1;
    f_.computed.push_back(c);
    return c;
  }

  Function::Impl& f_;
  std::unordered_map<const Node*, NodePtr> copies_;
};

// The nodes the outputs and update values reach.
std::size_t count_nodes(const Function::Impl& f) {
  std::vector<const Node*> roots;
  for (const NodePtr& out : f.outputs) roots.push_back(out.get());
  for (const auto& u : f.updates) roots.push_back(u.second.get());
  return detail::reached_from(std::move(roots)).size();
}

}  // namespace

Function compile(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                 CompileOptions options) {
  auto f = std::make_shared<Function::Impl>();
  // Unless told, the function runs where its outputs live, as their evaluation would.
  f->executor = options.executor;
  if (f->executor == nullptr) {
    std::shared_ptr<Executor> placed;
    auto follow = [&placed](const Tensor& t) {
      if (!t.defined() || !t.is_placed()) return;
      const std::shared_ptr<Executor> home = t.device().executor();
      if (placed != nullptr && placed != home)
        fail(ErrorCode::device_error, "outputs live on different devices (" +
                                          std::string(placed->name()) + " and " +
                                          std::string(home->name()) +
                                          "): name one in CompileOptions::executor");
      placed = home;
    };
    for (const Tensor& out : outputs) follow(out);
    for (const Update& u : options.updates) follow(u.value);
    f->executor = placed != nullptr ? placed : current_executor();
  }
  if (outputs.empty() && options.updates.empty())
    fail(ErrorCode::invalid_select, "a function needs at least one output or update");

  std::unordered_map<const Node*, NodePtr> arguments;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Node& n = *detail::node_of(inputs[i], "compile");
    if (!is_placeholder(n))
      fail(ErrorCode::invalid_select, "input " + std::to_string(i) + " (" + describe(n) +
                                          ") is not a placeholder: inputs are made by "
                                          "kiln::placeholder");
    NodePtr leaf = new_leaf(n, StoreKind::data);
    if (!arguments.emplace(&n, leaf).second)
      fail(ErrorCode::invalid_select,
           "input " + std::to_string(i) + " (" + describe(n) + ") is named twice");
    f->arguments.push_back(std::move(leaf));
  }
  std::unordered_set<const Node*> states;
  for (std::size_t i = 0; i < options.updates.size(); ++i) {
    const Update& u = options.updates[i];
    const Node& s = *detail::node_of(u.state, "compile");
    const Node& v = *detail::node_of(u.value, "compile");
    const std::string which = "update " + std::to_string(i) + ": ";
    if (s.op != Op::store || s.attrs.store_kind != StoreKind::data)
      fail(ErrorCode::invalid_select,
           which + "the state " + describe(s) + " is a" +
               (s.op == Op::store
                    ? std::string(s.attrs.store_kind == StoreKind::constant ? " constant"
                                                                            : " placeholder")
                    : " " + std::string(s.info().name) + " node") +
               "; a state is a leaf holding values (a parameter, a tensor made from data)");
    if (s.shape != v.shape)
      fail(ErrorCode::incompatible_shapes,
           which + "the state is " + describe(s) + " and its value " + describe(v));
    if (s.dtype != v.dtype)
      fail(ErrorCode::wrong_type,
           which + "the state is " + describe(s) + " and its value " + describe(v));
    if (!states.insert(&s).second)
      fail(ErrorCode::invalid_select, which + "the state " + describe(s) + " is updated twice");
  }

  {
    detail::GraphReadLock lock;
    GraphCopy copy(*f, arguments);
    for (const Tensor& out : outputs)
      f->outputs.push_back(copy.copy(detail::node_of(out, "compile")));
    for (const Update& u : options.updates) {
      NodePtr value = copy.copy(u.value.node());
      copy.bound_leaf(
          u.state.node());  // the state is read at each call even where no output reads it
      f->updates.emplace_back(u.state.node(), std::move(value));
    }
  }
  if (options.passes) {
    std::vector<NodePtr*> roots;
    for (NodePtr& out : f->outputs) roots.push_back(&out);
    for (auto& u : f->updates) roots.push_back(&u.second);
    f->rewrites = detail::run_graph_passes(roots, f->computed, *f->executor);
    if (detail::debug_enabled())
      for (const std::string& line : f->rewrites) std::cerr << "[kiln] compile: " << line << "\n";
  }
  f->nodes = count_nodes(*f);
  auto target = [&](Node* n) {
    if (std::find(f->targets.begin(), f->targets.end(), n) == f->targets.end())
      f->targets.push_back(n);
  };
  for (const NodePtr& out : f->outputs) target(out.get());
  for (const auto& u : f->updates) target(u.second.get());

  Function function;
  function.impl_ = std::move(f);
  return function;
}

namespace {

void check_arguments(const Function::Impl& f, const std::vector<Tensor>& args) {
  if (args.size() != f.arguments.size())
    throw Error(ErrorCode::invalid_select, "compiled function: called with " +
                                               std::to_string(args.size()) + " arguments, takes " +
                                               std::to_string(f.arguments.size()));
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Node& want = *f.arguments[i];
    const Node& got = *detail::node_of(args[i], "compiled function");
    const std::string what = "compiled function: argument " + std::to_string(i) + " is " +
                             describe(got) + ", the input " + describe(want) + " takes " +
                             std::string(dtype_name(want.dtype)) + shape_to_string(want.shape);
    if (got.shape != want.shape) throw Error(ErrorCode::incompatible_shapes, what);
    if (got.dtype != want.dtype) throw Error(ErrorCode::wrong_type, what);
  }
}

// Drops what the copy holds between calls: its computed results and the arguments' values.
void release_results(Function::Impl& f) {
  for (const NodePtr& n : f.computed) detail::set_storage(*n, nullptr);
  for (const NodePtr& a : f.arguments) detail::set_storage(*a, nullptr);
}

}  // namespace

std::vector<Tensor> Function::operator()(const std::vector<Tensor>& args) const {
  if (!impl_) throw Error(ErrorCode::invalid_select, "compiled function: the function is empty");
  Impl& f = *impl_;
  check_arguments(f, args);
  std::lock_guard call(f.mutex);
  // Arguments and leaves without values yet are computed first, on the function's executor.
  std::vector<Node*> pending;
  for (const Tensor& a : args)
    if (!a.is_evaluated()) pending.push_back(a.node().get());
  for (const auto& b : f.bound)
    if (!detail::has_values(*b.second)) pending.push_back(b.second.get());
  if (!pending.empty()) detail::evaluate(pending, *f.executor);

  std::vector<Tensor> results;
  results.reserve(f.outputs.size());
  detail::GraphWriteLock lock;
  try {
    for (std::size_t i = 0; i < args.size(); ++i)
      detail::set_storage(*f.arguments[i], detail::storage_of(*args[i].node()));
    for (const auto& [leaf, source] : f.bound)
      detail::set_storage(*leaf, detail::storage_of(*source));
    if (f.prepared)
      f.prepared->run();
    else
      f.prepared = f.executor->prepare(f.targets);
    for (const NodePtr& out : f.outputs) {
      NodePtr leaf = new_leaf(*out, StoreKind::data);
      leaf->name.clear();
      detail::set_storage(*leaf, detail::storage_of(*out));
      results.emplace_back(std::move(leaf));
    }
    // Every value was computed from the states before the call; now they take the new values.
    for (const auto& [state, value] : f.updates)
      detail::set_storage(*state, detail::storage_of(*value));
  } catch (...) {
    release_results(f);
    throw;
  }
  release_results(f);
  return results;
}

std::size_t Function::num_inputs() const { return impl_ ? impl_->arguments.size() : 0; }
std::size_t Function::num_outputs() const { return impl_ ? impl_->outputs.size() : 0; }
std::size_t Function::num_nodes() const { return impl_ ? impl_->nodes : 0; }
const std::vector<std::string>& Function::rewrites() const {
  static const std::vector<std::string> none;
  return impl_ ? impl_->rewrites : none;
}

}  // namespace kiln
