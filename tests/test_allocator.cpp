// The buffer allocator: small blocks are recycled per thread, large ones through a shared cache.
// Every block is 64-byte aligned, blocks in use are never handed out twice, and a block may be
// freed on another thread than the one that allocated it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "graph/allocator.hpp"

namespace {

using kiln::detail::allocate_buffer;
using kiln::detail::free_buffer;

bool aligned64(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

TEST(Allocator, BlocksInUseAreDistinctAlignedAndKeepTheirBytes) {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{4}, std::size_t{64}, std::size_t{100},
                            std::size_t{1024}, std::size_t{5000}, std::size_t{1} << 20}) {
    std::vector<void*> live;
    std::set<void*> distinct;
    for (int round = 0; round < 3; ++round) {  // later rounds take recycled blocks
      for (int i = 0; i < 40; ++i) {
        void* p = allocate_buffer(bytes);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(aligned64(p)) << bytes << " bytes";
        std::memset(p, i, bytes);
        live.push_back(p);
        distinct.insert(p);
      }
      EXPECT_EQ(distinct.size(), live.size()) << bytes << " bytes: a block in use given twice";
      for (std::size_t i = 0; i < live.size(); ++i) {
        const auto* b = static_cast<const unsigned char*>(live[i]);
        for (std::size_t j = 0; j < bytes; ++j)
          ASSERT_EQ(b[j], static_cast<unsigned char>(i)) << bytes << " bytes, block " << i;
      }
      for (void* p : live) free_buffer(p, bytes);
      live.clear();
      distinct.clear();
    }
  }
}

TEST(Allocator, SmallBlocksFreedOnAnotherThreadAreReusedThere) {
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) blocks.push_back(allocate_buffer(16));
  std::set<void*> reused;
  std::thread([&] {
    for (void* p : blocks) free_buffer(p, 16);
    // This thread's lists now hold some of them: its next blocks of that size come from there.
    for (int i = 0; i < 10; ++i) {
      void* p = allocate_buffer(16);
      reused.insert(p);
      std::memset(p, 1, 16);
      free_buffer(p, 16);
    }
  }).join();  // the thread's remaining blocks are released when it ends
  bool any_reused = false;
  for (void* p : reused)
    any_reused = any_reused || std::find(blocks.begin(), blocks.end(), p) != blocks.end();
  EXPECT_TRUE(any_reused);
  kiln::detail::release_cached_buffers();
  void* p = allocate_buffer(16);
  EXPECT_TRUE(aligned64(p));
  free_buffer(p, 16);
}

}  // namespace
