// ZIP archives as NumPy's .npz files use them: reading stored and deflated entries (ZIP64 sizes
// and offsets included, CRC-32 checked) through the central directory, and writing stored or
// deflated entries. Every size and offset is checked against the archive before it is used;
// a deflated entry never inflates to more than its claimed size, nor claims more than deflate
// can produce from its compressed bytes, so a tiny archive cannot exhaust memory.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kiln::detail {

struct ZipEntry {
  std::string name;
  std::vector<std::byte> data;
};

// The archive's entries in central-directory order. A damaged archive, an encrypted entry or an
// unknown compression method throws kiln::Error(io_error) with `source` and the entry named.
std::vector<ZipEntry> read_zip(std::span<const std::byte> archive, const std::string& source);

// An archive of the entries, each deflated when `compress` (else stored). Throws
// kiln::Error(io_error) when an entry or the archive would need ZIP64 (4 GiB or more).
std::vector<std::byte> write_zip(const std::vector<ZipEntry>& entries, bool compress);

}  // namespace kiln::detail
