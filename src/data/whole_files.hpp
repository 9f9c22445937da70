// Whole files read and written with every step checked, for kiln's file formats (nn::save's,
// safetensors). Errors are kiln::Error(io_error) whose message begins with `op` and the path.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln::detail {

// The whole of a regular file; a directory or device has no size that could bound the read. A
// file of more than `max_bytes` is refused before anything is read.
std::vector<char> read_whole_file(const std::string& path, const char* op,
                                  std::uint64_t max_bytes = UINT64_MAX);

// Writes `bytes` to `path`. A regular file (or a new one) is replaced atomically: the bytes go
// to a temporary file beside it, which reaches the disk before it is renamed over the old one,
// so a failed write leaves the previous file whole. Anything else (a device, a pipe) is written
// in place, since renaming over it would replace the device node.
void write_file_atomically(const std::string& path, std::span<const char> bytes, const char* op);

}  // namespace kiln::detail
