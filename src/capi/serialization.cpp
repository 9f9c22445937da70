// C API: fserialize and fdeserialize in kiln's versioned binary format (documented in
// include/flint.h and docs/serialization.md). Reading checks every field and both checksums
// before it trusts them, so truncated or corrupt bytes are an IO_ERROR, never a crash.
#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "capi/capi.hpp"
#include "graph/values.hpp"

namespace kiln::capi {
namespace {

constexpr unsigned char kMagic[4] = {'K', 'I', 'L', 'N'};
constexpr std::uint16_t kVersion = FLINT_SERIALIZATION_VERSION;
constexpr int kMaxRank = 32;
// Element counts stay below 2^62, as everywhere in kiln.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 62;

// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zlib's crc32.
const std::array<std::uint32_t, 256>& crc_table() {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

std::uint32_t crc32(const unsigned char* p, std::size_t n) {
  const auto& table = crc_table();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

template <class T> void put_le(unsigned char* p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
template <class T> T get_le(const unsigned char* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

// Copies `count` elements of `size` bytes, converting between host order and little-endian.
void copy_elements(unsigned char* dst, const unsigned char* src, std::size_t count,
                   std::size_t size) {
  if constexpr (std::endian::native == std::endian::little) {
    if (count != 0) std::memcpy(dst, src, count * size);
  } else {
    for (std::size_t i = 0; i < count; ++i)
      for (std::size_t b = 0; b < size; ++b) dst[i * size + b] = src[i * size + size - 1 - b];
  }
}

[[noreturn]] void corrupt(const std::string& what) { throw CError(IO_ERROR, what); }

}  // namespace
}  // namespace kiln::capi

using namespace kiln;
using namespace kiln::capi;

extern "C" {

char* fserialize(FGraphNode* node, size_t* bytes_written) {
  Call call("fserialize");
  return guarded(call, static_cast<char*>(nullptr), [&] {
    CNode& n = call.node(node, "node");
    execute(n);  // evaluates only once; safe while other threads execute n
    const detail::Buffer& values = *n.result_buffer;
    const std::size_t rank = n.shape.size();
    if (rank < 1 || rank > static_cast<std::size_t>(kMaxRank))
      throw CError(ILLEGAL_DIMENSIONALITY,
                   "rank " + std::to_string(rank) + " outside 1-" + std::to_string(kMaxRank));
    const std::size_t element = size_of(values.dtype());
    const std::size_t count = static_cast<std::size_t>(values.numel());
    const std::size_t header = 8 + 8 * rank;
    std::size_t data_bytes = 0, total = 0;
    if (__builtin_mul_overflow(count, element, &data_bytes) ||
        __builtin_add_overflow(data_bytes, header + 8, &total))
      throw CError(OUT_OF_MEMORY, "the serialized size does not fit into memory");
    auto* out = static_cast<unsigned char*>(std::malloc(total));
    if (out == nullptr)
      throw CError(OUT_OF_MEMORY, "cannot allocate " + std::to_string(total) + " bytes");

    std::memcpy(out, kMagic, 4);
    put_le<std::uint16_t>(out + 4, kVersion);
    out[6] = static_cast<unsigned char>(to_ftype(values.dtype()));
    out[7] = static_cast<unsigned char>(rank);
    for (std::size_t d = 0; d < rank; ++d) put_le<std::uint64_t>(out + 8 + 8 * d, n.shape[d]);
    put_le<std::uint32_t>(out + header, crc32(out, header));
    unsigned char* data = out + header + 4;
    copy_elements(data, static_cast<const unsigned char*>(values.data()), count, element);
    put_le<std::uint32_t>(data + data_bytes, crc32(data, data_bytes));
    if (bytes_written != nullptr) *bytes_written = total;
    return reinterpret_cast<char*>(out);
  });
}

FGraphNode* fdeserialize(char* data, size_t* bytes_read) {
  Call call("fdeserialize");
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    call.array(data, "data");
    const auto* in = reinterpret_cast<const unsigned char*>(data);
    const bool bounded = bytes_read != nullptr && *bytes_read != 0;
    const std::size_t available = bounded ? *bytes_read : std::numeric_limits<std::size_t>::max();
    const auto need = [&](std::size_t bytes, const char* what) {
      if (bytes > available)
        corrupt("truncated data: " + std::string(what) + " needs " + std::to_string(bytes) +
                " bytes, the buffer has " + std::to_string(available));
    };

    need(8, "the header");
    if (std::memcmp(in, kMagic, 4) != 0) corrupt("bad magic (expected \"KILN\")");
    const auto version = get_le<std::uint16_t>(in + 4);
    if (version != kVersion)
      corrupt("unsupported format version " + std::to_string(version) + " (this reads " +
              std::to_string(kVersion) + ")");
    const unsigned type = in[6];
    if (type > F_FLOAT64) corrupt("unknown data type " + std::to_string(type));
    const std::size_t rank = in[7];
    if (rank < 1 || rank > static_cast<std::size_t>(kMaxRank))
      corrupt("rank " + std::to_string(rank) + " outside 1-" + std::to_string(kMaxRank));
    const std::size_t header = 8 + 8 * rank;
    need(header + 4, "the shape");
    if (get_le<std::uint32_t>(in + header) != crc32(in, header))
      corrupt("header checksum mismatch");

    const DType dtype = static_cast<DType>(type);
    const std::size_t element = size_of(dtype);
    Shape shape(rank);
    std::uint64_t count = 1;
    bool empty = false;
    for (std::size_t d = 0; d < rank; ++d) {
      const auto dim = get_le<std::uint64_t>(in + 8 + 8 * d);
      if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        corrupt("dimension " + std::to_string(d) + " of size " + std::to_string(dim) +
                " is too large");
      shape[d] = static_cast<std::int64_t>(dim);
      empty = empty || dim == 0;
    }
    // The non-zero sizes are bounded even when one size is 0: the strides of an empty tensor
    // multiply them too.
    for (std::size_t d = 0; d < rank; ++d) {
      const auto dim = static_cast<std::uint64_t>(shape[d]);
      if (dim == 0) continue;
      if (count > kMaxElements / dim) corrupt("shape " + shape_to_string(shape) + " is too large");
      count *= dim;
    }
    if (empty) count = 0;
    std::size_t data_bytes = 0, total = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(count), element, &data_bytes) ||
        __builtin_add_overflow(data_bytes, header + 8, &total))
      corrupt("shape " + shape_to_string(shape) + " is too large");
    need(total, "the values");
    const unsigned char* values = in + header + 4;
    if (get_le<std::uint32_t>(values + data_bytes) != crc32(values, data_bytes))
      corrupt("data checksum mismatch");

    Tensor t = Tensor::from_bytes(values, dtype, shape);
    if constexpr (std::endian::native != std::endian::little)
      copy_elements(static_cast<unsigned char*>(detail::host_buffer(*t.node())->data()), values,
                    static_cast<std::size_t>(count), element);
    FGraphNode* node = make_node(std::move(t), FSTORE);
    if (bytes_read != nullptr) *bytes_read = total;
    return node;
  });
}

}  // extern "C"
