// Modules (and training checkpoints) to and from safetensors files (kiln/nn.hpp,
// kiln/safetensors.hpp).
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/nn.hpp"
#include "kiln/safetensors.hpp"
#include "nn/module_state.hpp"

namespace kiln::nn {

using model_files::describe;
using model_files::state_of;

namespace {

// The file's tensor for each of the module's parameters and buffers, in state_of() order, all
// checked before the caller changes anything. `in_file` maps a module name to the file's; with
// `strict`, every file tensor that `ours` accepts must be used.
std::vector<Tensor> matched_state(const Module& module,
                                  const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::function<std::string(const std::string&)>& in_file,
                                  const std::function<bool(const std::string&)>& ours, bool strict,
                                  const std::string& what) {
  std::unordered_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : tensors) by_name.emplace(name, &t);
  auto mismatch = [&](ErrorCode code, const std::string& why) {
    throw Error(code, what + ": " + why);
  };
  std::vector<Tensor> values;
  std::unordered_set<std::string> used;
  for (const auto& [name, p] : state_of(module)) {
    const std::string file_name = in_file ? in_file(name) : name;
    const auto found = by_name.find(file_name);
    if (found == by_name.end())
      mismatch(ErrorCode::incompatible_shapes,
               "the model's tensor '" + name + "'" +
                   (file_name != name ? " (in the file '" + file_name + "')" : std::string()) +
                   " is not in the file");
    const Tensor& t = *found->second;
    const Tensor& v = p.value();
    const std::string difference = "tensor '" + file_name + "' is " +
                                   describe(t.dtype(), t.shape()) + " in the file, the model's '" +
                                   name + "' is " + describe(v.dtype(), v.shape());
    if (t.shape() != v.shape()) mismatch(ErrorCode::incompatible_shapes, difference);
    // 16-bit floats (a checkpoint saved in bf16 or f16) widen exactly into f32 and f64 tensors.
    const bool widens =
        is_narrow_float(t.dtype()) && is_float(v.dtype()) && !is_narrow_float(v.dtype());
    if (t.dtype() != v.dtype() && !widens) mismatch(ErrorCode::wrong_type, difference);
    if (!used.insert(file_name).second)
      mismatch(ErrorCode::incompatible_shapes,
               "two of the model's tensors map to the file's '" + file_name + "'");
    values.push_back(widens ? convert(t, v.dtype()) : t);
  }
  if (strict)
    for (const auto& [name, t] : tensors)
      if (ours(name) && !used.count(name))
        mismatch(ErrorCode::incompatible_shapes,
                 "the file's tensor '" + name +
                     "' is not in the model (load with strict = false to ignore it)");
  return values;
}

void assign_state(Module& module, std::vector<Tensor> values) {
  const auto state = state_of(module);
  for (std::size_t i = 0; i < state.size(); ++i) state[i].second.copy_(values[i]);
}

constexpr std::string_view kModel = "model.", kOptimizer = "optimizer.", kExtra = "extra.";
// The global random generator's state (kiln::random_state), as one i64 holding its 64 bits.
constexpr std::string_view kRandomState = "random.state";

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

void save_safetensors(const Module& module, const std::string& path, StoredFloats floats) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, p] : state_of(module)) tensors.emplace_back(name, p.value());
  kiln::save_safetensors(path, tensors, {{"format", "pt"}}, floats);
}

void load_safetensors(Module& module, const std::string& path,
                      const SafetensorsLoadOptions& options) {
  const Safetensors file = kiln::load_safetensors(path);
  assign_state(module,
               matched_state(
                   module, file.tensors, options.file_name, [](const std::string&) { return true; },
                   options.strict, "nn::load_safetensors: " + path));
}

void save_checkpoint(const Module& module, const Optimizer& optimizer, const std::string& path,
                     const std::vector<std::pair<std::string, Tensor>>& extra) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, p] : state_of(module))
    tensors.emplace_back(std::string(kModel) + name, p.value());
  for (auto& [name, t] : optimizer.state_dict())
    tensors.emplace_back(std::string(kOptimizer) + name, std::move(t));
  for (const auto& [name, t] : extra) tensors.emplace_back(std::string(kExtra) + name, t);
  const auto state = static_cast<std::int64_t>(random_state());  // two's complement: every bit
  tensors.emplace_back(std::string(kRandomState), Tensor::from(std::vector<std::int64_t>{state}));
  kiln::save_safetensors(path, tensors, {{"format", "kiln checkpoint"}});
}

void load_checkpoint(Module& module, Optimizer& optimizer, const std::string& path,
                     std::vector<std::pair<std::string, Tensor>>* extra) {
  const Safetensors file = kiln::load_safetensors(path);
  const std::string what = "nn::load_checkpoint: " + path;
  std::vector<std::pair<std::string, Tensor>> optimizer_state, extra_state;
  std::optional<std::uint64_t> random;  // absent from checkpoints of earlier kiln
  for (const auto& [name, t] : file.tensors) {
    if (name == kRandomState) {
      if (t.dtype() != DType::i64 || t.numel() != 1)
        throw Error(ErrorCode::wrong_type, what + ": '" + name + "' must be one i64, got " +
                                               dtype_name(t.dtype()) + " " +
                                               shape_to_string(t.shape()));
      random = static_cast<std::uint64_t>(t.item<std::int64_t>());
    } else if (starts_with(name, kOptimizer))
      optimizer_state.emplace_back(name.substr(kOptimizer.size()), t);
    else if (starts_with(name, kExtra))
      extra_state.emplace_back(name.substr(kExtra.size()), t);
    else if (!starts_with(name, kModel))
      throw Error(
          ErrorCode::incompatible_shapes,
          what + ": '" + name + "' is not a model, optimizer or extra entry (not a checkpoint?)");
  }
  std::vector<Tensor> values = matched_state(
      module, file.tensors, [](const std::string& n) { return std::string(kModel) + n; },
      [](const std::string& n) { return starts_with(n, kModel); }, true, what);
  try {
    optimizer.load_state_dict(optimizer_state);  // checks all before it changes anything
  } catch (const Error& e) {
    throw Error(e.code(), what + ": " + e.what());
  }
  assign_state(module, std::move(values));
  if (random) manual_seed(*random);
  if (extra) *extra = std::move(extra_state);
}

}  // namespace kiln::nn
