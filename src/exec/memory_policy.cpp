#include "exec/memory_policy.hpp"

namespace kiln::detail {

namespace {

// How many references to `target` the nodes of this evaluation hold (inputs and view bases).
long references_within(const GraphStructure& structure, const Node* target) {
  long count = 0;
  for (const Node* n : structure.nodes()) {
    for (const NodePtr& in : n->inputs) count += in.get() == target;
    count += n->view_base.get() == target;
  }
  return count;
}

}  // namespace

Node* assign_target(const Node& out) {
  return out.op == Op::assign ? out.inputs[0].get() : nullptr;
}

void reusable(const Kernel& k, const GraphStructure& structure, const SchedulePlan& plan,
              const std::vector<int>& readers, std::vector<std::shared_ptr<Buffer>>& reuse) {
  reuse.assign(k.stored.size() + 1, nullptr);
  auto offer = [&](const Node& out) -> std::shared_ptr<Buffer> {
    const Node* old = assign_target(out);
    if (old == nullptr || !old->result || old->result.use_count() != 1 || old->result->borrowed() ||
        old->result->dtype() != out.dtype || old->result->numel() != out.numel() ||
        old->handles.load() != 0)
      return nullptr;
    const int slot = structure.slot(old);  // -1: not part of this evaluation
    if (slot < 0 || plan.requested[static_cast<std::size_t>(slot)]) return nullptr;
    bool read_here = false;
    for (const KernelInput& in : k.inputs) {
      if (in.node != old) continue;
      if (in.view && !in.view->is_identity()) return nullptr;
      read_here = true;
    }
    if (readers[static_cast<std::size_t>(slot)] != (read_here ? 1 : 0)) return nullptr;
    // Last, as it walks the evaluation: a graph outside it that still reads the target (a lazy
    // result built on it, a C API handle) would see the new values.
    if (out.inputs[0].use_count() != references_within(structure, old)) return nullptr;
    return old->result;
  };
  reuse[0] = offer(*k.root);
  for (std::size_t i = 0; i < k.stored.size(); ++i) reuse[i + 1] = offer(*k.stored[i]);
  // Two outputs must not be offered one buffer.
  for (std::size_t i = 1; i < reuse.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (reuse[i] && reuse[i] == reuse[j]) reuse[i] = nullptr;
}

}  // namespace kiln::detail
