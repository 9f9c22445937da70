#include "data/whole_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>
#include <system_error>

#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

[[noreturn]] void fail(const char* op, const std::string& path, const std::string& what) {
  throw Error(ErrorCode::io_error, std::string(op) + ": " + path + ": " + what);
}

[[noreturn]] void fail(const char* op, const std::string& path, const std::string& what,
                       int error) {
  fail(op, path, what + " (" + std::strerror(error) + ")");
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

}  // namespace

void write_file_atomically(const std::string& path, std::span<const char> bytes, const char* op) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) fail(op, path, "cannot open for writing", errno);
    const bool written = write_all(fd, bytes.data(), bytes.size());
    const int error = errno;
    if (::close(fd) != 0 && written) fail(op, path, "closing failed", errno);
    if (!written) fail(op, path, "writing failed", error);
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
      fail(op, path, "cannot create a temporary file beside it", errno);
  }
  auto abandon = [&](const char* what, int error) {
    ::close(fd);
    ::unlink(temp.c_str());
    fail(op, path, what, error);
  };
  if (exists && ::fchmod(fd, st.st_mode & 07777) != 0)
    abandon("cannot keep the file's permissions", errno);
  if (!write_all(fd, bytes.data(), bytes.size())) abandon("writing failed", errno);
  if (::fsync(fd) != 0) abandon("writing failed", errno);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail(op, path, "writing failed", error);
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail(op, path, "cannot replace the file", error);
  }
}

std::vector<char> read_whole_file(const std::string& path, const char* op,
                                  std::uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(op, path, "cannot open", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(op, path, "cannot query", errno);
  if (S_ISDIR(st.st_mode)) fail(op, path, "is a directory");
  if (!S_ISREG(st.st_mode)) fail(op, path, "not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    fail(op, path, "the file has " + std::to_string(st.st_size) + " bytes, more than the " +
                       std::to_string(max_bytes) + " " + op + " reads");
  std::vector<char> bytes;
  try {
    bytes.resize(static_cast<std::size_t>(st.st_size));
  } catch (const std::bad_alloc&) {
    fail(op, path, "not enough memory to read its " + std::to_string(st.st_size) + " bytes");
  }
  auto read_some = [&](char* dst, std::size_t n) {
    while (true) {
      const ssize_t got = ::read(fd, dst, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) fail(op, path, "read error", errno);
    }
  };
  for (std::size_t have = 0; have < bytes.size();) {
    const std::size_t got =
        read_some(bytes.data() + have, std::min<std::size_t>(bytes.size() - have, 1u << 30));
    if (got == 0) fail(op, path, "the file shrank while being read");
    have += got;
  }
  char extra;
  if (read_some(&extra, 1) != 0) fail(op, path, "the file grew while being read");
  return bytes;
}

}  // namespace kiln::detail
