// Graph introspection: topological order, clients and a readable print of a graph.
#include "kiln/graph.hpp"

#include <sstream>
#include <unordered_map>

#include "graph/graph_lock.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"

namespace kiln {

namespace {

// Nodes below `root` along input edges, inputs first. Iterative, for graphs of any depth.
std::vector<detail::Node*> ordered_nodes(const Tensor& root) {
  std::vector<detail::Node*> order;
  if (!root.defined()) return order;
  enum State : std::uint8_t { unseen, expanded, done };
  std::unordered_map<detail::Node*, State> state;
  std::vector<detail::Node*> stack{root.node().get()};
  while (!stack.empty()) {
    detail::Node* n = stack.back();
    State& st = state[n];
    if (st == done) {
      stack.pop_back();
    } else if (st == expanded) {
      stack.pop_back();
      st = done;
      order.push_back(n);
    } else {
      st = expanded;
      for (auto it = n->inputs.rbegin(); it != n->inputs.rend(); ++it) {
        auto found = state.find(it->get());
        if (found == state.end() || found->second == unseen) stack.push_back(it->get());
      }
    }
  }
  return order;
}

}  // namespace

std::vector<Tensor> topological_order(const Tensor& root) {
  detail::GraphReadLock lock;
  std::vector<Tensor> out;
  const auto order = ordered_nodes(root);
  std::unordered_map<detail::Node*, detail::NodePtr> owner;
  if (root.defined()) owner[root.node().get()] = root.node();
  for (detail::Node* n : order)
    for (const auto& in : n->inputs) owner[in.get()] = in;
  for (detail::Node* n : order) out.emplace_back(owner[n]);
  return out;
}

std::vector<Tensor> clients(const Tensor& root, const Tensor& node) {
  std::vector<Tensor> out;
  if (!node.defined()) return out;
  detail::GraphReadLock lock;
  for (const Tensor& t : topological_order(root))
    for (const auto& in : t.node()->inputs)
      if (in == node.node()) {
        out.push_back(t);
        break;
      }
  return out;
}

std::string graph_to_string(const Tensor& root) {
  std::ostringstream os;
  detail::GraphReadLock lock;
  std::unordered_map<detail::Node*, std::size_t> id;
  for (detail::Node* n : ordered_nodes(root)) {
    id[n] = id.size();
    os << '%' << id[n] << " = " << n->info().name << '(';
    for (std::size_t i = 0; i < n->inputs.size(); ++i)
      os << (i ? ", %" : "%") << id[n->inputs[i].get()];
    os << ") " << dtype_name(n->dtype) << shape_to_string(n->shape);
    if (!n->name.empty()) os << " \"" << n->name << '"';
    if (n->op == detail::Op::store && n->attrs.store_kind == detail::StoreKind::placeholder)
      os << " (placeholder)";
    else if (n->op == detail::Op::store && n->attrs.store_kind == detail::StoreKind::constant)
      os << " (constant)";
    else if (detail::has_values(*n))
      os << " (computed)";
    os << '\n';
  }
  return os.str();
}

}  // namespace kiln
