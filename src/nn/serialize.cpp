// Saving and loading parameters: the format is described in include/kiln/nn.hpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <system_error>

#include "data/whole_files.hpp"
#include "kiln/nn.hpp"
#include "nn/module_state.hpp"

namespace kiln::nn {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the parameter file format is little-endian; add byte swapping for this host");

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'P', 'A', 'R', 'M'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kMaxRank = 16;
constexpr std::uint32_t kMaxNameLength = 4096;

template <class T> void put(std::vector<char>& out, T v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

std::uint32_t crc_of(const char* data, std::size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

[[noreturn]] void io_fail(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::io_error, "nn::load: " + path + ": " + what);
}

// Reads from a byte range, failing with a message naming the file when it runs out.
class Reader {
 public:
  Reader(const std::vector<char>& bytes, std::size_t end, const std::string& path)
      : bytes_(bytes), end_(end), path_(path) {}
  template <class T> T get(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  const char* take(std::size_t n, const char* what) {
    if (n > end_ - pos_)
      io_fail(path_, std::string("file is truncated or corrupted (") + what + " at byte " +
                         std::to_string(pos_) + " needs " + std::to_string(n) +
                         " bytes, only " + std::to_string(end_ - pos_) + " left)");
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::size_t left() const { return end_ - pos_; }

 private:
  const std::vector<char>& bytes_;
  std::size_t end_, pos_ = 0;
  const std::string& path_;
};

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  const char* data;
};

}  // namespace

void save(const std::vector<std::pair<std::string, Parameter>>& parameters,
          const std::string& path) {
  std::vector<char> out;
  out.insert(out.end(), kMagic, kMagic + sizeof kMagic);
  put<std::uint32_t>(out, kVersion);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(parameters.size()));
  for (const auto& [name, p] : parameters) {
    const Tensor& v = p.value();
    put<std::uint32_t>(out, static_cast<std::uint32_t>(name.size()));
    out.insert(out.end(), name.begin(), name.end());
    put<std::uint32_t>(out, static_cast<std::uint32_t>(v.dtype()));
    put<std::uint32_t>(out, static_cast<std::uint32_t>(v.rank()));
    for (auto d : v.shape()) put<std::int64_t>(out, d);
    // copy_to writes typed values, so it needs an aligned destination; names make `out` unaligned.
    std::vector<std::byte> values(static_cast<std::size_t>(v.numel()) * size_of(v.dtype()));
    v.copy_to(values.data(), v.dtype());
    const char* raw = reinterpret_cast<const char*>(values.data());
    out.insert(out.end(), raw, raw + values.size());
  }
  put<std::uint32_t>(out, crc_of(out.data(), out.size()));

  detail::write_file_atomically(path, out, "nn::save");
}

void load(const std::vector<std::pair<std::string, Parameter>>& parameters,
          const std::string& path) {
  const std::vector<char> bytes = detail::read_whole_file(path, "nn::load");
  constexpr std::size_t kHeader = sizeof kMagic + 8;
  if (bytes.size() < kHeader + 4 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    io_fail(path, "not a kiln parameter file (bad magic or too short)");
  Reader header(bytes, kHeader, path);
  header.take(sizeof kMagic, "magic");
  const auto version = header.get<std::uint32_t>("version");
  if (version != kVersion)
    io_fail(path, "unsupported version " + std::to_string(version) + " (this kiln reads " +
                      std::to_string(kVersion) + ")");
  const auto count = header.get<std::uint32_t>("count");

  // Parse every entry before comparing, so truncation and corruption are reported as such.
  const std::size_t body_end = bytes.size() - 4;
  Reader r(bytes, body_end, path);
  r.take(kHeader, "header");
  std::vector<Entry> entries;
  for (std::uint32_t i = 0; i < count; ++i) {
    Entry e;
    const auto name_length = r.get<std::uint32_t>("name length");
    if (name_length > kMaxNameLength) io_fail(path, "file is corrupted (name length " +
                                                        std::to_string(name_length) + ")");
    const char* name = r.take(name_length, "name");
    e.name.assign(name, name_length);
    const auto dtype = r.get<std::uint32_t>("dtype");
    if (dtype > static_cast<std::uint32_t>(DType::f64))
      io_fail(path, "file is corrupted (dtype code " + std::to_string(dtype) + " of '" +
                        e.name + "')");
    e.dtype = static_cast<DType>(dtype);
    const auto rank = r.get<std::uint32_t>("rank");
    if (rank > kMaxRank)
      io_fail(path, "file is corrupted (rank " + std::to_string(rank) + " of '" + e.name + "')");
    std::uint64_t numel = 1;
    for (std::uint32_t d = 0; d < rank; ++d) {
      const auto dim = r.get<std::int64_t>("dimension");
      if (dim < 0 || (dim > 0 && numel > std::numeric_limits<std::uint64_t>::max() /
                                             static_cast<std::uint64_t>(dim) / 8))
        io_fail(path, "file is corrupted (dimension " + std::to_string(dim) + " of '" +
                          e.name + "')");
      numel *= static_cast<std::uint64_t>(dim);
      e.shape.push_back(dim);
    }
    const std::uint64_t n = numel * size_of(e.dtype);
    if (n > r.left())
      io_fail(path, "file is truncated or corrupted (data of '" + e.name + "' needs " +
                        std::to_string(n) + " bytes, only " + std::to_string(r.left()) +
                        " left)");
    e.data = r.take(static_cast<std::size_t>(n), "data");
    entries.push_back(std::move(e));
  }
  if (r.left() != 0)
    io_fail(path, "file is corrupted (" + std::to_string(r.left()) +
                      " unexpected bytes after the last parameter)");
  std::uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + body_end, 4);
  if (stored_crc != crc_of(bytes.data(), body_end))
    io_fail(path, "file is corrupted (checksum mismatch)");

  // Compare with the model.
  auto mismatch = [&](const std::string& what) {
    throw Error(ErrorCode::incompatible_shapes,
                "nn::load: " + path + " was written for a different model: " + what);
  };
  if (entries.size() != parameters.size())
    mismatch("it holds " + std::to_string(entries.size()) + " parameters, the model has " +
             std::to_string(parameters.size()));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& [name, p] = parameters[i];
    const Entry& e = entries[i];
    const Tensor& v = p.value();
    if (e.name != name)
      mismatch("parameter " + std::to_string(i) + " is '" + e.name + "' in the file, '" + name +
               "' in the model");
    if (e.dtype != v.dtype() || e.shape != v.shape())
      mismatch("parameter '" + name + "' is " + model_files::describe(e.dtype, e.shape) +
               " in the file, " + model_files::describe(v.dtype(), v.shape()) +
               " in the model");
  }
  for (std::size_t i = 0; i < entries.size(); ++i)
    parameters[i].second.copy_(Tensor::from_bytes(entries[i].data, entries[i].dtype,
                                                entries[i].shape));
}

void save(const Module& module, const std::string& path) {
  save(model_files::state_of(module), path);
}

void load(Module& module, const std::string& path) {
  load(model_files::state_of(module), path);
}

}  // namespace kiln::nn
