#include "data/zip_archive.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

constexpr std::uint32_t kLocal = 0x04034b50, kCentral = 0x02014b50, kEnd = 0x06054b50,
                        kEnd64 = 0x06064b50, kLocator64 = 0x07064b50;
constexpr std::uint64_t kFourGiB = std::uint64_t{1} << 32;
// Deflate expands at most 1032:1 (a run of one byte): a larger claim is a lie.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

[[noreturn]] void damaged(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::io_error, "load_npz: " + source + ": " + what);
}

// Little-endian fields of a byte range, each read checked against its end.
class Fields {
 public:
  Fields(std::span<const std::byte> bytes, const std::string& source, const char* what)
      : bytes_(bytes), source_(source), what_(what) {}
  std::uint64_t get(std::size_t at, std::size_t size) const {  // size <= 8
    check(at, size);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < size; ++i)
      v |= static_cast<std::uint64_t>(bytes_[at + i]) << (8 * i);
    return v;
  }
  void check(std::size_t at, std::size_t size) const {
    if (at > bytes_.size() || size > bytes_.size() - at)
      damaged(source_, std::string(what_) + " runs past the end of the archive");
  }
  std::uint32_t u32(std::size_t at) const { return static_cast<std::uint32_t>(get(at, 4)); }
  std::uint16_t u16(std::size_t at) const { return static_cast<std::uint16_t>(get(at, 2)); }
  std::uint64_t u64(std::size_t at) const { return get(at, 8); }

 private:
  std::span<const std::byte> bytes_;
  const std::string& source_;
  const char* what_;
};

std::vector<std::byte> inflated(std::span<const std::byte> in, std::uint64_t size,
                                const std::string& source, const std::string& name) {
  if (size > in.size() * kMaxDeflateRatio + 64)
    damaged(source, "entry '" + name + "' claims " + std::to_string(size) +
                        " bytes, more than deflate makes of " + std::to_string(in.size()));
  std::vector<std::byte> out(static_cast<std::size_t>(size));
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) damaged(source, "zlib could not start inflating");
  std::size_t read = 0, written = 0;
  int status = Z_OK;
  while (status == Z_OK) {
    const std::size_t in_chunk = std::min<std::size_t>(in.size() - read, 1u << 30);
    const std::size_t out_chunk = std::min<std::size_t>(out.size() - written, 1u << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + read));
    z.avail_in = static_cast<uInt>(in_chunk);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + written);
    z.avail_out = static_cast<uInt>(out_chunk);
    status = inflate(&z, Z_NO_FLUSH);
    read += in_chunk - z.avail_in;
    written += out_chunk - z.avail_out;
    if (status == Z_OK && in_chunk == z.avail_in && out_chunk == z.avail_out) break;  // stuck
  }
  inflateEnd(&z);
  if (status != Z_STREAM_END || written != out.size())
    damaged(source,
            "entry '" + name + "' does not inflate to its " + std::to_string(size) + " bytes");
  return out;
}

std::uint32_t crc_of(std::span<const std::byte> data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t at = 0; at < data.size();) {
    const std::size_t n = std::min<std::size_t>(data.size() - at, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + at), static_cast<uInt>(n));
    at += n;
  }
  return static_cast<std::uint32_t>(crc);
}

}  // namespace

std::vector<ZipEntry> read_zip(std::span<const std::byte> archive, const std::string& source) {
  const Fields f(archive, source, "a record");
  // The end record: 22 bytes and a comment of up to 65535 at the end of the archive.
  if (archive.size() < 22) damaged(source, "too short for a ZIP archive (an .npz file)");
  std::size_t end = archive.size() - 22;
  const std::size_t lowest = archive.size() > 22 + 65535 ? archive.size() - 22 - 65535 : 0;
  while (f.u32(end) != kEnd) {
    if (end == lowest) damaged(source, "no ZIP end record (not an .npz file?)");
    --end;
  }
  std::uint64_t count = f.u16(end + 10);
  std::uint64_t directory_size = f.u32(end + 12);
  std::uint64_t directory = f.u32(end + 16);
  if (count == 0xFFFF || directory_size == 0xFFFFFFFF || directory == 0xFFFFFFFF) {
    if (end < 20 || f.u32(end - 20) != kLocator64) damaged(source, "no ZIP64 end locator");
    const std::uint64_t record = f.u64(end - 20 + 8);
    if (record > archive.size() || f.u32(static_cast<std::size_t>(record)) != kEnd64)
      damaged(source, "no ZIP64 end record");
    count = f.u64(static_cast<std::size_t>(record) + 32);
    directory_size = f.u64(static_cast<std::size_t>(record) + 40);
    directory = f.u64(static_cast<std::size_t>(record) + 48);
  }
  if (directory > archive.size() || directory_size > archive.size() - directory ||
      count > directory_size / 46)
    damaged(source, "the central directory does not fit in the archive");
  struct Record {
    std::string name;
    std::uint16_t method;
    std::uint32_t crc;
    std::uint64_t packed, size, local, begin;
  };
  std::vector<Record> records;
  std::size_t at = static_cast<std::size_t>(directory);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (f.u32(at) != kCentral)
      damaged(source, "central directory entry " + std::to_string(i) + " is damaged");
    const std::uint16_t flags = f.u16(at + 8);
    Record r;
    r.method = f.u16(at + 10);
    r.crc = f.u32(at + 16);
    r.packed = f.u32(at + 20);
    r.size = f.u32(at + 24);
    const std::size_t name_length = f.u16(at + 28), extra_length = f.u16(at + 30),
                      comment_length = f.u16(at + 32);
    r.local = f.u32(at + 42);
    f.check(at + 46, name_length + extra_length + comment_length);
    r.name.assign(reinterpret_cast<const char*>(archive.data() + at + 46), name_length);
    // ZIP64: the fields that read 0xFFFFFFFF follow in the extra field 0x0001, in this order.
    const std::size_t extra_end = at + 46 + name_length + extra_length;
    for (std::size_t x = at + 46 + name_length; x + 4 <= extra_end;) {
      const std::uint16_t id = f.u16(x), length = f.u16(x + 2);
      if (x + 4 + length > extra_end)
        damaged(source, "entry '" + r.name + "' has a damaged extra field");
      if (id == 1) {
        std::size_t y = x + 4;
        auto next = [&](std::uint64_t& field) {
          if (field != 0xFFFFFFFF) return;
          if (y + 8 > x + 4 + length)
            damaged(source, "entry '" + r.name + "' has a short ZIP64 field");
          field = f.u64(y);
          y += 8;
        };
        next(r.size);
        next(r.packed);
        next(r.local);
      }
      x += 4 + static_cast<std::size_t>(length);
    }
    at = extra_end + comment_length;
    if (flags & 1) damaged(source, "entry '" + r.name + "' is encrypted");
    if (r.method != 0 && r.method != 8)
      damaged(source, "entry '" + r.name + "' uses compression method " + std::to_string(r.method) +
                          " (kiln reads stored and deflated entries)");
    // The local header repeats name and extra field with lengths of its own.
    const Fields l(archive, source, "a local header");
    if (r.local > archive.size() || l.u32(static_cast<std::size_t>(r.local)) != kLocal)
      damaged(source, "entry '" + r.name + "' has no local header where the directory says");
    r.begin = r.local + 30 + l.u16(static_cast<std::size_t>(r.local) + 26) +
              l.u16(static_cast<std::size_t>(r.local) + 28);
    if (r.begin > archive.size() || r.packed > archive.size() - r.begin)
      damaged(source, "entry '" + r.name + "' runs past the end of the archive");
    if (r.method == 0 && r.packed != r.size)
      damaged(source, "stored entry '" + r.name + "' has two sizes");
    records.push_back(std::move(r));
  }
  // Entries may not share bytes: otherwise a small archive could name one deflate bomb many
  // times. With that, all entries together inflate to at most 1032 times the archive's size.
  std::vector<const Record*> by_place;
  for (const Record& r : records) by_place.push_back(&r);
  std::sort(by_place.begin(), by_place.end(),
            [](const Record* a, const Record* b) { return a->local < b->local; });
  for (std::size_t i = 1; i < by_place.size(); ++i)
    if (by_place[i]->local < by_place[i - 1]->begin + by_place[i - 1]->packed)
      damaged(source,
              "entries '" + by_place[i - 1]->name + "' and '" + by_place[i]->name + "' overlap");
  std::vector<ZipEntry> entries;
  for (const Record& r : records) {
    const std::span<const std::byte> stored =
        archive.subspan(static_cast<std::size_t>(r.begin), static_cast<std::size_t>(r.packed));
    ZipEntry e;
    e.name = r.name;
    if (r.method == 0)
      e.data.assign(stored.begin(), stored.end());
    else
      e.data = inflated(stored, r.size, source, r.name);
    if (crc_of(e.data) != r.crc) damaged(source, "entry '" + r.name + "' fails its CRC-32 check");
    entries.push_back(std::move(e));
  }
  return entries;
}

std::vector<std::byte> write_zip(const std::vector<ZipEntry>& entries, bool compress) {
  std::vector<std::byte> out;
  auto put = [&](std::uint64_t v, int size) {
    for (int i = 0; i < size; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
  };
  auto put_bytes = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  };
  auto too_large = [](const std::string& what) {
    throw Error(ErrorCode::io_error, "save_npz: " + what +
                                         " needs ZIP64 (4 GiB or more), "
                                         "which kiln does not write");
  };
  struct Written {
    std::uint32_t crc;
    std::uint64_t packed, size, local;
  };
  std::vector<Written> written;
  for (const ZipEntry& e : entries) {
    std::vector<std::byte> packed;
    if (compress) {
      z_stream z{};
      if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
          Z_OK)
        throw Error(ErrorCode::io_error, "save_npz: zlib could not start deflating");
      if (e.data.size() >= kFourGiB) too_large("entry '" + e.name + "'");
      packed.resize(deflateBound(&z, static_cast<uLong>(e.data.size())));
      z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(e.data.data()));
      z.avail_in = static_cast<uInt>(e.data.size());
      z.next_out = reinterpret_cast<Bytef*>(packed.data());
      z.avail_out = static_cast<uInt>(packed.size());
      const int status = deflate(&z, Z_FINISH);
      packed.resize(z.total_out);
      deflateEnd(&z);
      if (status != Z_STREAM_END)
        throw Error(ErrorCode::io_error, "save_npz: zlib failed to deflate");
    }
    const std::span<const std::byte> body =
        compress ? std::span<const std::byte>(packed) : std::span<const std::byte>(e.data);
    const Written w{crc_of(e.data), body.size(), e.data.size(), out.size()};
    if (w.size >= kFourGiB || w.local >= kFourGiB || e.name.size() > 0xFFFF)
      too_large("entry '" + e.name + "'");
    put(kLocal, 4);
    put(20, 2);  // version needed: 2.0
    put(0, 2);   // flags
    put(compress ? 8 : 0, 2);
    put(0, 4);  // time and date: none
    put(w.crc, 4);
    put(w.packed, 4);
    put(w.size, 4);
    put(e.name.size(), 2);
    put(0, 2);
    put_bytes(e.name.data(), e.name.size());
    put_bytes(body.data(), body.size());
    written.push_back(w);
  }
  const std::uint64_t directory = out.size();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Written& w = written[i];
    put(kCentral, 4);
    put(20, 2);  // made by: 2.0
    put(20, 2);
    put(0, 2);
    put(compress ? 8 : 0, 2);
    put(0, 4);
    put(w.crc, 4);
    put(w.packed, 4);
    put(w.size, 4);
    put(entries[i].name.size(), 2);
    put(0, 2);
    put(0, 2);
    put(0, 2);
    put(0, 2);
    put(0, 4);
    put(w.local, 4);
    put_bytes(entries[i].name.data(), entries[i].name.size());
  }
  const std::uint64_t directory_size = out.size() - directory;
  if (entries.size() >= 0xFFFF || directory >= kFourGiB) too_large("the archive");
  put(kEnd, 4);
  put(0, 2);
  put(0, 2);
  put(entries.size(), 2);
  put(entries.size(), 2);
  put(directory_size, 4);
  put(directory, 4);
  put(0, 2);
  return out;
}

}  // namespace kiln::detail
