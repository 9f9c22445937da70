#include "kiln/executor.hpp"

#include <mutex>

#include "exec/evaluate.hpp"
#include "graph/node.hpp"

namespace kiln {

namespace {
std::mutex& executor_mutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<Executor>& executor_slot() {
  static std::shared_ptr<Executor> current = reference_executor();
  return current;
}
}  // namespace

std::shared_ptr<Executor> current_executor() {
  std::lock_guard lock(executor_mutex());
  return executor_slot();
}

void set_executor(std::shared_ptr<Executor> executor) {
  std::lock_guard lock(executor_mutex());
  executor_slot() = executor ? std::move(executor) : reference_executor();
}

namespace detail {

void evaluate(std::span<Node* const> nodes) {
  // Results are cached in shared nodes, so evaluations are serialised.
  static std::mutex evaluation_mutex;
  std::lock_guard lock(evaluation_mutex);
  current_executor()->execute(nodes);
}

void evaluate(Node& node) {
  Node* targets[] = {&node};
  evaluate(targets);
}

}  // namespace detail
}  // namespace kiln
