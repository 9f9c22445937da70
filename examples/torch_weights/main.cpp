// A model whose weights come from PyTorch: tests/data/make_torch_fixture.py saved a small
// PyTorch CNN's state_dict as safetensors (torch_model.safetensors) together with an input and
// PyTorch's output for it (torch_model_io.safetensors). This program builds the same
// architecture with kiln::nn, loads the weights by PyTorch's names, runs the input and compares.
// Exits with 1 when the outputs differ by more than float rounding, so it runs as a test.
//
//   torch_weights [DIR]   (DIR holds the two files; default: the source tree's tests/data)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <kiln/kiln.hpp>
#include <kiln/nn.hpp>
#include <string>

namespace nn = kiln::nn;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : KILN_EXAMPLE_DATA_DIR;
  // PyTorch: Sequential(Conv2d(1, 3, 3), BatchNorm2d(3), ReLU(), Flatten(), Linear(48, 5)).
  // kiln's Sequential names its children "0", "1", ... as PyTorch's does, so the names match.
  nn::Sequential model(nn::Conv2d(1, 3, 3), nn::BatchNorm2d(3), nn::ReLU(), nn::Flatten(),
                       nn::Linear(3 * 4 * 4, 5));
  try {
    // PyTorch's BatchNorm also saves num_batches_tracked, which kiln does not keep: not strict.
    nn::load_safetensors(model, dir + "/torch_model.safetensors", {.strict = false});
  } catch (const kiln::Error& e) {
    std::printf("could not load the weights: %s\n", e.what());
    return 1;
  }
  model.eval();  // BatchNorm uses the running statistics PyTorch saved

  const kiln::Safetensors io = kiln::load_safetensors(dir + "/torch_model_io.safetensors");
  const kiln::Tensor output = model(io.at("input"));
  const std::vector<float> got = output.to_vector<float>();
  const std::vector<float> want = io.at("output").to_vector<float>();
  float worst = 0;
  std::printf("%-10s %12s %12s\n", "output", "kiln", "PyTorch");
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]));
    std::printf("[%zu,%zu] %12.6f %12.6f\n", i / 5, i % 5, got[i], want[i]);
  }
  const bool same = got.size() == want.size() && worst <= 1e-5f;
  std::printf("largest difference %.2e: %s\n", worst,
              same ? "kiln computes PyTorch's outputs" : "THE OUTPUTS DIFFER");
  return same ? 0 : 1;
}
