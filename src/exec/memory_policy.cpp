#include "exec/memory_policy.hpp"

#include "kiln/anomaly.hpp"

namespace kiln::detail {

long EvaluationReferences::of(const GraphStructure& structure, const Node* node) {
  if (!counted_) {
    const std::vector<Node*>& nodes = structure.nodes();
    counts_.assign(nodes.size(), 0);
    auto count_in = [&](const Node& n) {
      for (const NodePtr& in : n.inputs) {
        const int slot = structure.slot(in.get());
        if (slot >= 0) ++counts_[static_cast<std::size_t>(slot)];
      }
      const int base = n.view_base ? structure.slot(n.view_base.get()) : -1;
      if (base >= 0) ++counts_[static_cast<std::size_t>(base)];
    };
    // A view keeps the view it was built on (for gradients) besides the base it reads through;
    // such an intermediate view is outside the walk, and belongs to this evaluation when
    // nothing else holds it.
    for (const Node* n : nodes) {
      count_in(*n);
      if (!n->is_view()) continue;
      for (const NodePtr* link = &n->inputs[0];
           (*link)->is_view() && link->use_count() == 1 && structure.slot(link->get()) < 0;
           link = &(*link)->inputs[0])
        count_in(**link);
    }
    counted_ = true;
  }
  const int slot = structure.slot(node);
  return slot < 0 ? 0 : counts_[static_cast<std::size_t>(slot)];
}

Node* assign_target(const Node& out) {
  return out.op == Op::assign ? out.inputs[0].get() : nullptr;
}

void reusable(const Kernel& k, const GraphStructure& structure, const SchedulePlan& plan,
              const std::vector<int>& readers, EvaluationReferences& references,
              std::vector<std::shared_ptr<Buffer>>& reuse) {
  reuse.assign(k.stored.size() + 1, nullptr);
  auto offer = [&](const Node& out) -> std::shared_ptr<Buffer> {
    const Node* old = assign_target(out);
    // Anomaly mode keeps old values, which its search may compute from again.
    if (old == nullptr || anomaly_detection_enabled() || !old->result ||
        old->result.use_count() != 1 || old->result->borrowed() ||
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
    // Last, as it counts over the whole evaluation (once): a graph outside the evaluation that
    // still reads the target (a lazy result built on it, a C API handle) would see new values.
    if (out.inputs[0].use_count() != references.of(structure, old)) return nullptr;
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
