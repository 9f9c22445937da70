// The one entry point from the front end into execution.
#pragma once

namespace kiln::detail {
struct Node;
// Computes `node` with the current executor unless it already holds a result.
void evaluate(Node& node);
}  // namespace kiln::detail
