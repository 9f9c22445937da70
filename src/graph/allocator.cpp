#include "graph/allocator.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>

namespace kiln::detail {

namespace {

constexpr std::size_t kCachedFrom = 64 * 1024;           // smaller blocks go to malloc directly
constexpr std::size_t kHugePage = 2 * 1024 * 1024;       // blocks this large use huge pages
constexpr std::size_t kCacheLimit = std::size_t{2} << 30;  // at most 2 GiB kept unused

// Block sizes are rounded so that similar requests share blocks.
std::size_t rounded(std::size_t bytes) {
  if (bytes < kCachedFrom) return (bytes + 63) / 64 * 64;
  const std::size_t page = bytes >= kHugePage ? kHugePage : 4096;
  return (bytes + page - 1) / page * page;
}

// Freed blocks wait here for a request of the same size. A block that no request takes for a
// while is returned to the system at the next miss: a loop that repeats its allocations reuses
// them, while one-off sizes (loading a data set, a final evaluation in larger batches) do not
// stay resident for the rest of the program.
class Cache {
 public:
  void* take(std::size_t size) {
    std::lock_guard lock(mutex_);
    ++clock_;
    auto it = free_.find(size);
    if (it == free_.end()) {
      evict_idle();
      return nullptr;
    }
    void* p = it->second.block;
    free_.erase(it);
    cached_ -= size;
    return p;
  }
  // Keeps the block unless the cache is full.
  bool keep(void* p, std::size_t size) {
    std::lock_guard lock(mutex_);
    ++clock_;
    if (cached_ + size > kCacheLimit) return false;
    free_.emplace(size, Entry{p, clock_});
    cached_ += size;
    return true;
  }
  void clear() {
    std::multimap<std::size_t, Entry> blocks;
    {
      std::lock_guard lock(mutex_);
      blocks.swap(free_);
      cached_ = 0;
    }
    for (auto& [size, e] : blocks) std::free(e.block);
  }
  ~Cache() { clear(); }

 private:
  struct Entry {
    void* block;
    std::uint64_t kept_at;  // clock_ when the block was freed
  };
  // Blocks left untaken for this many allocations and frees are idle. A training step makes a
  // few hundred, so blocks that every step reuses never get this old.
  static constexpr std::uint64_t kIdleAfter = 8192;

  void evict_idle() {
    for (auto it = free_.begin(); it != free_.end();) {
      if (clock_ - it->second.kept_at > kIdleAfter) {
        std::free(it->second.block);
        cached_ -= it->first;
        it = free_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::mutex mutex_;
  std::multimap<std::size_t, Entry> free_;
  std::size_t cached_ = 0;
  std::uint64_t clock_ = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

// Small blocks (scalars, short vectors: the values of a loop of tiny ops) are recycled per
// thread: aligned allocation from malloc costs far more than the work on such a tensor. Each
// size class keeps a few blocks; a block freed on another thread joins that thread's lists.
constexpr std::size_t kSmallLimit = 1024;  // bytes, after rounding to 64
constexpr std::size_t kSmallClasses = kSmallLimit / 64;
constexpr std::size_t kSmallPerClass = 32;

struct SmallBlocks {
  void* blocks[kSmallClasses][kSmallPerClass];
  std::size_t count[kSmallClasses] = {};
  void release() {
    for (std::size_t c = 0; c < kSmallClasses; ++c) {
      for (std::size_t i = 0; i < count[c]; ++i) std::free(blocks[c][i]);
      count[c] = 0;
    }
  }
  ~SmallBlocks();
};

// Trivially destructible, so still readable while the thread's other objects are destroyed:
// blocks freed after the lists are gone go straight back to malloc.
thread_local bool small_blocks_gone = false;

SmallBlocks::~SmallBlocks() {
  small_blocks_gone = true;
  release();
}

// On the heap, with only a pointer in thread-local storage: a 4 KB thread_local would not fit
// the static TLS block that a library loaded after start-up (a Python extension) gets.
SmallBlocks* small_blocks() {
  if (small_blocks_gone) return nullptr;
  thread_local std::unique_ptr<SmallBlocks> lists;
  if (lists == nullptr) [[unlikely]]
    lists = std::make_unique<SmallBlocks>();
  return lists.get();
}

}  // namespace

void* allocate_buffer(std::size_t bytes) {
  const std::size_t size = rounded(bytes == 0 ? 64 : bytes);
  if (size <= kSmallLimit) {
    if (SmallBlocks* lists = small_blocks()) {
      const std::size_t c = size / 64 - 1;
      if (lists->count[c] > 0) return lists->blocks[c][--lists->count[c]];
    }
  }
  if (size < kCachedFrom) return std::aligned_alloc(64, size);
  if (void* p = cache().take(size)) return p;
  void* p = std::aligned_alloc(size >= kHugePage ? kHugePage : 4096, size);
  if (p != nullptr && size >= kHugePage) madvise(p, size, MADV_HUGEPAGE);
  return p;
}

void free_buffer(void* block, std::size_t bytes) {
  if (block == nullptr) return;
  const std::size_t size = rounded(bytes == 0 ? 64 : bytes);
  if (size <= kSmallLimit) {
    if (SmallBlocks* lists = small_blocks()) {
      const std::size_t c = size / 64 - 1;
      if (lists->count[c] < kSmallPerClass) {
        lists->blocks[c][lists->count[c]++] = block;
        return;
      }
    }
  }
  if (size >= kCachedFrom && cache().keep(block, size)) return;
  std::free(block);
}

void release_cached_buffers() {
  if (SmallBlocks* lists = small_blocks()) lists->release();
  cache().clear();
}

}  // namespace kiln::detail
