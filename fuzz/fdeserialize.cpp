// Fuzzes fdeserialize (flint.h) with the buffer's true size: corrupt or truncated bytes must
// give NULL with IO_ERROR (or OUT_OF_MEMORY), and an accepted node must execute and round-trip.
//
// Input: byte 0 chooses whether the harness repairs the two CRC-32s before the call, so that
// mutations get past the checksums into the code behind them; the rest is the serialized node.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "flint.h"
#include "fuzz_common.hpp"

namespace {

void put_u32(std::vector<char>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::uint32_t crc(const char* p, std::size_t n) {
  return static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
}

// The checksums as fserialize would have written them for these bytes (see flint.h).
void repair_checksums(std::vector<char>& b) {
  if (b.size() < 8) return;
  const std::size_t rank = static_cast<std::uint8_t>(b[7]);
  const std::size_t header = 8 + 8 * rank;
  if (b.size() < header + 4) return;
  put_u32(b, header, crc(b.data(), header));
  if (b.size() < header + 8) return;
  put_u32(b, b.size() - 4, crc(b.data() + header + 4, b.size() - 4 - (header + 4)));
}

std::size_t element_size(FType t) { return t == F_INT32 || t == F_FLOAT32 ? 4 : 8; }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln_fuzz::setup_process();
  fSetLoggingLevel(F_NO_LOGGING);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<char> bytes(data + 1, data + size);
  if (data[0] & 1) repair_checksums(bytes);

  size_t bytes_read = bytes.size();
  // An empty buffer would mean "take the size from the header" and let it read past the end.
  if (bytes_read == 0) return 0;
  FGraphNode* node = fdeserialize(bytes.data(), &bytes_read);
  if (node == nullptr) {
    const FErrorType e = fErrorType();
    if (e != IO_ERROR && e != OUT_OF_MEMORY) std::abort();
    return 0;
  }
  if (bytes_read > bytes.size() || node->operation.dimensions < 1) std::abort();
  if (fCalculateResult(node) == nullptr) {
    if (fErrorType() != OUT_OF_MEMORY) std::abort();
    fFreeGraph(node);
    return 0;
  }
  const FResultData* r = node->result_data;
  std::size_t numel = 1;
  for (int d = 0; d < node->operation.dimensions; ++d) numel *= node->operation.shape[d];
  if (r == nullptr || r->num_entries != numel) std::abort();
  // The values are the ones after the header, byte for byte.
  const std::size_t header = 12 + 8 * static_cast<std::size_t>(node->operation.dimensions);
  const std::size_t nbytes = numel * element_size(node->operation.data_type);
  if (header + nbytes > bytes_read || std::memcmp(r->data, bytes.data() + header, nbytes) != 0)
    std::abort();

  size_t written = 0;
  char* again = fserialize(node, &written);
  if (again == nullptr || written != bytes_read || std::memcmp(again, bytes.data(), written) != 0)
    std::abort();
  std::free(again);
  fFreeGraph(node);
  return 0;
}
