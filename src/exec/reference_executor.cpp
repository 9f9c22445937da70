// The reference executor: computes the nodes a target needs, one op at a time, in topological
// order, releasing intermediate results that no handle refers to after their last use.
#include <unordered_set>

#include "exec/reference_kernels.hpp"
#include "exec/graph_walk.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace {

class ReferenceExecutor final : public Executor {
 public:
  std::string_view name() const override { return "reference"; }

  void execute(std::span<detail::Node* const> targets) override {
    const auto order = detail::nodes_to_compute(targets);
    const std::unordered_set<detail::Node*> wanted(targets.begin(), targets.end());
    auto remaining = detail::consumer_counts(order);
    // Only results computed here can be released: they can be computed again if needed.
    const std::unordered_set<detail::Node*> computed(order.begin(), order.end());
    for (detail::Node* node : order) {
      auto out = std::make_shared<detail::Buffer>(node->dtype, node->numel());
      // No elements: nothing to compute, however large the other sizes of the shape.
      if (out->numel() != 0) detail::run_reference_kernel(*node, *out);
      node->result = std::move(out);
      for (detail::Node* dep : detail::dependencies(*node)) {
        if (--remaining[dep] == 0 && !wanted.count(dep) && dep->handles.load() == 0 &&
            computed.count(dep) != 0)
          dep->result.reset();
      }
    }
  }
};

}  // namespace

std::shared_ptr<Executor> reference_executor() {
  static const auto instance = std::make_shared<ReferenceExecutor>();
  return instance;
}

}  // namespace kiln
