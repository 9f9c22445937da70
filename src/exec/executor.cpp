#include "kiln/executor.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "exec/anomaly_check.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/evaluate.hpp"
#include "exec/executor_registry.hpp"
#include "exec/result_watch.hpp"
#include "graph/graph_lock.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"
#include "kiln/anomaly.hpp"
#include "kiln/error.hpp"

namespace kiln {

namespace {
std::mutex& executor_mutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<Executor> default_executor() {
  const char* env = std::getenv("KILN_EXECUTOR");
  if (env == nullptr || env[0] == '\0') return cpu_executor();
  const std::string_view name(env);
  for (const detail::ExecutorEntry& e : detail::executor_registry()) {
    if (e.name != name) continue;
    try {
      return e.open();
    } catch (const Error& error) {
      std::cerr << "[kiln] KILN_EXECUTOR=" << name << ": " << error.what()
                << "; using the cpu executor\n";
      return cpu_executor();
    }
  }
  std::string names;
  for (const std::string& n : executor_names()) names += (names.empty() ? "" : ", ") + n;
  std::cerr << "[kiln] KILN_EXECUTOR=" << name << " names no executor (" << names
            << "); using the cpu executor\n";
  return cpu_executor();
}
std::shared_ptr<Executor>& executor_slot() {
  static std::shared_ptr<Executor> current = default_executor();
  return current;
}

// Counts set_executor calls, so that each thread can keep its own copy of the current executor
// and take the lock (and copy the handle, two atomic read-modify-writes) only after a change.
std::atomic<std::uint64_t> executor_version{1};

// The current executor for an evaluation on this thread: its DeviceGuard's, else the process's.
// The thread's copy keeps it alive while it runs, even if another thread replaces it meanwhile.
Executor& executor_for_evaluation() {
  if (const std::shared_ptr<Executor>& guarded = detail::guarded_executor()) return *guarded;
  thread_local std::shared_ptr<Executor> copy;
  thread_local std::uint64_t copied_version = 0;
  const std::uint64_t version = executor_version.load(std::memory_order_acquire);
  if (version != copied_version) {
    copy = current_executor();
    copied_version = version;
  }
  return *copy;
}
}  // namespace

std::vector<std::shared_ptr<Executor>> executors() {
  std::vector<std::shared_ptr<Executor>> all;
  for (const detail::ExecutorEntry& e : detail::executor_registry()) {
    try {
      all.push_back(e.open());
    } catch (const Error&) {
      // Its device is not here: the executors that run are the ones listed.
    }
  }
  return all;
}

std::vector<std::string> executor_names() {
  std::vector<std::string> names;
  for (const detail::ExecutorEntry& e : detail::executor_registry()) names.emplace_back(e.name);
  return names;
}

std::shared_ptr<Executor> find_executor(std::string_view name) {
  // Opened directly, so that a missing device is reported as such (device_error).
  for (const detail::ExecutorEntry& e : detail::executor_registry())
    if (e.name == name) return e.open();
  std::string names;
  for (const std::string& n : executor_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::invalid_select,
              "find_executor: no executor named \"" + std::string(name) + "\" (kiln has " + names +
                  ")");
}

std::shared_ptr<Executor> device_executor() {
  // KILN_GPU names the device executor to use instead of the first that opens.
  if (const char* wanted = std::getenv("KILN_GPU"); wanted != nullptr && *wanted != '\0') {
    for (const detail::ExecutorEntry& e : detail::executor_registry())
      if (e.device && e.name == std::string_view(wanted)) return e.open();
    std::string devices;
    for (const detail::ExecutorEntry& e : detail::executor_registry())
      if (e.device) devices += (devices.empty() ? "" : ", ") + std::string(e.name);
    throw Error(ErrorCode::invalid_select, "KILN_GPU=" + std::string(wanted) +
                                               " names no device executor (known: " + devices + ")");
  }
  std::string tried;
  for (const detail::ExecutorEntry& e : detail::executor_registry()) {
    if (!e.device) continue;
    try {
      return e.open();
    } catch (const Error& error) {
      tried += (tried.empty() ? "" : "; ") + std::string(error.what());
    }
  }
  throw Error(ErrorCode::device_error,
              tried.empty() ? std::string("kiln was built without a device backend") : tried);
}

std::shared_ptr<Executor> current_executor() {
  if (const std::shared_ptr<Executor>& guarded = detail::guarded_executor()) return guarded;
  std::lock_guard lock(executor_mutex());
  return executor_slot();
}

void set_executor(std::shared_ptr<Executor> executor) {
  std::lock_guard lock(executor_mutex());
  executor_slot() = executor ? std::move(executor) : default_executor();
  executor_version.fetch_add(1, std::memory_order_release);
}

namespace {
// For executors without a schedule to keep: each run is an ordinary execution.
class ExecuteEachTime final : public Executor::Prepared {
 public:
  ExecuteEachTime(Executor& executor, std::span<detail::Node* const> targets)
      : executor_(executor), targets_(targets.begin(), targets.end()) {}
  void run() override { executor_.execute(targets_); }

 private:
  Executor& executor_;
  std::vector<detail::Node*> targets_;
};
}  // namespace

std::unique_ptr<Executor::Prepared> Executor::prepare(std::span<detail::Node* const> targets) {
  execute(targets);
  return std::make_unique<ExecuteEachTime>(*this, targets);
}

// Executors without a device of their own compute into host memory.
void Executor::place(std::span<detail::Node* const> targets) {
  for (detail::Node* t : targets) static_cast<void>(detail::host_values(*t).data());
}
bool Executor::holds(const detail::Node& node) const {
  return detail::has_values(node) && detail::host_values(node).on_host();
}

int num_threads() { return detail::thread_count(); }
void set_num_threads(int threads) { detail::set_thread_count(threads); }

namespace detail {

namespace {

// Nodes to compute with the next evaluation (evaluate_later).
struct Deferred {
  std::mutex mutex;
  std::vector<NodePtr> nodes;
  std::atomic<bool> any{false};
};
Deferred& deferred() {
  static Deferred instance;
  return instance;
}

// The targets with the deferred nodes that still need computing added; `keep` holds those.
// Deferred nodes placed on another executor than `executor` wait for an evaluation there.
std::span<Node* const> with_deferred(std::span<Node* const> nodes, Executor& executor,
                                     std::vector<NodePtr>& keep, std::vector<Node*>& all) {
  Deferred& d = deferred();
  {
    std::lock_guard lock(d.mutex);
    keep.swap(d.nodes);
    d.any.store(false, std::memory_order_relaxed);
  }
  all.assign(nodes.begin(), nodes.end());
  std::vector<NodePtr> elsewhere;
  for (NodePtr& n : keep) {
    if (n->result) continue;
    if (n->home != nullptr && n->home.get() != &executor) elsewhere.push_back(std::move(n));
    else all.push_back(n.get());
  }
  if (!elsewhere.empty()) {
    std::lock_guard lock(d.mutex);
    for (NodePtr& n : elsewhere) d.nodes.push_back(std::move(n));
    d.any.store(true, std::memory_order_relaxed);
  }
  return all;
}

// Runs the executor, then makes every evaluated node that no gradient can pass through a leaf
// holding its values, releasing the graph below it (Flint's fOptimizeMemory, which its C++ API
// applies after every execution): `x = x + y; x.eval();` in a loop then keeps one node alive,
// not a chain. Inline in both entry points: a tiny evaluation's cost is mostly such calls.
inline void evaluate_with(std::span<Node* const> targets, Executor& executor) {
  // Results are cached in shared nodes, so evaluations are serialised, and nobody builds on or
  // walks the nodes while they change.
  GraphWriteLock lock;
  std::vector<NodePtr> keep;
  std::vector<Node*> all;
  // A deferred node that fails with this evaluation is dropped: it is still computed when read.
  const std::span<Node* const> nodes =
      deferred().any.load(std::memory_order_relaxed) ? with_deferred(targets, executor, keep, all)
                                                     : targets;
  executor.execute(nodes);
  if (anomaly_detection_enabled()) check_for_anomalies(nodes);
  for (Node* n : nodes) {
    if (!n->result || n->in_gradient_context || n->watched.load()) continue;
    n->op = Op::store;
    n->inputs.clear();
    n->view_base.reset();
    n->depth = 0;
  }
}

}  // namespace

void evaluate_later(std::shared_ptr<Node> node) {
  if (node == nullptr || node->result || node->symbolic) return;
  Deferred& d = deferred();
  std::lock_guard lock(d.mutex);
  d.nodes.push_back(std::move(node));
  d.any.store(true, std::memory_order_relaxed);
}

namespace {
// Runs `run(targets, executor)` once per executor the targets live on (Tensor::to): unplaced
// targets on this thread's current executor. Nearly always one call with every target.
template <class Run> void on_their_executors(std::span<Node* const> targets, Run&& run) {
  Executor* home = nullptr;
  bool mixed = false;
  for (Node* n : targets) {
    if (n->home == nullptr) continue;
    if (home == nullptr) home = n->home.get();
    else mixed = mixed || n->home.get() != home;
  }
  if (!mixed) {
    // Unplaced targets evaluated with placed ones follow them, as their operands would.
    run(targets, home != nullptr ? *home : executor_for_evaluation());
    return;
  }
  std::vector<Node*> rest(targets.begin(), targets.end());
  while (!rest.empty()) {
    Executor* where = nullptr;
    for (Node* n : rest)
      if (n->home != nullptr) where = n->home.get();
    if (where == nullptr) where = &executor_for_evaluation();
    std::vector<Node*> here;
    std::vector<Node*> later;
    for (Node* n : rest)
      (n->home == nullptr || n->home.get() == where ? here : later).push_back(n);
    run(std::span<Node* const>(here), *where);
    rest.swap(later);
  }
}
}  // namespace

void evaluate(std::span<Node* const> nodes) {
  on_their_executors(nodes, [](std::span<Node* const> targets, Executor& executor) {
    evaluate_with(targets, executor);
  });
}

void evaluate(std::span<Node* const> nodes, Executor& executor) { evaluate_with(nodes, executor); }

void place(std::span<Node* const> nodes, Executor& executor) {
  if (!std::all_of(nodes.begin(), nodes.end(), [](Node* n) { return n->result != nullptr; }))
    evaluate_with(nodes, executor);
  GraphWriteLock lock;
  executor.place(nodes);
}

thread_local ResultWatch* ResultWatch::current_ = nullptr;

ResultWatch::ResultWatch(std::span<Node* const> targets, ResultListener& listener)
    : told_(targets.size(), false), listener_(listener) {
  for (std::size_t i = 0; i < targets.size(); ++i) index_.emplace(targets[i], i);
}

void ResultWatch::finish() {
  for (std::size_t i = 0; i < told_.size(); ++i) tell(i);
}

// Installs a watch for one evaluation on this thread, and removes it however the evaluation ends.
struct ResultWatchScope {
  explicit ResultWatchScope(ResultWatch& watch) { ResultWatch::current_ = &watch; }
  ~ResultWatchScope() { ResultWatch::current_ = nullptr; }
  ResultWatchScope(const ResultWatchScope&) = delete;
  ResultWatchScope& operator=(const ResultWatchScope&) = delete;
};

void evaluate(std::span<Node* const> nodes, ResultListener& listener) {
  ResultWatch watch(nodes, listener);
  {
    const ResultWatchScope scope(watch);
    on_their_executors(nodes, [](std::span<Node* const> targets, Executor& executor) {
      evaluate_with(targets, executor);
    });
  }
  watch.finish();
}

void evaluate(Node& node) {
  Node* targets[] = {&node};
  evaluate(targets);
}

}  // namespace detail
}  // namespace kiln
