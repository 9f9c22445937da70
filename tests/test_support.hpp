// Helpers shared by the test files.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/error.hpp"
#include "kiln/executor.hpp"
#include "kiln/types.hpp"

namespace kiln_test {

// Restores, when it goes, the default executor it found (for tests that switch executors).
struct ExecutorGuard {
  std::shared_ptr<kiln::Executor> saved = kiln::current_executor();
  ~ExecutorGuard() { kiln::set_executor(saved); }
};

// Whether the environment variable `name` is set to `value` (unset counts as "").
inline bool environment_is(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return std::string_view(v != nullptr ? v : "") == value;
}

inline std::int64_t numel_of(const kiln::Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// The code of the kiln::Error that f() throws, or none.
template <class F> kiln::ErrorCode code_of(F f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.code();
  }
  return kiln::ErrorCode::none;
}

// The kiln::Error that f() throws, or one with code none when it throws nothing.
template <class F> kiln::Error error_of(F f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e;
  }
  return kiln::Error(kiln::ErrorCode::none, "no error");
}

// A path in the temporary directory, distinct per process and name; the file is removed when
// the object goes.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              ("kiln_test_" + std::to_string(::getpid()) + "_" + name))
                 .string()) {}
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

// Sanitizer and debug builds run several times slower, and a device executor compiles each new
// kernel on first use (a tenth of a second each on PoCL): time limits are relaxed there.
inline bool slow_build() {
  if (kiln::current_executor()->name() == "opencl") return true;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
  return true;
#endif
#endif
#ifndef NDEBUG
  return true;
#else
  return false;
#endif
}

}  // namespace kiln_test
