// libtorch's side of kiln_train_bench: the same CNN written with the torch::nn C++ API and
// trained the usual eager way (zero_grad, forward, backward, Adam step) on the same batches.
#include <kiln/data.hpp>
#include <kiln/kiln.hpp>
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

#include <filesystem>
#include <string>

#include "child_process.hpp"
#include "torch_threads.hpp"
#include "train_bench.hpp"

namespace bench {

namespace {

namespace tnn = torch::nn;

// conv 5x5x32 same + ReLU, max-pool 2, conv 5x5x64 same + ReLU, max-pool 2, flatten,
// dense 1024 + ReLU, dropout 0.4, dense 10; padding 2 is "same" for a 5x5 kernel.
tnn::Sequential make_model() {
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 32, 5).padding(2)), tnn::ReLU(),
                         tnn::MaxPool2d(2), tnn::Conv2d(tnn::Conv2dOptions(32, 64, 5).padding(2)),
                         tnn::ReLU(), tnn::MaxPool2d(2), tnn::Flatten(),
                         tnn::Linear(64 * 7 * 7, 1024), tnn::ReLU(), tnn::Dropout(0.4),
                         tnn::Linear(1024, 10));
}

// The file of `base` in `dir`, plain or gzipped (the names load_mnist_split looks for).
std::string idx_file(const std::string& dir, const std::string& base) {
  for (const std::string& path : {dir + "/" + base, dir + "/" + base + ".gz"})
    if (std::filesystem::exists(path)) return path;
  throw kiln::Error(kiln::ErrorCode::io_error, "kiln_train_bench: missing file " + dir + "/" +
                                                   base + " (or .gz); on Debian install the "
                                                   "dataset-fashion-mnist package, or pass --data");
}

// The training images as f32 [N, 1, H, W] in [0, 1], the values kiln::data::read_idx_images
// gives. They are read with kiln::data::read_idx rather than as a kiln tensor: kiln's allocator
// keeps released buffers for reuse, so a kiln copy would stay resident in this process and count
// in libtorch's memory.
torch::Tensor read_images(const std::string& path) {
  const kiln::data::IdxArray a = kiln::data::read_idx(path);
  if (a.type != 0x08 || a.dims.size() != 3)
    throw kiln::Error(kiln::ErrorCode::io_error,
                      "kiln_train_bench: " + path + " does not hold u8 images [N, H, W]");
  torch::Tensor images = torch::empty({a.dims[0], 1, a.dims[1], a.dims[2]}, torch::kFloat);
  float* out = images.data_ptr<float>();
  for (std::size_t i = 0; i < a.data.size(); ++i) out[i] = a.data[i] * (1.0f / 255.0f);
  return images;
}

torch::Tensor to_torch(const kiln::Tensor& labels) {
  torch::Tensor out = torch::empty(labels.shape(), torch::kLong);
  labels.copy_to(out.data_ptr<std::int64_t>(), kiln::DType::i64);
  return out;
}

}  // namespace

void train_torch(const TrainSpec& spec, const TorchConfig& config, SideResult& result) {
  // kiln only reads the labels here, but it shares the OpenMP runtime with libtorch: both set
  // the same thread count.
  kiln::set_num_threads(config.torch_threads);
  apply(config);
  torch::manual_seed(spec.seed);

  const kiln::Tensor kiln_labels =
      kiln::data::read_idx_labels(idx_file(spec.data_dir, "train-labels-idx1-ubyte"));
  const BatchPlan plan = plan_batches(kiln_labels, spec);
  const torch::Tensor labels = to_torch(kiln_labels);
  const torch::Tensor images = read_images(idx_file(spec.data_dir, "train-images-idx3-ubyte"));
  if (images.size(0) != labels.size(0))
    throw kiln::Error(kiln::ErrorCode::incompatible_shapes,
                      "kiln_train_bench: the training set has " + std::to_string(images.size(0)) +
                          " images but " + std::to_string(labels.size(0)) + " labels");

  result.start_rss_mb = current_rss_mb();
  result.peak_reset = reset_peak_rss();
  tnn::Sequential model = make_model();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  model->train();

  run_batches(plan, [&](const std::vector<std::int64_t>& examples) {
    // from_blob copies nothing; index_select only reads the indices.
    const torch::Tensor indices =
        torch::from_blob(const_cast<std::int64_t*>(examples.data()),
                         {static_cast<std::int64_t>(examples.size())}, torch::kLong);
    const torch::Tensor x = images.index_select(0, indices);
    const torch::Tensor y = labels.index_select(0, indices);
    optimizer.zero_grad();
    torch::Tensor loss;
    if (spec.dtype == kiln::DType::f32) {
      loss = tnn::functional::cross_entropy(model->forward(x), y);
    } else {
      // CPU autocast (libtorch 1.13 has it for bf16 only): convolutions and linear layers in
      // bf16, the loss in f32.
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      loss = tnn::functional::cross_entropy(model->forward(x), y);
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
    }
    loss.backward();
    optimizer.step();
    return loss.item<double>();
  }, result);
}

std::string torch_build_info() {
  return std::string("libtorch ") + TORCH_VERSION +
         " (oneDNN convolutions: " + (at::hasMKLDNN() ? "yes" : "no") + ")";
}

}  // namespace bench
