// The one entry point from the front end into execution.
#pragma once

#include <memory>
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
// Evaluates the nodes on `executor` where they hold no values, then makes their values present
// in its memory (Executor::place), holding the graph's lock as an evaluation does.
void place(std::span<Node* const> nodes, Executor& executor);
// Computes `node` with the next evaluation of any graph (so that it shares that evaluation's
// kernels: a module's running statistics come from the training step's pass), unless something
// reads it first. Symbolic nodes are never computed.
void evaluate_later(std::shared_ptr<Node> node);
// This thread's innermost DeviceGuard's executor; null outside every guard.
const std::shared_ptr<Executor>& guarded_executor();
// Whether KILN_DEBUG asks for schedules, fallbacks and rewrites on stderr.
bool debug_enabled();
}  // namespace kiln::detail
