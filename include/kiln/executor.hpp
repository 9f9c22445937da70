// Executors compute graph nodes. The reference executor is plain per-op code that serves as the
// oracle for every faster executor.
#pragma once

#include <memory>
#include <span>
#include <string_view>

namespace kiln {

namespace detail {
struct Node;
}

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view name() const = 0;
  // Computes the targets and every node they need that has no result yet. Results of
  // intermediate nodes that no Tensor handle refers to may be released after their last use.
  virtual void execute(std::span<detail::Node* const> targets) = 0;
};

std::shared_ptr<Executor> reference_executor();
// The executor eval() uses; the reference executor until another is set.
std::shared_ptr<Executor> current_executor();
void set_executor(std::shared_ptr<Executor> executor);

}  // namespace kiln
