// Replays fuzz inputs without libFuzzer: every file named on the command line, and every file in
// every directory named there, is passed once to the harness's LLVMFuzzerTestOneInput. Built with
// the normal compiler so the regression inputs and seed corpus run in the ordinary test suites.
#include <sys/resource.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
#define KILN_REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_REPLAY_ASAN 1
#endif
#endif

namespace {

// Without AddressSanitizer (which caps single allocations itself, see asan_options.cpp, and needs
// its huge address-space reservation) an input that makes kiln allocate many gigabytes would
// take the machine's memory; capped, the allocation fails and kiln reports OUT_OF_MEMORY.
void cap_address_space() {
#ifndef KILN_REPLAY_ASAN
  const rlim_t limit = rlim_t{8} << 30;
  rlimit current{};
  if (getrlimit(RLIMIT_AS, &current) == 0 &&
      (current.rlim_cur == RLIM_INFINITY || current.rlim_cur > limit)) {
    current.rlim_cur = limit;
    setrlimit(RLIMIT_AS, &current);
  }
#endif
}

}  // namespace

int main(int argc, char** argv) {
  cap_address_space();
  LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.is_regular_file() && entry.path().filename().string()[0] != '.')
          files.push_back(entry.path());
    } else if (fs::is_regular_file(arg)) {
      files.push_back(arg);
    } else if (!fs::exists(arg)) {
      // A harness without regressions yet has no folder for them.
      std::printf("replay: %s does not exist, skipped\n", argv[i]);
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::printf("replay: %s\n", path.c_str());
    std::fflush(stdout);
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    // A separate copy of exactly the file's size, so reading past the input is caught.
    std::vector<std::uint8_t> input(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::printf("replay: %zu inputs, no crash\n", files.size());
  return 0;
}
