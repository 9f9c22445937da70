// kiln's side of kiln_train_bench: the "2 Conv+pooling" CNN built from kiln::nn modules and
// trained the way examples/fashion_mnist trains it (one optimizer.step(loss) per batch, which
// evaluates forward, backward and the Adam update in one pass).
#include <kiln/kiln.hpp>
#include <kiln/nn.hpp>

#include <optional>

#include "child_process.hpp"
#include "train_bench.hpp"

namespace bench {

namespace {

namespace nn = kiln::nn;

// The model of examples/fashion_mnist (its full size): conv 5x5x32 same + ReLU, max-pool 2,
// conv 5x5x64 same + ReLU, max-pool 2, flatten, dense 1024 + ReLU, dropout 0.4, dense 10.
nn::Sequential make_model() {
  return nn::Sequential(nn::Conv2d(1, 32, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Conv2d(32, 64, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Flatten(), nn::Linear(64 * 7 * 7, 1024), nn::ReLU(), nn::Dropout(0.4),
                        nn::Linear(1024, 10));
}

}  // namespace

void train_kiln(const TrainSpec& spec, int threads, SideResult& result) {
  kiln::set_num_threads(threads);
  nn::manual_seed(spec.seed);
  const kiln::data::Dataset train = kiln::data::load_mnist_split(spec.data_dir, "train");
  const BatchPlan plan = plan_batches(train.labels, spec);

  result.start_rss_mb = current_rss_mb();
  result.peak_reset = reset_peak_rss();
  nn::Sequential model = make_model();
  nn::Adam optimizer(model.parameters(), {.lr = 1e-3});
  if (spec.dtype == kiln::DType::f16) optimizer.set_loss_scaling({});
  model.train();

  // The batch gathers are BatchIterator::next's: lazy index_selects from the data set.
  run_batches(plan, [&](const std::vector<std::int64_t>& examples) {
    const kiln::Tensor indices =
        kiln::Tensor::from(examples, {static_cast<std::int64_t>(examples.size())});
    const kiln::Tensor images = kiln::index_select(train.images, 0, indices);
    const kiln::Tensor labels = kiln::index_select(train.labels, 0, indices);
    kiln::Tensor loss;
    {
      kiln::GradientContext gradients;
      std::optional<nn::Autocast> mixed;
      if (spec.dtype != kiln::DType::f32) mixed.emplace(spec.dtype);
      loss = nn::cross_entropy(model(images), labels);
    }
    optimizer.step(loss);
    return loss.item<double>();
  }, result);
}

}  // namespace bench
