#include "api/graph_passes.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "exec/evaluate.hpp"
#include "graph/values.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

bool is_constant_leaf(const Node& n) {
  return n.op == Op::store && n.attrs.store_kind == StoreKind::constant && detail::has_values(n);
}

// The one value every element of `n` has, when `n` is a constant (or a view of one that reads no
// padding) whose elements are all equal; small constants only, since each is read here.
std::optional<double> uniform_value(const Node& n) {
  const Node* leaf = &n;
  if (n.is_view() && !has_values(n)) {
    for (const ViewLayer& layer : n.view.layers())
      if (!layer.valid.empty()) return std::nullopt;
    leaf = n.view_base.get();
  }
  if (leaf == nullptr || !is_constant_leaf(*leaf) || leaf->numel() == 0 || leaf->numel() > 16)
    return std::nullopt;
  const Buffer& b = host_values(*leaf);
  // A complex constant is taken as a real value only when every imaginary part is +0.
  if (is_complex(leaf->dtype))
    for (std::int64_t i = 0; i < b.numel(); ++i)
      if (std::bit_cast<std::uint64_t>(b.get<std::complex<double>>(i).imag()) != 0)
        return std::nullopt;
  const double first = b.get<double>(0);
  for (std::int64_t i = 1; i < b.numel(); ++i)
    if (std::bit_cast<std::uint64_t>(b.get<double>(i)) != std::bit_cast<std::uint64_t>(first))
      return std::nullopt;
  return first;
}

bool is_value(const Node& n, double want) {
  const std::optional<double> v = uniform_value(n);
  return v && std::bit_cast<std::uint64_t>(*v) == std::bit_cast<std::uint64_t>(want);
}

bool same_layer(const ViewLayer& a, const ViewLayer& b) {
  return a.shape == b.shape && a.strides == b.strides && a.offset == b.offset &&
         a.valid == b.valid && a.fill.dtype() == b.fill.dtype() &&
         std::bit_cast<std::uint64_t>(a.fill.as<double>()) ==
             std::bit_cast<std::uint64_t>(b.fill.as<double>()) &&
         std::bit_cast<std::uint64_t>(a.fill.as<std::complex<double>>().imag()) ==
             std::bit_cast<std::uint64_t>(b.fill.as<std::complex<double>>().imag());
}

bool same_map(const ViewMap& a, const ViewMap& b) {
  return std::equal(a.layers().begin(), a.layers().end(), b.layers().begin(), b.layers().end(),
                    same_layer);
}

// The node `n` computes bit for bit (an operand, or a node below one), or null.
Node* same_bits_as(const Node& n) {
  auto operand = [&](std::size_t i) -> Node* {
    Node* in = n.inputs[i].get();
    return in->dtype == n.dtype && in->shape == n.shape ? in : nullptr;
  };
  const bool integer = !is_inexact(n.dtype);
  switch (n.op) {
    case Op::convert: return operand(0);
    case Op::neg: {
      const Node& in = *n.inputs[0];
      if (in.op != Op::neg || has_values(in)) return nullptr;
      Node* inner = in.inputs[0].get();
      return inner->dtype == n.dtype && inner->shape == n.shape ? inner : nullptr;
    }
    case Op::mul:
      if (is_value(*n.inputs[1], 1.0)) return operand(0);
      if (is_value(*n.inputs[0], 1.0)) return operand(1);
      return nullptr;
    case Op::div: return is_value(*n.inputs[1], 1.0) ? operand(0) : nullptr;
    case Op::sub: return is_value(*n.inputs[1], 0.0) ? operand(0) : nullptr;  // +0 only
    case Op::add:
      if (!integer) return nullptr;  // -0 + 0 is +0
      if (is_value(*n.inputs[1], 0.0)) return operand(0);
      if (is_value(*n.inputs[0], 0.0)) return operand(1);
      return nullptr;
    default: break;
  }
  if (!n.is_view() || n.view_base == nullptr) return nullptr;
  if (n.view.is_identity() && n.view_base->shape == n.shape) return n.view_base.get();
  // A chain of views that ends where it began (a transpose of a transpose): the same map over
  // the same base as a view below it.
  for (Node* below = n.inputs[0].get(); below->is_view() && !has_values(*below);
       below = below->inputs[0].get())
    if (below->view_base == n.view_base && below->shape == n.shape && same_map(below->view, n.view))
      return below;
  return nullptr;
}

// Everything that makes two nodes compute the same values, given the same inputs.
class NodeKey {
 public:
  explicit NodeKey(const Node& n) {
    put(static_cast<std::uint64_t>(n.op));
    put(static_cast<std::uint64_t>(n.dtype));
    put(n.shape);
    put(n.inputs.size());
    for (const NodePtr& in : n.inputs) put(reinterpret_cast<std::uintptr_t>(in.get()));
    put(reinterpret_cast<std::uintptr_t>(n.view_base.get()));
    if (n.is_view()) {
      for (const ViewLayer& layer : n.view.layers()) {
        put(layer.shape);
        put(layer.strides);
        put(static_cast<std::uint64_t>(layer.offset));
        put(layer.valid.size());
        for (auto [from, to] : layer.valid) {
          put(static_cast<std::uint64_t>(from));
          put(static_cast<std::uint64_t>(to));
        }
        put(layer.fill);
      }
    }
    const Attrs& a = n.attrs;
    for (const auto* list :
         {&a.axes, &a.start, &a.before, &a.after, &a.padding, &a.step, &a.window, &a.dilation})
      put(*list);
    put(a.value);
    put(a.seed);
    put(static_cast<std::uint64_t>(a.inverse) | static_cast<std::uint64_t>(a.drop_negative) << 1 |
        static_cast<std::uint64_t>(a.descending) << 2 |
        static_cast<std::uint64_t>(a.flint_ties) << 3 |
        static_cast<std::uint64_t>(a.store_kind) << 4);
    put(reinterpret_cast<std::uintptr_t>(a.custom.get()));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void put(std::uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put(const std::vector<std::int64_t>& v) {
    put(v.size());
    for (std::int64_t x : v) put(static_cast<std::uint64_t>(x));
  }
  void put(const Scalar& s) {
    put(static_cast<std::uint64_t>(s.dtype()));
    put(is_inexact(s.dtype()) ? std::bit_cast<std::uint64_t>(s.as<double>())
                              : static_cast<std::uint64_t>(s.as<std::int64_t>()));
    if (is_complex(s.dtype()))
      put(std::bit_cast<std::uint64_t>(s.as<std::complex<double>>().imag()));
  }
  std::string bytes_;
};

std::string label(const Node& n) {
  return std::string(n.info().name) + " " + dtype_name(n.dtype) + shape_to_string(n.shape);
}

// Whether folding `n` is worth it and allowed: it reads something, every input is a constant or
// folds itself, it calls no user code, and its result is no larger than the constants below it.
struct Folding {
  std::unordered_map<const Node*, std::int64_t> largest_constant;  // per foldable node

  bool foldable(const Node& n) const {
    const OpInfo& info = n.info();
    if (n.inputs.empty() || n.attrs.custom || info.kind == OpKind::source) return false;
    std::int64_t largest = 0;
    for (const NodePtr& in : n.inputs) {
      if (is_constant_leaf(*in)) {
        largest = std::max(largest, in->numel());
      } else {
        auto it = largest_constant.find(in.get());
        if (it == largest_constant.end()) return false;
        largest = std::max(largest, it->second);
      }
    }
    return n.numel() <= largest || n.is_view();
  }
};

// The shared handle to `target`, found below `n` along first inputs (where same_bits_as finds
// it), among its inputs, or as its view base.
NodePtr handle_of(const Node& n, const Node* target) {
  if (n.view_base.get() == target) return n.view_base;
  for (const NodePtr& in : n.inputs)
    if (in.get() == target) return in;
  for (const Node* at = &n; !at->inputs.empty(); at = at->inputs[0].get())
    if (at->inputs[0].get() == target) return at->inputs[0];
  return nullptr;
}

// One round of the three passes; whether it changed anything.
bool run_round(const std::vector<NodePtr*>& roots, std::vector<NodePtr>& computed,
               Executor& executor, std::vector<std::string>& log) {
  const std::size_t logged = log.size();
  std::unordered_map<const Node*, NodePtr> replaced;
  std::unordered_map<std::string, NodePtr> seen;
  Folding folding;
  auto current = [&](NodePtr& p) {
    auto it = replaced.find(p.get());
    if (it != replaced.end()) p = it->second;
  };
  for (NodePtr& node : computed) {
    Node& n = *node;
    for (NodePtr& in : n.inputs) current(in);
    if (n.view_base) current(n.view_base);
    if (Node* same = same_bits_as(n)) {
      // `same` is an input, or an input's input: find its handle there.
      NodePtr handle = handle_of(n, same);
      if (handle) {
        log.push_back("simplify: " + label(n) + " is its operand " + label(*handle));
        replaced.emplace(&n, handle);
        continue;
      }
    }
    NodeKey key(n);
    auto [at, fresh] = seen.emplace(key.bytes(), node);
    if (!fresh) {
      log.push_back("merge: " + label(n) + " is computed once");
      replaced.emplace(&n, at->second);
      continue;
    }
    if (folding.foldable(n)) {
      std::int64_t largest = 0;
      for (const NodePtr& in : n.inputs)
        largest = std::max(
            largest, is_constant_leaf(*in) ? in->numel() : folding.largest_constant.at(in.get()));
      folding.largest_constant.emplace(&n, largest);
    }
  }
  for (NodePtr* root : roots) current(*root);

  // Fold the largest foldable subgraphs: foldable nodes read by a node that is not, or roots. A
  // view is not folded on its own (materialising it only costs memory).
  std::unordered_set<Node*> fold_roots;
  auto folds = [&](const Node* n) { return folding.largest_constant.count(n) != 0; };
  for (const NodePtr& node : computed) {
    if (replaced.count(node.get()) != 0 || folds(node.get())) continue;
    for (const NodePtr& in : node->inputs)
      if (folds(in.get()) && !in->is_view()) fold_roots.insert(in.get());
  }
  for (NodePtr* root : roots)
    if (folds(root->get()) && !(*root)->is_view()) fold_roots.insert(root->get());
  if (!fold_roots.empty()) {
    std::vector<Node*> targets(fold_roots.begin(), fold_roots.end());
    for (Node* n : targets) log.push_back("fold: " + label(*n) + " is a constant");
    evaluate(targets, executor);  // each becomes a leaf holding its values
    for (Node* n : targets) n->attrs.store_kind = StoreKind::constant;
  }

  // The nodes still computed: those the roots reach, in the order they had.
  std::vector<const Node*> root_nodes;
  for (NodePtr* root : roots) root_nodes.push_back(root->get());
  const std::unordered_set<const Node*> reached = reached_from(std::move(root_nodes));
  std::vector<NodePtr> still;
  for (NodePtr& node : computed)
    if (reached.count(node.get()) != 0 && node->op != Op::store) still.push_back(node);
  computed.swap(still);
  return log.size() != logged;
}

}  // namespace

std::unordered_set<const Node*> reached_from(std::vector<const Node*> stack) {
  std::unordered_set<const Node*> reached;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!reached.insert(n).second) continue;
    for (const NodePtr& in : n->inputs) stack.push_back(in.get());
    if (n->view_base) stack.push_back(n->view_base.get());
  }
  return reached;
}

std::vector<std::string> run_graph_passes(const std::vector<NodePtr*>& roots,
                                          std::vector<NodePtr>& computed, Executor& executor) {
  // A fold can make room for a simplification (x * a constant that folds to 1), so rounds repeat
  // while they change something, a few at most: each round is linear in the graph, and a chain
  // of such chances that runs deeper than this is not worth the compile time.
  constexpr int kMaxRounds = 4;
  std::vector<std::string> log;
  for (int round = 0; round < kMaxRounds && run_round(roots, computed, executor, log); ++round) {
  }
  return log;
}

}  // namespace kiln::detail
