// Prints of a graph for people: debug_print's indented tree and to_dot's Graphviz drawing.
#include <algorithm>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "exec/fusion.hpp"
#include "graph/graph_lock.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"
#include "kiln/graph.hpp"

namespace kiln {

namespace {

using detail::Node;

// Deeper nodes are printed at this indentation with their depth written out, so that a long
// chain prints in space linear in its length.
constexpr std::size_t kMaxIndent = 64;

std::string describe(const Node& n) {
  std::string s = std::string(n.info().name) + " " + dtype_name(n.dtype) +
                  shape_to_string(n.shape);
  if (!n.name.empty()) s += " \"" + n.name + "\"";
  if (n.is_view()) s += " view";
  if (n.op == detail::Op::store && n.attrs.store_kind == detail::StoreKind::placeholder)
    s += " placeholder";
  else if (n.op == detail::Op::store && n.attrs.store_kind == detail::StoreKind::constant)
    s += " constant";
  else if (detail::has_values(n))
    s += n.op == detail::Op::store ? " data" : " computed";
  if (n.watched.load()) s += " watched";
  return s;
}

// Visits the graphs below `roots` depth first, inputs in order, calling
// f(node, depth, id, first) for every edge walked (and each root); ids number nodes in the order
// they are first met.
template <class F> void walk(const std::vector<Tensor>& roots, F f) {
  std::unordered_map<const Node*, std::size_t> ids;
  std::vector<std::pair<const Node*, std::size_t>> stack;
  for (auto it = roots.rbegin(); it != roots.rend(); ++it)
    if (it->defined()) stack.push_back({it->node().get(), 0});
  while (!stack.empty()) {
    auto [n, depth] = stack.back();
    stack.pop_back();
    auto [at, first] = ids.try_emplace(n, ids.size());
    f(*n, depth, at->second, first);
    if (!first) continue;
    for (auto in = n->inputs.rbegin(); in != n->inputs.rend(); ++in)
      stack.push_back({in->get(), depth + 1});
  }
}

// A DOT string literal's contents.
std::string dot_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string debug_print(const std::vector<Tensor>& roots) {
  std::ostringstream os;
  detail::GraphReadLock lock;
  walk(roots, [&](const Node& n, std::size_t depth, std::size_t id, bool first) {
    for (std::size_t i = 0; i < std::min(depth, kMaxIndent); ++i) os << " |";
    if (depth > kMaxIndent) os << "[depth " << depth << "] ";
    os << '%' << id;
    if (first) os << ' ' << describe(n);
    else os << " (above)";
    os << '\n';
  });
  return os.str();
}

std::string debug_print(const Tensor& root) { return debug_print(std::vector<Tensor>{root}); }

std::string to_dot(const std::vector<Tensor>& roots, const DotOptions& options) {
  detail::GraphReadLock lock;
  std::vector<const Node*> nodes;  // by id
  walk(roots, [&](const Node& n, std::size_t, std::size_t, bool first) {
    if (first) nodes.push_back(&n);
  });
  std::unordered_map<const Node*, std::size_t> id;
  for (std::size_t i = 0; i < nodes.size(); ++i) id[nodes[i]] = i;

  std::ostringstream os;
  os << "digraph kiln {\n"
     << "  node [shape=box, fontname=\"monospace\"];\n";
  std::unordered_set<const Node*> in_cluster;
  if (options.schedule) {
    std::vector<Node*> targets;
    for (const Tensor& r : roots)
      if (r.defined()) targets.push_back(r.node().get());
    const std::vector<detail::Kernel> kernels = detail::schedule(targets);
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      const detail::Kernel& kernel = kernels[k];
      std::vector<const Node*> members(kernel.body.begin(), kernel.body.end());
      if (std::find(members.begin(), members.end(), kernel.root) == members.end())
        members.push_back(kernel.root);
      os << "  subgraph cluster_" << k << " {\n"
         << "    label=\"kernel " << k << " (" << detail::kind_name(kernel.kind) << ")\";\n"
         << "    style=rounded;\n";
      for (const Node* m : members) {
        if (!id.count(m) || !in_cluster.insert(m).second) continue;
        os << "    n" << id[m] << ";\n";
      }
      os << "  }\n";
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    os << "  n" << i << " [label=\"%" << i << " " << dot_escaped(describe(n)) << "\"";
    if (detail::has_values(n)) os << ", style=filled, fillcolor=\"#dddddd\"";
    os << "];\n";
  }
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (const auto& in : nodes[i]->inputs)
      os << "  n" << id[in.get()] << " -> n" << i
         << (nodes[i]->is_view() ? " [style=dashed]" : "") << ";\n";
  os << "}\n";
  return os.str();
}

std::string to_dot(const Tensor& root, const DotOptions& options) {
  return to_dot(std::vector<Tensor>{root}, options);
}

}  // namespace kiln
