// Tensors on devices: Tensor::to(device) places a tensor on an executor, whose ops then run there
// (the builder gives every node the device of its operands; the runtime evaluates a node where
// it lives).
#include <string>
#include <unordered_set>
#include <vector>

#include "api/builder.hpp"
#include "exec/evaluate.hpp"
#include "graph/graph_lock.hpp"
#include "graph/values.hpp"
#include "kiln/device.hpp"
#include "kiln/executor.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

using detail::Node;

namespace {
// Whether a gradient could pass through `n`: it is watched, or built in a gradient context from
// something that is.
bool gradients_reach(const Node& n) {
  const detail::GraphReadLock lock;
  std::vector<const Node*> stack{&n};
  std::unordered_set<const Node*> seen{&n};
  while (!stack.empty()) {
    const Node* at = stack.back();
    stack.pop_back();
    if (at->watched) return true;
    if (!at->in_gradient_context) continue;
    for (const detail::NodePtr& in : at->inputs)
      if (seen.insert(in.get()).second) stack.push_back(in.get());
  }
  return false;
}
}  // namespace

Tensor Tensor::to(const Device& device) const {
  const detail::NodePtr& source = detail::node_of(*this, "to");
  if (source->home == device.executor()) return *this;
  // The moved tensor is a new leaf, so no gradient passes through the move: a tensor gradients
  // would flow through is refused rather than silently cut off from them.
  if (gradients_reach(*source))
    detail::fail(ErrorCode::device_error, "to",
                 std::string(dtype_name(source->dtype)) + " " + detail::shape_str(source->shape) +
                     " to " + device.name() +
                     ": gradients may flow through this tensor, and none would through the "
                     "move; move the leaves (data, and modules with Module::to) before "
                     "computing with them");
  eval();  // where it lives now
  auto leaf = std::make_shared<Node>(detail::Op::store, source->dtype, source->shape,
                                     std::vector<detail::NodePtr>{});
  detail::set_host_values(*leaf, detail::host_buffer(*source));
  leaf->home = device.executor();
  Node* targets[] = {leaf.get()};
  detail::place(targets, *leaf->home);
  return Tensor(std::move(leaf));
}

Tensor Tensor::to(const Device& device, DType dtype) const { return to(device).to(dtype); }

Device Tensor::device() const {
  const detail::NodePtr& n = detail::node_of(*this, "device");
  return n->home != nullptr ? Device(n->home) : Device(current_executor());
}

bool Tensor::is_placed() const { return detail::node_of(*this, "is_placed")->home != nullptr; }

}  // namespace kiln
