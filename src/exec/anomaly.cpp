// Anomaly mode: after an evaluation, a target holding NaN or infinity sends a search down its
// graph, computing each op again with the reference executor in dependency order until one turns
// inputs without NaN into values with it (or finite inputs into an infinity).
#include "kiln/anomaly.hpp"

#include <atomic>
#include <cmath>
#include <complex>
#include <string>
#include <unordered_map>
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

// What a node's values hold that is not a finite number.
struct NonFinite {
  bool nan = false, infinity = false;
  bool any() const { return nan || infinity; }
};

void note_fill(const Node& n, NonFinite& out) {
  for (const ViewLayer& l : n.view.layers()) {
    const std::complex<double> f = l.fill.as<std::complex<double>>();
    out.nan = out.nan || std::isnan(f.real()) || std::isnan(f.imag());
    out.infinity = out.infinity || std::isinf(f.real()) || std::isinf(f.imag());
  }
}

// The values a node holds, or for a view those it reads: its base's and its fill (padding, which
// may be infinite on purpose, as max-pooling's).
NonFinite non_finite(const Node& node) {
  NonFinite out;
  const Node* holder = &node;
  for (; holder->is_view() && holder->view_base; holder = holder->view_base.get())
    note_fill(*holder, out);
  const Node& n = *holder;
  if (!has_values(n) || !(is_float(n.dtype) || is_complex(n.dtype))) return out;
  const Buffer& b = host_values(n);
  auto note = [&](double v) {
    out.nan = out.nan || std::isnan(v);
    out.infinity = out.infinity || std::isinf(v);
  };
  for (std::int64_t i = 0; i < b.numel() && !out.nan; ++i) {
    if (is_complex(n.dtype)) {
      const auto v = b.get<std::complex<double>>(i);
      note(v.real());
      note(v.imag());
    } else {
      note(b.get<double>(i));
    }
  }
  return out;
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

[[noreturn]] void report(const Node& culprit, const Node& target, bool nan) {
  std::string what = "detect_anomaly: ";
  if (culprit.inputs.empty()) {
    what += "the input " + described(culprit) + " holds NaN";
  } else {
    what += described(culprit) +
            (nan ? " computed NaN from inputs without NaN" : " computed infinity from finite inputs");
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
    const NonFinite found = non_finite(*holder);
    if (!found.any()) continue;
    // NaN is looked for first: the op that made it from inputs without NaN, or an input holding
    // it. Infinity, where there is no NaN, is an anomaly only where an op made it from values
    // that never held one (log(0) of a probability, an overflow): inputs and constants may hold
    // it on purpose (masks' -inf), and what is computed from them may be infinite again
    // (logsumexp of a row masked whole is -inf, through log(0)).
    const std::shared_ptr<Executor> oracle = reference_executor();
    std::unordered_map<const Node*, bool> from_non_finite;  // held one, or computed from one
    auto came_from_non_finite = [&](const Node& in) {
      NonFinite fills;
      const Node* base = &in;
      for (; base->is_view() && base->view_base; base = base->view_base.get()) note_fill(*base, fills);
      if (fills.any()) return true;
      const auto it = from_non_finite.find(base);
      return it != from_non_finite.end() ? it->second : non_finite(*base).any();
    };
    for (Node* n : in_dependency_order(holder)) {
      if (n->is_view()) continue;  // rearranges values (and its fill), makes none
      if (!has_values(*n)) {
        Node* one[] = {n};
        oracle->execute(one);
      }
      const NonFinite made = non_finite(*n);
      if (found.nan) {
        if (made.nan) report(*n, *target, true);  // its inputs, earlier in the order, have none
        continue;
      }
      bool inputs_from_non_finite = false;
      for (const NodePtr& in : n->inputs)
        inputs_from_non_finite = inputs_from_non_finite || came_from_non_finite(*in);
      if (made.infinity && !n->inputs.empty() && !inputs_from_non_finite)
        report(*n, *target, false);
      from_non_finite[n] = inputs_from_non_finite || made.any();
    }
    if (found.nan) report(*holder, *target, true);  // not found again below: the holder itself
  }
}

}  // namespace detail
}  // namespace kiln
