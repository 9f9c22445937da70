// Schedules cached by the structure of the graph they were made for. A training loop builds a
// new graph of the same structure every step; its schedule, and what a backend prepares for each
// kernel (the CPU executor's compiled programs), are made once and reused, so a repeated step
// pays only for execution.
//
// The structure is everything a schedule depends on: ops, dtypes, shapes, attributes, view maps,
// how nodes are connected, which values are computed already and which are requested. Node
// identity and the values in buffers (a learning rate, a random seed) are not part of it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "exec/fusion.hpp"
#include "exec/node_slots.hpp"

namespace kiln::detail {

// The part of the graph an evaluation touches, in a canonical order (inputs before the nodes
// that read them; nodes with results and views without results included), and its structural
// key. The walk keeps each node's position in its own table; the nodes are only read.
class GraphStructure {
 public:
  void build(std::span<Node* const> targets);

  const std::vector<Node*>& nodes() const { return nodes_; }
  std::span<const std::uint64_t> key() const { return {key_.data(), key_size_}; }
  std::uint64_t hash() const { return hash_; }
  // The node's position in nodes(), or -1 when this walk did not reach it.
  int slot(const Node* node) const { return slots_.find(node); }

 private:
  void encode(const Node& n);
  // Room for `count` more words at the end of the key (a node's encoding appends through this
  // rather than word by word: its cost is most of a tiny evaluation's).
  std::uint64_t* append(std::size_t count) {
    if (key_size_ + count > key_.size()) [[unlikely]]
      grow(count);
    std::uint64_t* at = key_.data() + key_size_;
    key_size_ += count;
    return at;
  }
  void grow(std::size_t count);  // out of line, so that append's common path stays small
  void put(const std::vector<std::int64_t>& values);

  std::vector<Node*> nodes_;
  std::vector<std::uint64_t> key_;  // the first key_size_ words are the key
  std::size_t key_size_ = 0;
  std::vector<std::pair<Node*, bool>> stack_;
  std::uint64_t hash_ = 0;
  NodeSlots slots_;
};

// What a backend prepares once for a kernel of a cached schedule.
struct PreparedKernel {
  virtual ~PreparedKernel() = default;
};

// A kernel with its nodes named by their positions in a GraphStructure.
struct KernelPlan {
  struct Input {
    int node;
    int through;  // the view node whose map the input is read through, or -1
    const char* reason;
  };
  Kernel::Kind kind;
  int root;
  std::vector<int> body;
  std::vector<Input> inputs;
  std::vector<int> stored;
  std::vector<int> reads;  // the distinct nodes among the inputs
  std::shared_ptr<PreparedKernel> prepared;  // filled by the backend when it first runs
};

struct SchedulePlan {
  std::vector<KernelPlan> kernels;
  std::vector<int> readers;     // per position: how many kernels read that node
  std::vector<char> computed;   // per position: whether a kernel computes that node
  std::vector<char> requested;  // per position: whether the node is a target
  // Recorded evaluations (Backend::records): how many evaluations the plan has served, the
  // backend's recording of one, and whether recording it failed for good.
  int evaluations = 0;
  bool unrecordable = false;
  std::shared_ptr<PreparedKernel> recording;  // last: it goes before the kernels it recorded

  // The kernels, with this evaluation's nodes in place of the positions, written into `out`
  // (whose vectors keep their capacity, so a caller that reuses `out` allocates nothing).
  void bind(const GraphStructure& structure, std::vector<Kernel>& out) const;
};

// How many plans all caches have found and made so far (for tests and benchmarks).
struct ScheduleCacheCounts {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
};
ScheduleCacheCounts schedule_cache_counts();

class ScheduleCache {
 public:
  // Schedules made with `policy` (one cache per backend).
  explicit ScheduleCache(FusionPolicy policy = {}) : policy_(policy) {}
  // The plan for the targets whose structure is `structure` (built for exactly these targets):
  // found, or scheduled now and kept. `hit` tells which.
  SchedulePlan& plan(std::span<Node* const> targets, const GraphStructure& structure, bool& hit);

 private:
  struct Entry {
    std::vector<std::uint64_t> key;
    SchedulePlan plan;
  };
  // Enough for the distinct graphs of a program's loops; a program that builds ever new
  // structures starts over rather than growing without bound.
  static constexpr std::size_t kMaxEntries = 512;
  FusionPolicy policy_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Entry>> entries_;
};

}  // namespace kiln::detail
