// The memory policy every backend's runtime applies (today: the CPU executor's): a kernel's
// result is released after its last reader unless a handle or a target needs it, and an
// elementwise kernel may write its output into the buffer of a node it overwrites
// (Node::overwrite, set by optimisers), when that is safe.
#pragma once

#include <memory>
#include <vector>

#include "exec/fusion.hpp"
#include "exec/schedule_cache.hpp"
#include "graph/buffer.hpp"

namespace kiln::detail {

// For each output of an elementwise kernel (root, then the stored nodes), written into `reuse`:
// the buffer of the node it may overwrite (Node::overwrite), when that is safe now: the buffer is
// that node's alone, has the output's type and size, is not wanted by the caller, no later
// kernel reads it, and this kernel reads it (if at all) in order. `readers` counts the kernels
// yet to read each node.
void reusable(const Kernel& k, const GraphStructure& structure, const SchedulePlan& plan,
              const std::vector<int>& readers, std::vector<std::shared_ptr<Buffer>>& reuse);

}  // namespace kiln::detail
