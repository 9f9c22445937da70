// NodeSlots: the position of each node a structural walk reached, kept by the walk itself, so
// that walking a graph writes nothing into the shared, immutable nodes.
//
// An open-addressing table keyed by the node's address. Entries carry the walk's generation, so
// starting a new walk forgets the old one in constant time and the table's memory is reused from
// one evaluation to the next (a tiny evaluation's cost is mostly such bookkeeping).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace kiln::detail {

struct Node;

class NodeSlots {
 public:
  // Forgets every node; `expected` is how many the next walk will likely reach.
  void start(std::size_t expected) {
    if (++generation_ == 0) {  // wrapped: stale entries could look current
      for (Entry& e : table_) e.generation = 0;
      generation_ = 1;
    }
    count_ = 0;
    if (table_.size() < 2 * expected) resize(std::bit_ceil(2 * expected));
  }

  // A node reached but not yet given its position.
  static constexpr std::uint32_t unplaced = UINT32_MAX;

  // The node's position; -1 when the node was not reached or is unplaced.
  int find(const Node* node) const {
    const std::uint32_t* slot = lookup(node);
    return slot != nullptr && *slot != unplaced ? static_cast<int>(*slot) : -1;
  }

  bool reached(const Node* node) const { return lookup(node) != nullptr; }

  // Records the node's position (or `unplaced`); a node recorded before gets the new one.
  void put(const Node* node, std::uint32_t slot) {
    if (2 * (count_ + 1) > table_.size()) resize(std::max<std::size_t>(64, 2 * table_.size()));
    for (std::size_t i = index_of(node);; i = (i + 1) & mask_) {
      Entry& e = table_[i];
      if (e.generation != generation_) {
        e = {node, slot, generation_};
        ++count_;
        return;
      }
      if (e.node == node) {
        e.slot = slot;
        return;
      }
    }
  }

 private:
  struct Entry {
    const Node* node = nullptr;
    std::uint32_t slot = 0;
    std::uint32_t generation = 0;
  };

  const std::uint32_t* lookup(const Node* node) const {
    if (table_.empty()) return nullptr;
    for (std::size_t i = index_of(node);; i = (i + 1) & mask_) {
      const Entry& e = table_[i];
      if (e.generation != generation_) return nullptr;
      if (e.node == node) return &e.slot;
    }
  }

  std::size_t index_of(const Node* node) const {
    // Nodes are heap objects aligned to 16 bytes; a multiplicative hash spreads the rest.
    const auto bits = reinterpret_cast<std::uintptr_t>(node) >> 4;
    return static_cast<std::size_t>((bits * 0x9e3779b97f4a7c15ull) >> shift_) & mask_;
  }

  void resize(std::size_t size) {
    std::vector<Entry> old;
    old.swap(table_);
    table_.assign(size, Entry{});
    mask_ = size - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(size));
    const std::uint32_t current = generation_;
    count_ = 0;
    for (const Entry& e : old)
      if (e.generation == current) put(e.node, e.slot);
  }

  std::vector<Entry> table_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t count_ = 0;
  std::uint32_t generation_ = 0;
};

}  // namespace kiln::detail
