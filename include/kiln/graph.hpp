/// @file
/// Looking at a graph: topological order, consumers, readable prints (Theano's debugprint) and a
/// drawing (Graphviz DOT).
/// An evaluated tensor built outside a gradient context is a leaf: look before evaluating.
#pragma once

#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

/// Every node `root` depends on, inputs before the nodes that use them, `root` last.
std::vector<Tensor> topological_order(const Tensor& root);
/// The nodes of root's graph that take `node` as an input.
std::vector<Tensor> clients(const Tensor& root, const Tensor& node);
/// One line per node in topological order, e.g. `%2 = add(%0, %1) f32[2,3] "y"`.
std::string graph_to_string(const Tensor& root);

/// The graph as a tree in the manner of Theano's debugprint: one line per node, indented by its
/// depth below the root, with its id, op, type and shape, name, and what it is: `view` (reads
/// another node's values through an index map), `data` (a leaf holding values), `constant`,
/// `placeholder` (a symbolic input), `computed` (an evaluated node), `watched` (a gradient
/// variable). A node met again is not expanded again:
/// its line says `(above)`. Roots that share nodes print them once.
///   %0 add f32[2,3] "y"
///    |%1 exp f32[2,3]
///    | |%2 store f32[2,3] "x" data
///    |%2 (above)
std::string debug_print(const Tensor& root);
std::string debug_print(const std::vector<Tensor>& roots);

/// The graph in Graphviz's DOT language (render with `dot -Tsvg graph.dot > graph.svg`): a box per
/// node labelled as in debug_print, an edge from each input to its reader (dashed into views),
/// evaluated nodes filled. With `schedule`, the kernels the CPU executor would run for these
/// roots are drawn as clusters around the nodes each computes.
struct DotOptions {
  bool schedule = false;
};
std::string to_dot(const std::vector<Tensor>& roots, const DotOptions& options = {});
std::string to_dot(const Tensor& root, const DotOptions& options = {});

}  // namespace kiln
