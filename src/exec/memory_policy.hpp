// The memory policy every backend's runtime applies: a kernel's result is released after its
// last reader unless a handle or a target needs it, and the output of an `assign` may take over
// the memory of its target when nobody can tell the difference.
#pragma once

#include <memory>
#include <vector>

#include "exec/fusion.hpp"
#include "exec/schedule_cache.hpp"
#include "graph/buffer.hpp"

namespace kiln::detail {

// For each output of an elementwise kernel (root, then the stored nodes), written into `reuse`:
// the buffer of its target when the output is an `assign` and taking that buffer over cannot be
// seen: no handle refers to the target, and every reference to it is held by a node of this
// evaluation (so no graph outside it reads the target later); the buffer is the target's alone,
// not borrowed, of the output's type and size; the target is not requested; no later kernel reads
// it, and this kernel reads it (if at all) in order. `readers` counts the kernels yet to read
// each node. A target whose buffer an output took must lose its result once the kernel has run:
// its values are gone.
// How many references to each node of an evaluation its nodes hold (inputs and view bases),
// counted once per evaluation, when an assign first asks.
class EvaluationReferences {
 public:
  void reset() { counted_ = false; }
  long of(const GraphStructure& structure, const Node* node);

 private:
  std::vector<long> counts_;  // per position in the structure
  bool counted_ = false;
};

void reusable(const Kernel& k, const GraphStructure& structure, const SchedulePlan& plan,
              const std::vector<int>& readers, EvaluationReferences& references,
              std::vector<std::shared_ptr<Buffer>>& reuse);

// The node whose buffer `out` may take over (the target of an assign), or null.
Node* assign_target(const Node& out);

}  // namespace kiln::detail
