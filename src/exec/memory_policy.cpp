#include "exec/memory_policy.hpp"

namespace kiln::detail {

void reusable(const Kernel& k, const GraphStructure& structure, const SchedulePlan& plan,
              const std::vector<int>& readers, std::vector<std::shared_ptr<Buffer>>& reuse) {
  reuse.assign(k.stored.size() + 1, nullptr);
  auto offer = [&](const Node& out) -> std::shared_ptr<Buffer> {
    Node* old = out.overwrite.get();
    if (old == nullptr || !old->result || old->result.use_count() != 1 || old->result->borrowed() ||
        old->result->dtype() != out.dtype || old->result->numel() != out.numel())
      return nullptr;
    const int slot = structure.slot(old);  // -1: not part of this evaluation
    if (slot >= 0 && plan.requested[static_cast<std::size_t>(slot)]) return nullptr;
    bool read_here = false;
    for (const KernelInput& in : k.inputs) {
      if (in.node != old) continue;
      if (in.view && !in.view->is_identity()) return nullptr;
      read_here = true;
    }
    const int remaining = slot < 0 ? 0 : readers[static_cast<std::size_t>(slot)];
    if (remaining != (read_here ? 1 : 0)) return nullptr;
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
