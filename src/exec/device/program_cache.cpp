#include "exec/device/program_cache.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>

#ifndef KILN_VERSION_STRING
#define KILN_VERSION_STRING "unknown"
#endif

namespace kiln::detail::device {

ProgramCache::ProgramCache(DeviceApi& device)
    : device_(device), disk_(std::string(device.api())) {
  const char* debug = std::getenv("KILN_DEBUG");
  debug_ = debug != nullptr && debug[0] != '\0' && debug[0] != '0';
}

std::unique_ptr<DeviceProgram> ProgramCache::build(const std::string& source) {
  const std::string key =
      KernelCache::key({source, device_.compile_options(), device_.name(), device_.driver(),
                        std::string(device_.api()), KILN_VERSION_STRING});
  // A binary the driver refuses is compiled again from source and replaced.
  if (auto binary = disk_.load(key))
    if (auto program = device_.load(*binary)) {
      ++cache_loads_;
      return program;
    }
  const auto start = std::chrono::steady_clock::now();
  auto program = device_.compile(source);
  ++builds_;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  build_seconds_ += seconds;
  if (debug_)
    std::cerr << "[kiln] " << device_.api() << ": built a kernel in " << seconds * 1e3 << " ms\n";
  if (disk_.enabled()) disk_.store(key, program->binary());
  return program;
}

void* ProgramCache::kernel(const std::string& source, const std::string& entry) {
  device_.usable();
  std::lock_guard lock(mutex_);
  auto found = programs_.find(source);
  if (found == programs_.end()) found = programs_.emplace(source, build(source)).first;
  return found->second->entry(entry);
}

}  // namespace kiln::detail::device
