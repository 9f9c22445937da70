// Fuzzes kiln::data::parse_npy: a bad file must throw kiln::Error, and an accepted one must give
// a tensor whose values fit in the input and can be read.
//
// Input: the file (fuzz/corpus/npy/ holds files numpy.save and kiln::data::save_npy wrote).
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
  kiln::Tensor t;
  try {
    t = kiln::data::parse_npy(std::as_bytes(std::span(data, size)));
  } catch (const kiln::Error&) {
    return 0;
  }
  // Stored values are at least one byte each (b1, i1, u1), and kiln's are at most eight.
  if (t.numel() < 0 || static_cast<std::size_t>(t.numel()) > size) std::abort();
  volatile double sink = 0;
  for (double v : t.to_vector<double>()) sink = sink + v;
  return 0;
}
