// Helpers shared by the test files.
#pragma once

namespace kiln_test {

// Sanitizer and debug builds run several times slower: time limits are relaxed there.
inline bool slow_build() {
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
