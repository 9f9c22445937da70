// Looking at a graph: topological order, consumers, and a readable print (Theano's debugprint).
// An evaluated tensor built outside a gradient context is a leaf: look before evaluating.
#pragma once

#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

// Every node `root` depends on, inputs before the nodes that use them, `root` last.
std::vector<Tensor> topological_order(const Tensor& root);
// The nodes of root's graph that take `node` as an input.
std::vector<Tensor> clients(const Tensor& root, const Tensor& node);
// One line per node in topological order, e.g. `%2 = add(%0, %1) f32[2,3] "y"`.
std::string graph_to_string(const Tensor& root);

}  // namespace kiln
