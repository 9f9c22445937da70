#include "exec/schedule_cache.hpp"

#include <algorithm>
#include <atomic>
#include <bit>

namespace kiln::detail {

namespace {

enum Tag : std::uint64_t { computed_value = 1, unevaluated_view = 2, unevaluated_op = 3 };

// One word of a scalar: its bits; a complex value's two parts mixed (kernels of complex values
// run on the host, which reads the value from the node, so a rare collision costs nothing).
std::uint64_t scalar_bits(const Scalar& s) {
  if (is_complex(s.dtype())) {
    const auto z = s.as<std::complex<double>>();
    return std::bit_cast<std::uint64_t>(z.real()) ^
           std::rotl(std::bit_cast<std::uint64_t>(z.imag()), 29);
  }
  return is_float(s.dtype()) ? std::bit_cast<std::uint64_t>(s.as<double>())
                             : static_cast<std::uint64_t>(s.as<std::int64_t>());
}

// Four independent multiply chains, so hashing a key costs about a cycle per word.
std::uint64_t hash_of(std::span<const std::uint64_t> key) {
  std::uint64_t lanes[4] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
                            0x27d4eb2f165667c5ull ^ key.size()};
  std::size_t i = 0;
  for (; i + 4 <= key.size(); i += 4)
    for (int j = 0; j < 4; ++j) lanes[j] = (lanes[j] ^ key[i + j]) * 0xff51afd7ed558ccdull;
  for (; i < key.size(); ++i) lanes[i % 4] = (lanes[i % 4] ^ key[i]) * 0xff51afd7ed558ccdull;
  std::uint64_t h = 0;
  for (std::uint64_t lane : lanes) h = (h ^ (lane >> 29) ^ lane) * 0xc4ceb9fe1a85ec53ull;
  return h;
}

// What a node reads: nothing once it has a result, the node a view reads through, or its inputs.
template <class F> void for_each_read(const Node& n, F f) {
  if (n.result) return;
  if (n.is_view()) return f(n.view_base.get());
  for (const NodePtr& in : n.inputs) f(in.get());
}

}  // namespace

void GraphStructure::build(std::span<Node* const> targets) {
  slots_.start(nodes_.size());  // a repeated step reaches as many nodes as the last one
  nodes_.clear();
  key_size_ = 0;
  // Depth first, inputs left to right, each node placed after what it reads. A node is stamped
  // when first expanded; in a DAG it cannot be met again before it is placed.
  for (auto it = targets.rbegin(); it != targets.rend(); ++it) stack_.push_back({*it, false});
  while (!stack_.empty()) {
    auto [n, expanded] = stack_.back();
    stack_.pop_back();
    if (expanded) {
      slots_.put(n, static_cast<std::uint32_t>(nodes_.size()));
      nodes_.push_back(n);
      encode(*n);
      continue;
    }
    if (slots_.reached(n)) continue;
    slots_.put(n, NodeSlots::unplaced);
    stack_.push_back({n, true});
    const std::size_t first = stack_.size();
    for_each_read(*n, [&](Node* in) {
      if (!slots_.reached(in)) stack_.push_back({in, false});
    });
    std::reverse(stack_.begin() + static_cast<std::ptrdiff_t>(first), stack_.end());
  }
  std::uint64_t* out = append(1 + targets.size());
  *out++ = targets.size();
  for (Node* t : targets) *out++ = static_cast<std::uint64_t>(slots_.find(t));
  hash_ = hash_of(key());
}

void GraphStructure::grow(std::size_t count) {
  key_.resize(std::max(key_.size() * 2, key_size_ + count + 64));
}

void GraphStructure::put(const std::vector<std::int64_t>& values) {
  std::uint64_t* out = append(1 + values.size());
  *out++ = values.size();
  for (std::int64_t v : values) *out++ = static_cast<std::uint64_t>(v);
}

void GraphStructure::encode(const Node& n) {
  if (n.result) {
    std::uint64_t* out = append(2);
    out[0] = computed_value;
    out[1] = static_cast<std::uint64_t>(n.dtype);
    put(n.shape);
    return;
  }
  std::uint64_t* out = append(3);
  out[0] = n.is_view() ? unevaluated_view : unevaluated_op;
  out[1] = static_cast<std::uint64_t>(n.op);
  out[2] = static_cast<std::uint64_t>(n.dtype);
  put(n.shape);
  if (n.is_view()) {
    const auto& layers = n.view.layers();
    out = append(2);
    out[0] = static_cast<std::uint64_t>(slots_.find(n.view_base.get()));
    out[1] = layers.size();
    for (const ViewLayer& layer : layers) {
      put(layer.shape);
      put(layer.strides);
      out = append(4 + 2 * layer.valid.size());
      *out++ = static_cast<std::uint64_t>(layer.offset);
      *out++ = static_cast<std::uint64_t>(layer.fill.dtype());
      *out++ = scalar_bits(layer.fill);
      *out++ = layer.valid.size();
      for (auto [from, to] : layer.valid) {
        *out++ = static_cast<std::uint64_t>(from);
        *out++ = static_cast<std::uint64_t>(to);
      }
    }
    return;
  }
  // The inputs, a mask of the attribute lists that are set (most ops set none) and the flags,
  // the scalar value, the callable, then the lists that are set.
  const Attrs& a = n.attrs;
  constexpr unsigned kLists = 8;
  const std::vector<std::int64_t>* lists[kLists] = {&a.axes,    &a.start, &a.before, &a.after,
                                                    &a.padding, &a.step,  &a.window, &a.dilation};
  std::uint64_t present = (a.inverse ? 1u << kLists : 0u) |
                          (a.drop_negative ? 1u << (kLists + 1) : 0u) |
                          (a.descending ? 1u << (kLists + 2) : 0u);
  for (unsigned i = 0; i < kLists; ++i)
    if (!lists[i]->empty()) present |= 1u << i;
  out = append(5 + n.inputs.size());
  *out++ = n.inputs.size();
  for (const NodePtr& in : n.inputs) *out++ = static_cast<std::uint64_t>(slots_.find(in.get()));
  *out++ = present;
  *out++ = static_cast<std::uint64_t>(a.value.dtype());
  *out++ = scalar_bits(a.value);
  // The callables themselves: a prepared kernel that calls one keeps it alive, so its address
  // cannot come back for another. The random seed is read when the kernel runs.
  *out++ = reinterpret_cast<std::uintptr_t>(a.custom.get());
  for (unsigned i = 0; i < kLists; ++i)
    if (present & (1u << i)) put(*lists[i]);
  // Whether an assign may take over its target's buffer is decided when the kernel runs.
}

void SchedulePlan::bind(const GraphStructure& structure, std::vector<Kernel>& out) const {
  const std::vector<Node*>& nodes = structure.nodes();
  out.resize(kernels.size());
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const KernelPlan& p = kernels[i];
    Kernel& k = out[i];
    k.kind = p.kind;
    k.root = nodes[p.root];
    k.body.clear();
    for (int b : p.body) k.body.push_back(nodes[b]);
    k.inputs.clear();
    for (const KernelPlan::Input& in : p.inputs) {
      const Node* through = in.through < 0 ? nullptr : nodes[in.through];
      k.inputs.push_back({nodes[in.node], through, through ? &through->view : nullptr, in.reason});
    }
    k.stored.clear();
    for (int s : p.stored) k.stored.push_back(nodes[s]);
  }
}

namespace {

SchedulePlan plan_of(const std::vector<Kernel>& kernels, const GraphStructure& structure,
                     std::span<Node* const> targets) {
  const std::size_t count = structure.nodes().size();
  SchedulePlan plan;
  plan.readers.assign(count, 0);
  plan.computed.assign(count, 0);
  plan.requested.assign(count, 0);
  for (Node* t : targets) plan.requested[static_cast<std::size_t>(structure.slot(t))] = 1;
  auto slot = [&](const Node* n) { return structure.slot(n); };
  for (const Kernel& k : kernels) {
    KernelPlan p{k.kind, slot(k.root), {}, {}, {}, {}, nullptr};
    for (const Node* b : k.body) p.body.push_back(slot(b));
    for (const KernelInput& in : k.inputs) {
      p.inputs.push_back({slot(in.node), in.through ? slot(in.through) : -1, in.reason});
      if (std::find(p.reads.begin(), p.reads.end(), p.inputs.back().node) == p.reads.end())
        p.reads.push_back(p.inputs.back().node);
    }
    for (const Node* s : k.stored) p.stored.push_back(slot(s));
    plan.computed[static_cast<std::size_t>(p.root)] = 1;
    for (int s : p.stored) plan.computed[static_cast<std::size_t>(s)] = 1;
    for (int r : p.reads) ++plan.readers[static_cast<std::size_t>(r)];
    plan.kernels.push_back(std::move(p));
  }
  return plan;
}

std::atomic<std::uint64_t> hit_count{0};
std::atomic<std::uint64_t> miss_count{0};

}  // namespace

ScheduleCacheCounts schedule_cache_counts() { return {hit_count.load(), miss_count.load()}; }

SchedulePlan& ScheduleCache::plan(std::span<Node* const> targets, const GraphStructure& structure,
                                  bool& hit) {
  auto it = entries_.find(structure.hash());
  hit = it != entries_.end() && std::ranges::equal(it->second->key, structure.key());
  // Plans are made under the evaluation lock, so a load and a store count without the cost of
  // an atomic increment (a noticeable part of evaluating one tiny op).
  auto& count = hit ? hit_count : miss_count;
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (hit) return it->second->plan;
  if (it == entries_.end() && entries_.size() >= kMaxEntries) entries_.clear();
  auto entry = std::make_unique<Entry>();
  entry->key.assign(structure.key().begin(), structure.key().end());
  entry->plan = plan_of(schedule(targets, policy_), structure, targets);
  auto& slot = entries_[structure.hash()];
  slot = std::move(entry);  // a hash collision replaces the older structure
  return slot->plan;
}

}  // namespace kiln::detail
