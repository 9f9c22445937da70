// Fuzzes kiln::data::parse_npz (the ZIP reader and the npy reader inside it): a bad archive must
// throw kiln::Error, and an accepted one must give arrays that can be read.
//
// Input: the archive (fuzz/corpus/npz/ holds archives numpy.savez, numpy.savez_compressed and
// kiln::data::save_npz wrote).
#include <cstdint>
#include <cstdlib>
#include <span>

#include "fuzz_common.hpp"
#include "kiln/data.hpp"
#include "kiln/error.hpp"
#include "kiln/kiln.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln_fuzz::setup_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::pair<std::string, kiln::Tensor>> arrays;
  try {
    arrays = kiln::data::parse_npz(std::as_bytes(std::span(data, size)));
  } catch (const kiln::Error&) {
    return 0;
  }
  // Entries do not overlap and deflate expands at most 1032:1.
  std::size_t total = 0;
  for (const auto& [key, t] : arrays) total += static_cast<std::size_t>(t.numel());
  if (total > 1032 * size + 64) std::abort();
  volatile double sink = 0;
  for (const auto& [key, t] : arrays)
    for (double v : t.to_vector<double>()) sink = sink + v;
  return 0;
}
