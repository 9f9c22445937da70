// nn::DistributedDataParallel against one process, DistributedSampler's shards, and checkpoints
// of a distributed run.
#include <gtest/gtest.h>
#include <kiln/data_loader.hpp>
#include <kiln/distributed.hpp>
#include <kiln/kiln.hpp>
#include <kiln/nn.hpp>
#include <unistd.h>

#include <cstring>
#include <set>

namespace {

namespace dist = kiln::distributed;
namespace nn = kiln::nn;
using kiln::Tensor;

// The main job's CNN (examples/fashion_mnist) without its dropout, whose masks are drawn per
// rank and so cannot match one process's.
nn::Sequential cnn() {
  return nn::Sequential(nn::Conv2d(1, 32, 5, 1, 2), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Conv2d(32, 64, 5, 1, 2), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                        nn::Linear(64 * 7 * 7, 1024), nn::ReLU(), nn::Linear(1024, 10));
}

constexpr std::int64_t global_batch = 64;

// Step s's global batch: the same on every rank.
std::pair<Tensor, Tensor> batch(int step) {
  const Tensor x = nn::uniform({global_batch, 1, 28, 28}, 0.0, 1.0, 100 + step);
  std::vector<std::int64_t> y(global_batch);
  for (std::int64_t i = 0; i < global_batch; ++i) y[static_cast<std::size_t>(i)] = (i * 7 + step) % 10;
  return {x, Tensor::from(y)};
}

// This rank's rows of step s's batch.
std::pair<Tensor, Tensor> shard(int step) {
  auto [x, y] = batch(step);
  const std::int64_t rows = global_batch / dist::world_size();
  const std::int64_t first = rows * dist::rank();
  return {kiln::slice(x, {first, 0, 0, 0}, {first + rows, 1, 28, 28}),
          kiln::slice(y, {first}, {first + rows})};
}

std::vector<std::vector<float>> values(const nn::Module& m) {
  std::vector<std::vector<float>> v;
  for (const nn::Parameter& p : m.parameters()) v.push_back(p.value().to_vector<float>());
  return v;
}

void train_ddp(nn::DistributedDataParallel& ddp, nn::Optimizer& opt, int first, int steps) {
  for (int s = first; s < first + steps; ++s) {
    auto [x, y] = shard(s);
    Tensor loss;
    {
      kiln::GradientContext context;
      loss = nn::cross_entropy(ddp(x), y);
    }
    opt.zero_grad();
    ddp.backward(loss);
    opt.step();
  }
}

// Every rank's parameters are the same, bit for bit.
void expect_identical_across_ranks(const nn::Module& m) {
  for (const nn::Parameter& p : m.parameters()) {
    const Tensor all = dist::all_gather(p.value());
    const std::vector<float> v = all.to_vector<float>();
    const auto n = static_cast<std::size_t>(p.numel());
    for (int r = 1; r < dist::world_size(); ++r)
      ASSERT_EQ(std::memcmp(v.data(), v.data() + r * n, n * sizeof(float)), 0)
          << "rank " << r << " differs from rank 0 in a parameter of shape "
          << kiln::shape_to_string(p.shape());
  }
}

TEST(DataParallel, ConstructionGivesEveryRankRankZerosParameters) {
  nn::manual_seed(1);
  nn::Sequential reference = cnn();
  nn::manual_seed(1 + static_cast<std::uint64_t>(dist::rank()) * 1000);  // each rank its own
  nn::Sequential model = cnn();
  nn::DistributedDataParallel ddp(model);
  EXPECT_EQ(values(model), values(reference));
  expect_identical_across_ranks(model);
}

TEST(DataParallel, RanksWithHalfTheBatchMatchOneProcessWithAllOfIt) {
  const int steps = 3;
  ASSERT_EQ(global_batch % dist::world_size(), 0);
  nn::manual_seed(1);
  nn::Sequential single = cnn();
  nn::SGD single_opt(single.parameters(), {.lr = 0.05, .momentum = 0.9});
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = batch(s);
    Tensor loss;
    {
      kiln::GradientContext context;
      loss = nn::cross_entropy(single(x), y);
    }
    single_opt.step(loss);
  }

  nn::manual_seed(1);
  nn::Sequential model = cnn();
  nn::DistributedDataParallel ddp(model, {.bucket_cap_mb = 1.0});
  nn::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  train_ddp(ddp, opt, 0, steps);
  EXPECT_GT(ddp.buckets(), 2u);
  expect_identical_across_ranks(model);
  const auto got = values(model);
  const auto expected = values(single);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t p = 0; p < got.size(); ++p) {
    double worst = 0;
    for (std::size_t i = 0; i < got[p].size(); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(got[p][i] - expected[p][i])));
    EXPECT_LT(worst, 2e-6) << "parameter " << p;
  }
}

TEST(DataParallel, OverlapAndBucketSizeChangeNoValue) {
  auto run = [](nn::DistributedDataParallelOptions options) {
    nn::manual_seed(3);
    nn::Sequential model = cnn();
    nn::DistributedDataParallel ddp(model, options);
    nn::SGD opt(model.parameters(), {.lr = 0.05});
    train_ddp(ddp, opt, 0, 2);
    return values(model);
  };
  const auto overlapped = run({.bucket_cap_mb = 0.5, .overlap = true});
  EXPECT_EQ(run({.bucket_cap_mb = 0.5, .overlap = false}), overlapped);
  EXPECT_EQ(run({.bucket_cap_mb = 100, .overlap = true}), overlapped);
}

TEST(DataParallel, GradientsAddToAccumulatedOnes) {
  nn::manual_seed(4);
  nn::Linear model(3, 2);
  nn::DistributedDataParallel ddp(model);
  const Tensor x = kiln::full({1, 3}, 1.0f + dist::rank());
  for (int k = 0; k < 2; ++k) {
    Tensor loss;
    {
      kiln::GradientContext context;
      loss = kiln::sum(ddp(x));
    }
    ddp.backward(loss);
  }
  // d sum(W x + b) / dW = x for each output row; the mean of x over the ranks, twice.
  const float mean_x = 1.0f + (dist::world_size() - 1) / 2.0f;
  for (float g : model.weight().grad().to_vector<float>()) EXPECT_FLOAT_EQ(g, 2 * mean_x);
  for (float g : model.bias().grad().to_vector<float>()) EXPECT_FLOAT_EQ(g, 2.0f);
}

TEST(DataParallel, ModulesThatDifferBetweenRanksAreAnError) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs two ranks";
  nn::Linear model(3, dist::rank() == 0 ? 2 : 4);
  try {
    nn::DistributedDataParallel ddp(model);
    FAIL() << "modules of other shapes were accepted";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), kiln::ErrorCode::incompatible_shapes);
    EXPECT_NE(std::string(e.what()).find("rank 1 has parameters f32[4,3] f32[4], rank 0 has "
                                         "parameters f32[2,3] f32[2]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(dist::all_reduce(kiln::ones({1})).item<float>(), dist::world_size());
}

TEST(DataParallel, ResumedFromACheckpointContinuesExactly) {
  // Where every rank finds rank 0's file: a name rank 0 makes, sent to all.
  const std::int64_t pid = dist::broadcast(Tensor::from(std::vector<std::int64_t>{getpid()}))
                               .to_vector<std::int64_t>()[0];
  const std::string path = ::testing::TempDir() + "kiln_ddp_" + std::to_string(pid) + ".safetensors";

  nn::manual_seed(5);
  nn::Sequential model = cnn();
  nn::DistributedDataParallel ddp(model);
  nn::Adam opt(model.parameters(), {.lr = 1e-3});
  train_ddp(ddp, opt, 0, 2);
  nn::save_checkpoint_on_rank0(model, opt, path);
  train_ddp(ddp, opt, 2, 2);
  const auto uninterrupted = values(model);

  nn::manual_seed(99);  // other initial values: everything must come from the file
  nn::Sequential resumed = cnn();
  nn::Adam resumed_opt(resumed.parameters(), {.lr = 1e-3});
  nn::load_checkpoint(resumed, resumed_opt, path);
  nn::DistributedDataParallel resumed_ddp(resumed);
  train_ddp(resumed_ddp, resumed_opt, 2, 2);
  EXPECT_EQ(values(resumed), uninterrupted);
  dist::barrier();  // every rank has read the file
  if (dist::rank() == 0) std::remove(path.c_str());
}

TEST(DistributedSampler, ShardsAreDisjointAndCoverTheEpoch) {
  const std::int64_t n = 103;
  for (bool drop_last : {false, true}) {
    const auto sampler = kiln::data::DistributedSampler::make(
        n, {.num_replicas = dist::world_size(), .rank = dist::rank(), .seed = 7,
            .drop_last = drop_last});
    kiln::data::DataLoader loader(kiln::data::TensorDataset{{kiln::arange(n)}},
                                  {.batch_size = 8, .sampler = sampler});
    for (std::int64_t epoch : {0, 1}) {
      loader.start_epoch(epoch);
      std::vector<std::int64_t> seen;
      std::vector<Tensor> b;
      while (loader.next(b))
        for (std::int64_t i : b[0].to_vector<std::int64_t>()) seen.push_back(i);
      ASSERT_EQ(static_cast<std::int64_t>(seen.size()), sampler->num_samples());
      const std::vector<std::int64_t> all =
          dist::all_gather(Tensor::from(seen)).to_vector<std::int64_t>();
      const std::set<std::int64_t> distinct(all.begin(), all.end());
      const std::int64_t covered = drop_last ? n - n % dist::world_size() : n;
      EXPECT_EQ(static_cast<std::int64_t>(distinct.size()), covered);
      // Without drop_last, only the padding repeats examples.
      EXPECT_EQ(static_cast<std::int64_t>(all.size()) - covered,
                drop_last ? 0 : (dist::world_size() - n % dist::world_size()) % dist::world_size());
    }
  }
}

}  // namespace
