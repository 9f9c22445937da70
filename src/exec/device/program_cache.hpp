// The programs a device backend has compiled, in memory by source and on disk by a key of
// everything that decides the binary (source, options, device, driver, kiln's version): a
// program's second use in a process costs a lookup, its first use in a later process a load.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "exec/device/device_api.hpp"
#include "exec/device/kernel_cache.hpp"

namespace kiln::detail::device {

class ProgramCache {
 public:
  explicit ProgramCache(DeviceApi& device);

  // The entry point `entry` of `source`, compiled once per source.
  void* kernel(const std::string& source, const std::string& entry);

  // Compilations from source so far and the seconds they took, and programs loaded from the disk
  // cache instead (for KILN_DEBUG, benchmarks and tests).
  std::uint64_t builds() const { return builds_; }
  double build_seconds() const { return build_seconds_; }
  std::uint64_t cache_loads() const { return cache_loads_; }
  const KernelCache& disk_cache() const { return disk_; }

 private:
  std::unique_ptr<DeviceProgram> build(const std::string& source);

  DeviceApi& device_;
  KernelCache disk_;
  bool debug_ = false;  // KILN_DEBUG: say what each build took
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<DeviceProgram>> programs_;
  std::uint64_t builds_ = 0;
  std::uint64_t cache_loads_ = 0;
  double build_seconds_ = 0;
};

}  // namespace kiln::detail::device
