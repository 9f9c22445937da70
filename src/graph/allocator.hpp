// The caching allocator behind every tensor buffer. Large freed blocks are kept and handed out
// again instead of going back to the operating system, so evaluating the same graph repeatedly
// does not pay for page faults on fresh memory each time.
#pragma once

#include <cstddef>

namespace kiln::detail {

// 64-byte aligned memory of at least `bytes` bytes, or null when none can be had.
void* allocate_buffer(std::size_t bytes);
// Gives back a block from allocate_buffer of the same size.
void free_buffer(void* block, std::size_t bytes);
// Returns every cached block to the operating system (small blocks: those the calling thread
// keeps).
void release_cached_buffers();

}  // namespace kiln::detail
