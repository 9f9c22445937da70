// Rewrite passes over a graph that belongs to its caller alone (a compiled function's copy): the
// nodes are changed in place. In order, in one sweep from the leaves up:
//   1. exact algebraic simplifications: a node that computes the same bits as one of its operands
//      for every input (NaN, infinities and -0 included) is that operand: convert to the same
//      dtype, neg(neg(x)), x * 1, x / 1, x - (+0), x + 0 on integers, a view whose composed map
//      is the identity (transpose of a transpose, reshape back to the shape). Not x - x nor
//      x * 0 on floats: NaN and infinities make them inexact.
//   2. merging duplicates: a node equal to one met before (op, dtype, shape, attributes, view
//      map and the same inputs) is that node, so a repeated subgraph is computed once.
//   3. constant folding: a subgraph that reads only constants (kiln::constant, scalar literals)
//      is computed now, on the function's executor, and becomes a constant; not when its result
//      would be larger than the constants it reads (a broadcast would only trade work for memory),
//      nor sources (arange, random) or custom callables.
// Each round visits every node once (a few hash lookups per node); rounds repeat while they
// change something, four at most (a fold can enable a simplification).
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "graph/node.hpp"
#include "kiln/executor.hpp"

namespace kiln::detail {

// Every node below `roots` (inputs and view bases are the edges), the roots included.
std::unordered_set<const Node*> reached_from(std::vector<const Node*> roots);

// Rewrites the graph below `roots` (each root is replaced where it is rewritten itself).
// `computed` lists the graph's non-leaf nodes, inputs before their readers; it is replaced by the
// nodes still computed afterwards, in the same order. Returns one line per change (what
// KILN_DEBUG prints).
std::vector<std::string> run_graph_passes(const std::vector<NodePtr*>& roots,
                                          std::vector<NodePtr>& computed, Executor& executor);

}  // namespace kiln::detail
