#include "kiln/executor.hpp"

#include <cstdlib>
#include <mutex>
#include <string_view>

#include "exec/cpu/thread_pool.hpp"
#include "exec/evaluate.hpp"
#include "graph/node.hpp"

namespace kiln {

namespace {
std::mutex& executor_mutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<Executor> default_executor() {
  const char* name = std::getenv("KILN_EXECUTOR");
  if (name != nullptr && std::string_view(name) == "reference") return reference_executor();
  return cpu_executor();
}
std::shared_ptr<Executor>& executor_slot() {
  static std::shared_ptr<Executor> current = default_executor();
  return current;
}
}  // namespace

std::shared_ptr<Executor> current_executor() {
  std::lock_guard lock(executor_mutex());
  return executor_slot();
}

void set_executor(std::shared_ptr<Executor> executor) {
  std::lock_guard lock(executor_mutex());
  executor_slot() = executor ? std::move(executor) : default_executor();
}

int num_threads() { return detail::thread_count(); }
void set_num_threads(int threads) { detail::set_thread_count(threads); }

namespace detail {

void evaluate(std::span<Node* const> nodes) {
  // Results are cached in shared nodes, so evaluations are serialised.
  static std::mutex evaluation_mutex;
  std::lock_guard lock(evaluation_mutex);
  current_executor()->execute(nodes);
  // An evaluated node that no gradient can pass through becomes a leaf holding its values, and
  // the graph below it is released (Flint's fOptimizeMemory, which its C++ API applies after
  // every execution): `x = x + y; x.eval();` in a loop then keeps one node alive, not a chain.
  for (Node* n : nodes) {
    if (!n->result || n->in_gradient_context || n->watched.load()) continue;
    n->op = Op::store;
    n->inputs.clear();
    n->view_base.reset();
    n->depth = 0;
  }
}

void evaluate(Node& node) {
  Node* targets[] = {&node};
  evaluate(targets);
}

}  // namespace detail
}  // namespace kiln
