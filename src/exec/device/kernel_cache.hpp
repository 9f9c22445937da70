// The on-disk cache of built device programs (every generated-kernel backend): the device's binary
// of a program, stored under a hash of everything that decides it (source, build options, device,
// driver, kiln's version), so
// that a program's second run starts without compiling. Files are written whole under a temporary
// name and renamed into place, so that a reader never sees half a file; a damaged or foreign file
// fails its checksum and is rebuilt and replaced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::detail::device {

class KernelCache {
 public:
  // The folder `api` (one per device API: "opencl", "cuda") of the directory KILN_CACHE_DIR names,
  // else of $XDG_CACHE_HOME/kiln, else of $HOME/.cache/kiln; none (the cache is off) when
  // KILN_CACHE_DIR is "off" or no directory can be made.
  explicit KernelCache(const std::string& api);
  bool enabled() const { return !dir_.empty(); }
  const std::string& directory() const { return dir_; }

  // The key of a program: a hash of the strings that decide its binary.
  static std::string key(const std::vector<std::string>& parts);
  // The stored binary, or nothing when there is none or it is damaged (and then removed).
  std::optional<std::vector<unsigned char>> load(const std::string& key) const;
  // Stores a binary; failures (a full disk, a read-only directory) only leave it out.
  void store(const std::string& key, const std::vector<unsigned char>& binary) const;

 private:
  std::string path(const std::string& key) const;
  std::string dir_;
};

}  // namespace kiln::detail::device
