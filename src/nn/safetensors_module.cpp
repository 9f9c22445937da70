// Modules to and from safetensors files (kiln/nn.hpp, kiln/safetensors.hpp).
#include <unordered_map>
#include <unordered_set>

#include "kiln/nn.hpp"
#include "kiln/safetensors.hpp"
#include "nn/module_state.hpp"

namespace kiln::nn {

using model_files::describe;
using model_files::state_of;

void save_safetensors(const Module& module, const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, p] : state_of(module)) tensors.emplace_back(name, p.value());
  kiln::save_safetensors(path, tensors, {{"format", "pt"}});
}

void load_safetensors(Module& module, const std::string& path,
                      const SafetensorsLoadOptions& options) {
  const Safetensors file = kiln::load_safetensors(path);
  std::unordered_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : file.tensors) by_name.emplace(name, &t);
  const auto state = state_of(module);
  auto mismatch = [&](ErrorCode code, const std::string& what) {
    throw Error(code, "nn::load_safetensors: " + path + ": " + what);
  };
  std::vector<const Tensor*> values;
  std::unordered_set<std::string> used;
  for (const auto& [name, p] : state) {
    const std::string in_file = options.file_name ? options.file_name(name) : name;
    const auto found = by_name.find(in_file);
    if (found == by_name.end())
      mismatch(ErrorCode::incompatible_shapes,
               "the model's tensor '" + name + "'" +
                   (in_file != name ? " (in the file '" + in_file + "')" : std::string()) +
                   " is not in the file");
    const Tensor& t = *found->second;
    const Tensor& v = p.value();
    if (t.shape() != v.shape())
      mismatch(ErrorCode::incompatible_shapes,
               "tensor '" + in_file + "' is " + describe(t.dtype(), t.shape()) +
                   " in the file, the model's '" + name + "' is " +
                   describe(v.dtype(), v.shape()));
    if (t.dtype() != v.dtype())
      mismatch(ErrorCode::wrong_type,
               "tensor '" + in_file + "' is " + describe(t.dtype(), t.shape()) +
                   " in the file, the model's '" + name + "' is " +
                   describe(v.dtype(), v.shape()));
    if (!used.insert(in_file).second)
      mismatch(ErrorCode::incompatible_shapes,
               "two of the model's tensors map to the file's '" + in_file + "'");
    values.push_back(&t);
  }
  if (options.strict)
    for (const auto& [name, t] : file.tensors)
      if (!used.count(name))
        mismatch(ErrorCode::incompatible_shapes,
                 "the file's tensor '" + name +
                     "' is not in the model (load with strict = false to ignore it)");
  for (std::size_t i = 0; i < state.size(); ++i) state[i].second.set(*values[i]);
}

}  // namespace kiln::nn
