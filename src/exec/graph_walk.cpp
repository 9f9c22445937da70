#include "exec/graph_walk.hpp"

#include <cstdint>
#include <unordered_map>

namespace kiln::detail {

std::vector<Node*> dependencies(const Node& node) {
  std::vector<Node*> deps;
  if (node.is_view()) {
    deps.push_back(node.view_base.get());
    return deps;
  }
  for (const auto& in : node.inputs) {
    Node* d = in.get();
    if (!d->result && d->is_view()) d = d->view_base.get();
    deps.push_back(d);
  }
  return deps;
}

std::vector<Node*> nodes_to_compute(std::span<Node* const> targets) {
  std::vector<Node*> order;
  enum State : std::uint8_t { unseen, expanded, done };
  std::unordered_map<Node*, State> state;
  std::vector<Node*> stack;
  for (auto it = targets.rbegin(); it != targets.rend(); ++it)
    if (!(*it)->result) stack.push_back(*it);
  while (!stack.empty()) {
    Node* node = stack.back();
    State& st = state[node];
    if (st == done) {  // a second entry of a node finished through another path
      stack.pop_back();
    } else if (st == expanded) {  // everything it reads is done
      stack.pop_back();
      st = done;
      order.push_back(node);
    } else {
      st = expanded;
      for (Node* dep : dependencies(*node)) {
        auto it = state.find(dep);
        if (!dep->result && (it == state.end() || it->second == unseen)) stack.push_back(dep);
      }
    }
  }
  return order;
}

}  // namespace kiln::detail
