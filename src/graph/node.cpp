#include "graph/node.hpp"

namespace kiln::detail {

Node::~Node() {
  // Only nodes that die with this one need the explicit stack; when every input is shared (the
  // common case: a handle or another node still holds it) the members are released as usual.
  auto dies_with = [](const NodePtr& p) { return p && p.use_count() == 1; };
  bool deep = dies_with(view_base) || dies_with(grad);
  for (const auto& in : inputs) deep = deep || dies_with(in);
  if (!deep) return;
  std::vector<NodePtr> pending;
  auto detach = [&pending](Node& n) {
    for (auto& in : n.inputs)
      if (in) pending.push_back(std::move(in));
    n.inputs.clear();
    if (n.view_base) pending.push_back(std::move(n.view_base));
    if (n.grad) pending.push_back(std::move(n.grad));
  };
  detach(*this);
  while (!pending.empty()) {
    NodePtr p = std::move(pending.back());
    pending.pop_back();
    // When this is the last owner, take the node's inputs before it dies so that its own
    // destructor finds nothing to recurse into.
    if (p.use_count() == 1) detach(*p);
  }
}

}  // namespace kiln::detail
