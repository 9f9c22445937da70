#include "exec/fusion.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "exec/graph_walk.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

bool is_elementwise(const Node& n) {
  switch (n.info().kind) {
    case OpKind::unary:
    case OpKind::binary:
    case OpKind::ternary: return true;
    case OpKind::custom: return n.op == Op::custom_map;
    default: return false;
  }
}

namespace {

// An input of a node as the kernel sees it: the node holding (or computing) the buffer, and the
// map to read it through.
KernelInput source_of(const NodePtr& input) {
  Node* d = input.get();
  if (!d->result && d->is_view()) return {d->view_base.get(), d, &d->view, ""};
  return {d, nullptr, nullptr, ""};
}

class Scheduler {
 public:
  Scheduler(std::span<Node* const> targets, const FusionPolicy& policy)
      : policy_(policy), order_(nodes_to_compute(targets)),
        targets_(targets.begin(), targets.end()) {
    for (Node* n : order_)
      for (const auto& in : n->inputs) ++uses_[source_of(in).node];
  }

  std::vector<Kernel> run() {
    std::unordered_set<Node*> fused;
    std::vector<Kernel> kernels;
    // Walk from the last node back, so consumers decide about their producers first.
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      Node* n = *it;
      if (fused.count(n)) continue;
      Kernel k{kind_of(*n), n, {}, {}, {}};
      if (k.kind == Kernel::Kind::elementwise) {
        collect(n, k, fused);
      } else if (k.kind == Kernel::Kind::reduce) {
        KernelInput in = source_of(n->inputs[0]);
        const char* why = adjacent_axes(*n) ? refusal(in) : "the reduced axes are not adjacent";
        if (why == nullptr && !policy_.into_reductions)
          why = "this backend does not fuse into reductions";
        if (why == nullptr) {
          collect(in.node, k, fused);
        } else {
          in.reason = why;
          k.inputs.push_back(in);
        }
      } else if (k.kind == Kernel::Kind::materialize) {
        k.inputs.push_back({n->view_base.get(), n, &n->view, "viewed values are copied out"});
      } else {
        for (const auto& i : n->inputs) {
          KernelInput in = source_of(i);
          in.reason = "this op reads its inputs from memory";
          k.inputs.push_back(in);
        }
      }
      kernels.push_back(std::move(k));
    }
    std::reverse(kernels.begin(), kernels.end());
    return kernels;
  }

 private:
  Kernel::Kind kind_of(const Node& n) const {
    if (fusable(n)) return Kernel::Kind::elementwise;
    switch (n.info().kind) {
      case OpKind::reduce: return Kernel::Kind::reduce;
      case OpKind::matmul: return Kernel::Kind::matmul;
      case OpKind::view: return Kernel::Kind::materialize;
      default: return Kernel::Kind::single;
    }
  }

  static bool adjacent_axes(const Node& n) {
    for (std::size_t i = 1; i < n.attrs.axes.size(); ++i)
      if (n.attrs.axes[i] != n.attrs.axes[i - 1] + 1) return false;
    return true;
  }

  // Whether this backend computes the node inside a fused elementwise kernel.
  bool fusable(const Node& n) const {
    return is_elementwise(n) && (policy_.host_callables || n.op != Op::custom_map) &&
           fusable_types(n, policy_);
  }

  // Why `in` cannot be computed inside its consumer's kernel, or null when it can.
  const char* refusal(const KernelInput& in) const {
    const Node& p = *in.node;
    if (p.result) return "computed already";
    if (!is_elementwise(p)) return "not elementwise";
    if (!fusable(p))
      return p.op == Op::custom_map ? "a host callable (custom_map) runs on the host"
                                    : "16-bit floats are computed on the host";
    if (targets_.count(in.node)) return "a requested result";
    if (uses_.at(in.node) > 1) return "used more than once";
    if (in.view && !in.view->is_identity() && !policy_.reordering_views)
      return "read through a view that reorders elements";
    return nullptr;
  }

  // Adds `root` and the producers fused into it to k.body (inputs first), and its other
  // sources to k.inputs.
  void collect(Node* root, Kernel& k, std::unordered_set<Node*>& fused) {
    std::vector<std::pair<Node*, bool>> stack{{root, false}};
    std::size_t fused_here = 0;
    while (!stack.empty()) {
      auto [n, expanded] = stack.back();
      stack.pop_back();
      if (expanded) {
        k.body.push_back(n);
        continue;
      }
      fused.insert(n);
      ++fused_here;
      stack.push_back({n, true});
      for (auto it = n->inputs.rbegin(); it != n->inputs.rend(); ++it) {
        KernelInput in = source_of(*it);
        const char* why = refusal(in);
        if (why == nullptr && !policy_.chains) why = "this backend fuses no chains";
        if (why == nullptr && policy_.max_ops != 0 && fused_here >= policy_.max_ops)
          why = "the kernel holds as many ops as this backend fuses";
        if (why == nullptr) {
          stack.push_back({in.node, false});
        } else {
          in.reason = why;
          k.inputs.push_back(in);
        }
      }
    }
  }

  const FusionPolicy& policy_;
  std::vector<Node*> order_;
  std::unordered_set<Node*> targets_;
  std::unordered_map<Node*, int> uses_;
};

// Takes each elementwise kernel into the elementwise kernel that reads its result when that is
// the result's only reader, they have the same number of elements and the result is read in
// order (every time it is read): the merged kernel computes both in one pass over memory and
// stores both. Kernels that are merged away are left empty (root null) and dropped.
void merge_multi_output(std::vector<Kernel>& kernels, std::size_t max_ops) {
  std::unordered_map<const Node*, int> readers;  // kernels reading each node
  for (const Kernel& k : kernels) {
    std::unordered_set<const Node*> seen;
    for (const KernelInput& in : k.inputs)
      if (seen.insert(in.node).second) ++readers[in.node];
  }
  std::unordered_map<const Node*, std::size_t> producer;  // root -> kernel index
  for (std::size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].kind == Kernel::Kind::elementwise) producer[kernels[i].root] = i;
  for (Kernel& k : kernels) {
    if (k.kind != Kernel::Kind::elementwise) continue;
    for (std::size_t i = 0; i < k.inputs.size(); ++i) {
      const KernelInput& in = k.inputs[i];
      const auto it = producer.find(in.node);
      if (it == producer.end() || readers[in.node] != 1) continue;
      const bool in_order =
          std::all_of(k.inputs.begin(), k.inputs.end(), [&](const KernelInput& other) {
            return other.node != in.node || !other.view || other.view->is_identity();
          });
      if (!in_order) continue;
      Kernel& p = kernels[it->second];
      if (&p == &k || p.root == nullptr || p.root->numel() != k.root->numel()) continue;
      if (max_ops != 0 && p.body.size() + k.body.size() > max_ops) continue;
      Node* const merged = p.root;
      std::vector<Node*> body = std::move(p.body);
      body.insert(body.end(), k.body.begin(), k.body.end());
      k.body = std::move(body);
      std::vector<KernelInput> inputs = std::move(p.inputs);
      for (const KernelInput& own : k.inputs)
        if (own.node != merged) inputs.push_back(own);
      k.inputs = std::move(inputs);
      k.stored.push_back(merged);
      k.stored.insert(k.stored.end(), p.stored.begin(), p.stored.end());
      producer.erase(it);
      p = Kernel{Kernel::Kind::elementwise, nullptr, {}, {}, {}};
      i = static_cast<std::size_t>(-1);  // the inputs changed: look at them again
    }
  }
  std::erase_if(kernels, [](const Kernel& k) { return k.root == nullptr; });
}

}  // namespace

bool touches_narrow_types(const Node& n) {
  if (is_narrow(n.dtype)) return true;
  for (const NodePtr& in : n.inputs)
    if (is_narrow(in->dtype)) return true;
  return false;
}

bool touches_complex_types(const Node& n) {
  if (is_complex(n.dtype)) return true;
  for (const NodePtr& in : n.inputs)
    if (is_complex(in->dtype)) return true;
  return n.view_base != nullptr && is_complex(n.view_base->dtype);
}

std::vector<Kernel> schedule(std::span<Node* const> targets, const FusionPolicy& policy) {
  std::vector<Kernel> kernels = Scheduler(targets, policy).run();
  if (policy.chains && policy.multi_output) merge_multi_output(kernels, policy.max_ops);
  return kernels;
}

const char* kind_name(Kernel::Kind k) {
  switch (k) {
    case Kernel::Kind::elementwise: return "elementwise";
    case Kernel::Kind::reduce: return "reduce";
    case Kernel::Kind::matmul: return "matmul";
    case Kernel::Kind::materialize: return "materialize";
    case Kernel::Kind::single: return "single";
  }
  return "?";
}

std::string describe(const std::vector<Kernel>& kernels) {
  std::ostringstream os;
  std::unordered_map<const Node*, std::size_t> id;
  auto name = [&](const Node* n) {
    auto [it, fresh] = id.try_emplace(n, id.size());
    std::string label = "%";
    label += std::to_string(it->second);
    return label;
  };
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    os << "kernel " << i << " (" << kind_name(k.kind) << ") -> " << name(k.root) << " "
       << k.root->info().name << " " << dtype_name(k.root->dtype) << shape_to_string(k.root->shape)
       << "\n";
    for (const Node* n : k.stored)
      os << "  also stores " << name(n) << " " << n->info().name << "\n";
    if (!k.body.empty()) {
      os << "  fused:";
      for (const Node* n : k.body) os << " " << name(n) << "=" << n->info().name;
      os << "\n";
    }
    for (const KernelInput& in : k.inputs)
      os << "  reads " << name(in.node) << " " << in.node->info().name
         << (in.view && !in.view->is_identity() ? " through a view" : "") << ": " << in.reason
         << "\n";
  }
  return os.str();
}

}  // namespace kiln::detail
