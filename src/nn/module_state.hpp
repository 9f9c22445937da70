// What the model files hold of a module (nn::save, nn::save_safetensors): its parameters then
// its buffers, by name; and how their messages describe a tensor.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/nn.hpp"

namespace kiln::nn::model_files {

inline std::vector<std::pair<std::string, Parameter>> state_of(const Module& module) {
  std::vector<std::pair<std::string, Parameter>> state = module.named_parameters();
  for (auto& b : module.named_buffers()) state.push_back(std::move(b));
  return state;
}

inline std::string describe(DType dtype, const Shape& shape) {
  return std::string(dtype_name(dtype)) + " " + shape_to_string(shape);
}

}  // namespace kiln::nn::model_files
