// The one entry point from the front end into execution.
#pragma once

#include <span>

namespace kiln {
class Executor;
}

namespace kiln::detail {
struct Node;
// Computes the nodes with the current executor (those holding results already are skipped).
void evaluate(Node& node);
void evaluate(std::span<Node* const> nodes);
// The same with a given executor.
void evaluate(std::span<Node* const> nodes, Executor& executor);
}  // namespace kiln::detail
