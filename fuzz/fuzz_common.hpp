// Helpers shared by the fuzz harnesses (fuzz/*.cpp): a scratch file for loaders that read
// paths, and a reader that turns the fuzz bytes into choices.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kiln_fuzz {

// Before kiln starts its executor: one thread keeps an input's run deterministic and cheap,
// and errors are expected by the thousand, so they are not logged.
inline void setup_process() {
  setenv("KILN_NUM_THREADS", "1", 0);
  setenv("OMP_NUM_THREADS", "1", 0);
}

// One scratch file per process (libFuzzer runs inputs one after another), removed at exit.
class ScratchFile {
 public:
  ScratchFile() {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/kiln-fuzz-XXXXXX";
    const int fd = mkstemp(path_.data());
    if (fd < 0) {
      std::perror("kiln fuzz: mkstemp");
      std::abort();
    }
    close(fd);
  }
  ~ScratchFile() { unlink(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& path() const { return path_; }
  void write(const void* data, std::size_t size) const {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size)) {
      std::perror("kiln fuzz: writing the scratch file");
      std::abort();
    }
    std::fclose(f);
  }

 private:
  std::string path_;
};

inline const ScratchFile& scratch() {
  static const ScratchFile file;
  return file;
}

// Consumes the fuzz bytes from the front; once they are used up every value is 0, so each
// input is a finite program.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  std::size_t left() const { return n_; }
  std::uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{u8()} << (8 * i);
    return v;
  }
  std::uint64_t u64() {
    std::uint64_t v = u32();
    return v | (std::uint64_t{u32()} << 32);
  }
  double f64() {
    double d;
    const std::uint64_t v = u64();
    std::memcpy(&d, &v, sizeof d);
    return d;
  }
  // One of `n` (> 0) choices.
  std::size_t pick(std::size_t n) { return u8() % n; }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
};

}  // namespace kiln_fuzz
