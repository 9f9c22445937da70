#include "graph/allocator.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
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

class Cache {
 public:
  void* take(std::size_t size) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    cached_ -= size;
    return p;
  }
  // Keeps the block unless the cache is full.
  bool keep(void* p, std::size_t size) {
    std::lock_guard lock(mutex_);
    if (cached_ + size > kCacheLimit) return false;
    free_.emplace(size, p);
    cached_ += size;
    return true;
  }
  void clear() {
    std::multimap<std::size_t, void*> blocks;
    {
      std::lock_guard lock(mutex_);
      blocks.swap(free_);
      cached_ = 0;
    }
    for (auto& [size, p] : blocks) std::free(p);
  }
  ~Cache() { clear(); }

 private:
  std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
  std::size_t cached_ = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

void* allocate_buffer(std::size_t bytes) {
  const std::size_t size = rounded(bytes == 0 ? 64 : bytes);
  if (size < kCachedFrom) return std::aligned_alloc(64, size);
  if (void* p = cache().take(size)) return p;
  void* p = std::aligned_alloc(size >= kHugePage ? kHugePage : 4096, size);
  if (p != nullptr && size >= kHugePage) madvise(p, size, MADV_HUGEPAGE);
  return p;
}

void free_buffer(void* block, std::size_t bytes) {
  if (block == nullptr) return;
  const std::size_t size = rounded(bytes == 0 ? 64 : bytes);
  if (size >= kCachedFrom && cache().keep(block, size)) return;
  std::free(block);
}

void release_cached_buffers() { cache().clear(); }

}  // namespace kiln::detail
