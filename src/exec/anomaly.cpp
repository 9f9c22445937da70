// Anomaly mode: after an evaluation, a target holding NaN sends a search down its graph,
// computing each op again with the reference executor in dependency order until one turns inputs
// without NaN into values with it.
#include "kiln/anomaly.hpp"

#include <atomic>
#include <cmath>
#include <complex>
#include <string>
#include <unordered_set>
#include <vector>

#include "exec/anomaly_check.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace {
std::atomic<bool> switched_on{false};
std::atomic<int> guards{0};
}  // namespace

void detect_anomaly(bool on) { switched_on.store(on, std::memory_order_relaxed); }
bool anomaly_detection_enabled() {
  return switched_on.load(std::memory_order_relaxed) || guards.load(std::memory_order_relaxed) > 0;
}
DetectAnomalyGuard::DetectAnomalyGuard() { ++guards; }
DetectAnomalyGuard::~DetectAnomalyGuard() { --guards; }

namespace detail {

namespace {

// Whether the node's values hold no NaN. Infinities are not anomalies: masks hold -inf on
// purpose (attention's), and PyTorch's anomaly mode looks for NaN too.
bool clean(const Node& n) {
  if (n.is_view() || !has_values(n) || !(is_float(n.dtype) || is_complex(n.dtype))) return true;
  const Buffer& b = host_values(n);
  for (std::int64_t i = 0; i < b.numel(); ++i) {
    if (is_complex(n.dtype)) {
      const auto v = b.get<std::complex<double>>(i);
      if (std::isnan(v.real()) || std::isnan(v.imag())) return false;
    } else if (std::isnan(b.get<double>(i))) {
      return false;
    }
  }
  return true;
}

std::string described(const Node& n) {
  return std::string(n.info().name) + (n.name.empty() ? "" : " \"" + n.name + "\"") + " " +
         dtype_name(n.dtype) + " " + shape_to_string(n.shape);
}

// The nodes below `target` (itself last), each after its inputs.
std::vector<Node*> in_dependency_order(Node* target) {
  std::vector<Node*> order;
  std::unordered_set<Node*> seen{target};
  std::vector<std::pair<Node*, std::size_t>> stack{{target, 0}};
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->inputs.size()) {
      Node* in = n->inputs[next++].get();
      if (seen.insert(in).second) stack.emplace_back(in, 0);
      continue;
    }
    order.push_back(n);
    stack.pop_back();
  }
  return order;
}

[[noreturn]] void report(const Node& culprit, const Node& target) {
  std::string what = "detect_anomaly: ";
  if (culprit.inputs.empty()) {
    what += "the input " + described(culprit) + " holds NaN";
  } else {
    what += described(culprit) + " computed NaN from inputs without NaN";
    const char* separator = " ";
    for (const NodePtr& in : culprit.inputs) {
      what += separator + std::string(dtype_name(in->dtype)) + " " + shape_to_string(in->shape);
      separator = ", ";
    }
  }
  if (culprit.called_as != nullptr) what += " (inside " + std::string(culprit.called_as) + ")";
  if (&culprit != &target) what += ", evaluating " + described(target);
  throw Error(ErrorCode::illegal_derive, what);
}

}  // namespace

void check_for_anomalies(std::span<Node* const> evaluated) {
  for (Node* target : evaluated) {
    // A view's values are those of the node below it that holds a buffer.
    Node* holder = target;
    while (holder->is_view() && holder->view_base) holder = holder->view_base.get();
    if (clean(*holder)) continue;
    const std::shared_ptr<Executor> oracle = reference_executor();
    for (Node* n : in_dependency_order(holder)) {
      if (n->is_view()) continue;  // rearranges values, makes none
      if (!has_values(*n)) {
        Node* one[] = {n};
        oracle->execute(one);
      }
      if (!clean(*n)) report(*n, *target);
    }
    report(*holder, *target);  // not found again below: the holder itself
  }
}

}  // namespace detail
}  // namespace kiln
