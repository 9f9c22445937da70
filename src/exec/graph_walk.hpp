// What an evaluation has to compute: the part of the graph below a target that has no results
// yet, in an order where every node comes after the nodes it reads.
#pragma once

#include <span>
#include <vector>

#include "graph/node.hpp"

namespace kiln::detail {

// The nodes a kernel for `node` reads: its inputs, with each view that has no result of its own
// replaced by the node the view reads through.
std::vector<Node*> dependencies(const Node& node);

// The nodes without results that the targets need (targets included, unless they have results),
// inputs first. Iterative, so graph depth is limited only by memory.
std::vector<Node*> nodes_to_compute(std::span<Node* const> targets);

}  // namespace kiln::detail
