#include "graph/graph_lock.hpp"

#include <shared_mutex>
#include <string>

#include "kiln/error.hpp"

namespace kiln::detail {

namespace {
std::shared_mutex& graph_mutex() {
  static std::shared_mutex m;
  return m;
}
enum class Held { none, read, write };
// Read for every node built: the initial-exec model makes that a plain load instead of a call to
// __tls_get_addr, as kiln is a shared library.
thread_local Held held __attribute__((tls_model("initial-exec"))) = Held::none;
}  // namespace

GraphReadLock::GraphReadLock() : locked_(held == Held::none) {
  if (!locked_) return;
  graph_mutex().lock_shared();
  held = Held::read;
}

GraphReadLock::~GraphReadLock() {
  if (!locked_) return;
  held = Held::none;
  graph_mutex().unlock_shared();
}

GraphWriteLock::GraphWriteLock() {
  if (held != Held::none)
    throw Error(ErrorCode::internal_error,
                std::string("evaluation requested while this thread ") +
                    (held == Held::read ? "reads the graph" : "evaluates") +
                    " (a custom kernel that evaluates?); waiting would deadlock");
  graph_mutex().lock();
  held = Held::write;
}

GraphWriteLock::~GraphWriteLock() {
  held = Held::none;
  graph_mutex().unlock();
}

}  // namespace kiln::detail
