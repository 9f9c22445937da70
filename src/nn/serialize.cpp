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

#include "kiln/nn.hpp"

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

[[noreturn]] void save_fail(const std::string& path, const std::string& what, int error) {
  throw Error(ErrorCode::io_error,
              "nn::save: " + path + ": " + what + " (" + std::strerror(error) + ")");
}

// Writes all of `bytes` to `fd`; false with errno set on failure.
bool write_all(int fd, const char* bytes, std::size_t n) {
  while (n > 0) {
    const ssize_t done = ::write(fd, bytes, std::min<std::size_t>(n, std::size_t{1} << 30));
    if (done < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += done;
    n -= static_cast<std::size_t>(done);
  }
  return true;
}

// Writes `bytes` to `path`, checking every step. A regular file (or a new one) is replaced
// atomically: the bytes go to a temporary file beside it, which reaches the disk before it is
// renamed over the old one, so a failed save leaves the previous file whole. Anything else (a
// device, a pipe) is written in place, since renaming over it would replace the device node.
void write_file(const std::string& path, const std::vector<char>& bytes) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) save_fail(path, "cannot open for writing", errno);
    const bool written = write_all(fd, bytes.data(), bytes.size());
    const int error = errno;
    if (::close(fd) != 0 && written) save_fail(path, "closing failed", errno);
    if (!written) save_fail(path, "writing failed", error);
    return;
  }
  // Through a symbolic link the file it points to is replaced, and the link stays.
  std::string target = path;
  if (exists) {
    std::error_code ec;
    const std::filesystem::path resolved = std::filesystem::canonical(path, ec);
    if (!ec) target = resolved.string();
  }
  static std::atomic<unsigned> counter{0};
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    temp = target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt == 100))
      save_fail(path, "cannot create a temporary file beside it", errno);
  }
  auto abandon = [&](const char* what, int error) {
    ::close(fd);
    ::unlink(temp.c_str());
    save_fail(path, what, error);
  };
  if (exists && ::fchmod(fd, st.st_mode & 07777) != 0)
    abandon("cannot keep the file's permissions", errno);
  if (!write_all(fd, bytes.data(), bytes.size())) abandon("writing failed", errno);
  if (::fsync(fd) != 0) abandon("writing failed", errno);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    save_fail(path, "writing failed", error);
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    save_fail(path, "cannot replace the file", error);
  }
}

// The whole of a regular file; a directory or device has no size that could bound the read.
std::vector<char> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(ErrorCode::io_error, "nn::load: cannot open " + path + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) io_fail(path, std::string("cannot query (") + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) io_fail(path, "is a directory, not a parameter file");
  if (!S_ISREG(st.st_mode)) io_fail(path, "not a regular file");
  std::vector<char> bytes;
  try {
    bytes.resize(static_cast<std::size_t>(st.st_size));
  } catch (const std::bad_alloc&) {
    io_fail(path, "not enough memory to read its " + std::to_string(st.st_size) + " bytes");
  }
  auto read_some = [&](char* dst, std::size_t n) {
    while (true) {
      const ssize_t got = ::read(fd, dst, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) io_fail(path, std::string("read error (") + std::strerror(errno) + ")");
    }
  };
  for (std::size_t have = 0; have < bytes.size();) {
    const std::size_t got =
        read_some(bytes.data() + have, std::min<std::size_t>(bytes.size() - have, 1u << 30));
    if (got == 0) io_fail(path, "the file shrank while being read");
    have += got;
  }
  char extra;
  if (read_some(&extra, 1) != 0) io_fail(path, "the file grew while being read");
  return bytes;
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

std::string describe(DType t, const Shape& s) { return std::string(dtype_name(t)) + " " +
                                                       shape_to_string(s); }

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

  write_file(path, out);
}

void load(const std::vector<std::pair<std::string, Parameter>>& parameters,
          const std::string& path) {
  const std::vector<char> bytes = read_file(path);
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
      mismatch("parameter '" + name + "' is " + describe(e.dtype, e.shape) +
               " in the file, " + describe(v.dtype(), v.shape()) + " in the model");
  }
  for (std::size_t i = 0; i < entries.size(); ++i)
    parameters[i].second.set(Tensor::from_bytes(entries[i].data, entries[i].dtype,
                                                entries[i].shape));
}

namespace {
std::vector<std::pair<std::string, Parameter>> state_of(const Module& module) {
  std::vector<std::pair<std::string, Parameter>> state = module.named_parameters();
  for (auto& b : module.named_buffers()) state.push_back(std::move(b));
  return state;
}
}  // namespace

void save(const Module& module, const std::string& path) { save(state_of(module), path); }

void load(Module& module, const std::string& path) { load(state_of(module), path); }

}  // namespace kiln::nn
