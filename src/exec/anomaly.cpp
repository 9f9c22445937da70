// Anomaly mode: after an evaluation, a target holding NaN or infinity sends a search down its
// graph, computing each op again with the reference executor in dependency order until one turns
// finite inputs into values that are not.
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

bool finite(const Node& n) {
  if (n.is_view() || !has_values(n) || !(is_float(n.dtype) || is_complex(n.dtype))) return true;
  const Buffer& b = host_values(n);
  for (std::int64_t i = 0; i < b.numel(); ++i) {
    if (is_complex(n.dtype)) {
      const auto v = b.get<std::complex<double>>(i);
      if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) return false;
    } else if (!std::isfinite(b.get<double>(i))) {
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
    what += "the input " + described(culprit) + " holds NaN or infinity";
  } else {
    what += described(culprit) + " computed NaN or infinity from finite inputs";
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
    if (finite(*target)) continue;
    const std::shared_ptr<Executor> oracle = reference_executor();
    for (Node* n : in_dependency_order(target)) {
      if (n->is_view()) continue;  // rearranges values, makes none
      if (!has_values(*n)) {
        Node* one[] = {n};
        oracle->execute(one);
      }
      if (!finite(*n)) report(*n, *target);
    }
    report(*target, *target);  // not found again below: the target itself
  }
}

}  // namespace detail
}  // namespace kiln
