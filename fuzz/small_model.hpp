// The small model the model-file harnesses (nn_load, safetensors) load into, and its parameters'
// bits, to check that a failed load changed nothing.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"

namespace kiln_fuzz {

inline kiln::nn::Sequential& small_model() {
  // The same model and seed as the corpus generator (fuzz/make_corpus.cpp).
  static kiln::nn::Sequential m = [] {
    kiln::nn::manual_seed(1);
    return kiln::nn::Sequential(kiln::nn::Linear(3, 4), kiln::nn::ReLU(),
                                kiln::nn::Linear(4, 2, false));
  }();
  return m;
}

// The parameters' bits (NaN compares unequal to itself, and a load may store NaNs).
inline std::vector<std::vector<std::uint32_t>> small_model_bits() {
  std::vector<std::vector<std::uint32_t>> out;
  for (const auto& [name, p] : small_model().named_parameters()) {
    const std::vector<float> v = p.value().to_vector<float>();
    std::vector<std::uint32_t> bits(v.size());
    if (!v.empty()) std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
    out.push_back(std::move(bits));
  }
  return out;
}

}  // namespace kiln_fuzz
