// Telling a caller, during an evaluation, that some of its targets hold their values while the
// kernels after them still run: a data-parallel step starts reducing a bucket of gradients as
// soon as the backward pass has computed it, and the rest of the pass overlaps the transfer.
#pragma once

#include <cstddef>
#include <span>
#include <unordered_map>
#include <vector>

namespace kiln::detail {

struct Node;

class ResultListener {
 public:
  virtual ~ResultListener() = default;
  // Target `index` (its position among the targets) holds its values. Called on the evaluating
  // thread under the graph's write lock: read the values through graph/values.hpp, and build or
  // evaluate no tensors here.
  virtual void ready(std::size_t index) = 0;
};

// The targets an evaluation on this thread reports, while evaluate(nodes, listener) runs.
class ResultWatch {
 public:
  ResultWatch(std::span<Node* const> targets, ResultListener& listener);
  // The runtime calls this for each node a kernel has just computed.
  void computed(const Node& node) {
    const auto it = index_.find(&node);
    if (it != index_.end()) tell(it->second);
  }
  // Reports every target not reported yet (those that held values before, or views).
  void finish();

  // The watch of the evaluation running on this thread, or null (nearly always).
  static ResultWatch* current() { return current_; }

 private:
  friend struct ResultWatchScope;
  void tell(std::size_t i) {
    if (told_[i]) return;
    told_[i] = true;
    listener_.ready(i);
  }

  std::unordered_map<const Node*, std::size_t> index_;
  std::vector<bool> told_;
  ResultListener& listener_;
  static thread_local ResultWatch* current_;
};

// Evaluates `nodes` with the current executor, reporting each as soon as it holds its values.
void evaluate(std::span<Node* const> nodes, ResultListener& listener);

}  // namespace kiln::detail
