#include "exec/device/kernel_cache.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <unistd.h>

namespace kiln::detail::device {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'L', '0', '1'};

// FNV-1a over 64 bits, from a given basis: two bases give a 128-bit key.
std::uint64_t fnv1a(const void* data, std::size_t size, std::uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}
constexpr std::uint64_t kBasis = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kOtherBasis = 0x84222325cbf29ce4ULL;

std::string default_directory() {
  if (const char* dir = std::getenv("KILN_CACHE_DIR"); dir != nullptr && *dir != '\0')
    return std::strcmp(dir, "off") == 0 ? std::string() : std::string(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/kiln";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/kiln";
  return {};
}

}  // namespace

KernelCache::KernelCache(const std::string& api) {
  std::string dir = default_directory();
  if (dir.empty()) return;
  dir += "/" + api;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (!error) dir_ = std::move(dir);
}

std::string KernelCache::key(const std::vector<std::string>& parts) {
  std::uint64_t a = kBasis, b = kOtherBasis;
  for (const std::string& part : parts) {
    const std::uint64_t size = part.size();  // lengths too, so that parts cannot run together
    a = fnv1a(&size, sizeof size, fnv1a(part.data(), part.size(), a));
    b = fnv1a(&size, sizeof size, fnv1a(part.data(), part.size(), b));
  }
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return text;
}

std::string KernelCache::path(const std::string& key) const { return dir_ + "/" + key + ".bin"; }

std::optional<std::vector<unsigned char>> KernelCache::load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(path(key), std::ios::binary);
  if (!in) return std::nullopt;
  char magic[8];
  std::uint64_t size = 0, checksum = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&size), sizeof size);
  in.read(reinterpret_cast<char*>(&checksum), sizeof checksum);
  bool good = in && std::memcmp(magic, kMagic, sizeof magic) == 0 && size > 0 &&
              size < (std::uint64_t{1} << 32);
  std::vector<unsigned char> binary;
  if (good) {
    binary.resize(static_cast<std::size_t>(size));
    in.read(reinterpret_cast<char*>(binary.data()), static_cast<std::streamsize>(size));
    good = in.gcount() == static_cast<std::streamsize>(size) && in.peek() == EOF &&
           fnv1a(binary.data(), binary.size(), kBasis) == checksum;
  }
  if (!good) {
    std::error_code ignored;
    std::filesystem::remove(path(key), ignored);
    return std::nullopt;
  }
  return binary;
}

void KernelCache::store(const std::string& key, const std::vector<unsigned char>& binary) const {
  if (!enabled() || binary.empty()) return;
  static std::atomic<unsigned> counter{0};
  const std::string temporary = path(key) + ".tmp." + std::to_string(::getpid()) + "." +
                                std::to_string(counter.fetch_add(1));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    const std::uint64_t size = binary.size();
    const std::uint64_t checksum = fnv1a(binary.data(), binary.size(), kBasis);
    out.write(kMagic, sizeof kMagic);
    out.write(reinterpret_cast<const char*>(&size), sizeof size);
    out.write(reinterpret_cast<const char*>(&checksum), sizeof checksum);
    out.write(reinterpret_cast<const char*>(binary.data()),
              static_cast<std::streamsize>(binary.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return;
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path(key), error);
  if (error) std::filesystem::remove(temporary, error);
}

}  // namespace kiln::detail::device
