// What of kiln::distributed runs in one process without MPI: data::DistributedSampler's shards, as
// PyTorch's DistributedSampler makes them (the ranks given by hand), and the errors without a
// process group.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include "kiln/data_loader.hpp"
#include "kiln/error.hpp"
#include "kiln/distributed.hpp"
#include "kiln/kiln.hpp"

namespace {

using kiln::data::DistributedSampler;

std::vector<std::int64_t> shard(std::int64_t n, int replicas, int rank, bool shuffle, bool drop_last,
                                std::int64_t epoch = 0) {
  return DistributedSampler(n, {.num_replicas = replicas, .rank = rank, .shuffle = shuffle,
                                .seed = 3, .drop_last = drop_last})
      .indices(epoch);
}

TEST(DistributedSamplerShards, InOrderTheyInterleaveAsPyTorchs) {
  // torch.utils.data.DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False):
  // [0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1] (padded with the first examples).
  EXPECT_EQ(shard(10, 3, 0, false, false), (std::vector<std::int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(shard(10, 3, 1, false, false), (std::vector<std::int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(shard(10, 3, 2, false, false), (std::vector<std::int64_t>{2, 5, 8, 1}));
  // drop_last=True: [0, 3, 6], [1, 4, 7], [2, 5, 8].
  EXPECT_EQ(shard(10, 3, 1, false, true), (std::vector<std::int64_t>{1, 4, 7}));
  // More ranks than examples: padded round after round.
  EXPECT_EQ(shard(2, 5, 4, false, false), (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(shard(0, 2, 1, false, false).empty());
}

TEST(DistributedSamplerShards, ShuffledShardsAreDisjointCoverTheEpochAndChangePerEpoch) {
  const std::int64_t n = 1001;
  for (int replicas : {1, 2, 3, 8}) {
    std::vector<std::int64_t> all;
    for (int r = 0; r < replicas; ++r) {
      const auto s = shard(n, replicas, r, true, false);
      EXPECT_EQ(static_cast<std::int64_t>(s.size()), (n + replicas - 1) / replicas);
      all.insert(all.end(), s.begin(), s.end());
    }
    EXPECT_EQ(std::set<std::int64_t>(all.begin(), all.end()).size(), static_cast<std::size_t>(n));
    EXPECT_EQ(static_cast<std::int64_t>(all.size()) - n, (replicas - n % replicas) % replicas);
  }
  EXPECT_NE(shard(n, 2, 0, true, false, 0), shard(n, 2, 0, true, false, 1));
  EXPECT_EQ(shard(n, 2, 0, true, false, 1), shard(n, 2, 0, true, false, 1));
}

TEST(DistributedSamplerShards, DataLoaderVisitsTheShard) {
  const auto sampler = DistributedSampler::make(10, {.num_replicas = 3, .rank = 1, .shuffle = false});
  kiln::data::DataLoader loader(kiln::data::TensorDataset{{kiln::Tensor::from(std::vector<std::int64_t>{
                                    10, 11, 12, 13, 14, 15, 16, 17, 18, 19})}},
                                {.batch_size = 3, .sampler = sampler});
  EXPECT_EQ(loader.num_batches(), 2);
  std::vector<kiln::Tensor> b;
  ASSERT_TRUE(loader.next(b));
  EXPECT_EQ(b[0].to_vector<std::int64_t>(), (std::vector<std::int64_t>{11, 14, 17}));
  ASSERT_TRUE(loader.next(b));
  EXPECT_EQ(b[0].to_vector<std::int64_t>(), (std::vector<std::int64_t>{10}));
  EXPECT_FALSE(loader.next(b));
}

TEST(DistributedSamplerShards, BadArgumentsAreErrors) {
  EXPECT_THROW(DistributedSampler(10, {.num_replicas = 0, .rank = 0}), kiln::Error);
  EXPECT_THROW(DistributedSampler(10, {.num_replicas = 2, .rank = 2}), kiln::Error);
  EXPECT_THROW(DistributedSampler(10, {.num_replicas = 2, .rank = -1}), kiln::Error);
  EXPECT_THROW(DistributedSampler(-1, {}), kiln::Error);
  const auto sampler = DistributedSampler::make(10, {});
  EXPECT_THROW(kiln::data::DataLoader(kiln::data::TensorDataset{{kiln::zeros({10})}},
                                      {.shuffle = true, .sampler = sampler}),
               kiln::Error);
  // A sampler for a larger data set than the loader's.
  EXPECT_THROW(kiln::data::DataLoader(kiln::data::TensorDataset{{kiln::zeros({5})}},
                                      {.sampler = DistributedSampler::make(10, {.shuffle = false})}),
               kiln::Error);
}

}  // namespace

namespace {

// Without a process group every collective says why; this process never starts MPI.
TEST(DistributedWithoutInit, CollectivesSayWhatIsMissing) {
  namespace dist = kiln::distributed;
  EXPECT_FALSE(dist::is_initialized());
  const std::string missing =
      dist::available() ? "not initialised (call distributed::init() first)" : "built without MPI";
  for (const auto& call : std::vector<std::function<void()>>{
           [] { dist::rank(); }, [] { dist::barrier(); },
           [] { dist::all_reduce(kiln::ones({2})); }}) {
    try {
      call();
      FAIL() << "a collective ran without a process group";
    } catch (const kiln::Error& e) {
      EXPECT_EQ(e.code(), kiln::ErrorCode::io_error);
      EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    }
  }
  kiln::nn::Linear model(2, 2);
  EXPECT_THROW(kiln::nn::DistributedDataParallel ddp(model), kiln::Error);
}

}  // namespace
