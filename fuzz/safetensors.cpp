// Fuzzes the safetensors reader: kiln::parse_safetensors on the bytes, and nn::load_safetensors
// of the same bytes (as a file) into a small fixed model. Every failure must be a kiln::Error; an
// accepted file must give tensors whose bytes fit in the input, and a failed load must leave the
// model's parameters as they were.
//
// Input: byte 0's low bit chooses whether the model is loaded strictly; the rest is the file
// (fuzz/corpus/safetensors/ holds save_safetensors output of this model and others).
#include "kiln/safetensors.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_common.hpp"
#include "kiln/error.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "small_model.hpp"

namespace nn = kiln::nn;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln_fuzz::setup_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool strict = data[0] & 1;
  const auto bytes = std::as_bytes(std::span(data + 1, size - 1));
  try {
    const kiln::Safetensors file = kiln::parse_safetensors(bytes);
    std::size_t total = 0;
    for (const auto& [name, t] : file.tensors) {
      total += static_cast<std::size_t>(t.numel()) * kiln::size_of(t.dtype());
      volatile double sink = 0;
      for (double v : t.to_vector<double>()) sink = sink + v;
    }
    if (total > bytes.size()) std::abort();
  } catch (const kiln::Error&) {
  }
  const auto& tmp = kiln_fuzz::scratch();
  tmp.write(data + 1, size - 1);
  const auto before = kiln_fuzz::small_model_bits();
  try {
    nn::load_safetensors(kiln_fuzz::small_model(), tmp.path(), {.strict = strict});
  } catch (const kiln::Error&) {
    if (kiln_fuzz::small_model_bits() != before) std::abort();  // a failed load changed the model
  }
  return 0;
}
