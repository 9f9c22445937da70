// A checkpoint holds the random generator's state, and a data loader's position goes with it, so
// that a resumed run repeats the uninterrupted run's losses, dropout and shuffling included,
// from the middle of an epoch.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kiln/data_loader.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

namespace nn = kiln::nn;
namespace data = kiln::data;
using kiln::Tensor;
using Named = std::vector<std::pair<std::string, Tensor>>;

// One training step on the loader's next batch (the next epoch's first when one ends).
double step(nn::Module& model, nn::Optimizer& opt, data::DataLoader& loader) {
  std::vector<Tensor> b;
  if (!loader.next(b)) {
    loader.start_epoch(loader.epoch() + 1);
    EXPECT_TRUE(loader.next(b));
  }
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = nn::mse_loss(model(b[0]), b[1]);
  }
  const double value = loss.item<double>();
  opt.step(loss);
  return value;
}

TEST(NnResume, AResumedRunRepeatsTheUninterruptedOneMidEpoch) {
  kiln_test::TempFile file("resume.safetensors");
  const Tensor x = kiln::uniform({40, 4}, 11), y = kiln::uniform({40, 1}, 12);
  const data::DataLoaderOptions batches{.batch_size = 8, .shuffle = true, .seed = 3};

  // Uninterrupted: 12 steps of 5 batches an epoch; the checkpoint after the 7th is in epoch 1.
  kiln::manual_seed(5);
  nn::Sequential first(nn::Linear(4, 8), nn::ReLU(), nn::Dropout(0.3), nn::Linear(8, 1));
  nn::Adam first_opt(first.parameters(), {.lr = 0.01});
  data::DataLoader first_loader(data::TensorDataset{{x, y}}, batches);
  std::vector<double> want;
  for (int i = 0; i < 12; ++i) {
    want.push_back(step(first, first_opt, first_loader));
    if (i == 6) nn::save_checkpoint(first, first_opt, file.path, first_loader.state_dict());
  }

  // Resumed as another process would: other weights, another seed, a fresh loader.
  kiln::manual_seed(99);
  nn::Sequential second(nn::Linear(4, 8), nn::ReLU(), nn::Dropout(0.3), nn::Linear(8, 1));
  nn::Adam second_opt(second.parameters(), {.lr = 0.01});
  data::DataLoader second_loader(data::TensorDataset{{x, y}}, batches);
  Named extra;
  nn::load_checkpoint(second, second_opt, file.path, &extra);
  second_loader.load_state_dict(extra);
  EXPECT_EQ(second_loader.epoch(), 1);
  EXPECT_EQ(second_loader.position(), 2);
  for (int i = 7; i < 12; ++i) EXPECT_EQ(step(second, second_opt, second_loader), want[i]) << i;
}

TEST(NnResume, RandomStateRepeatsDraws) {
  kiln::manual_seed(17);
  (void)kiln::next_seed();
  const std::uint64_t state = kiln::random_state();
  const std::vector<float> a = kiln::uniform({5}).to_vector<float>();
  kiln::manual_seed(state);
  EXPECT_EQ(kiln::uniform({5}).to_vector<float>(), a);
}

TEST(NnResume, ALoaderStartsAnEpochAtAGivenBatch) {
  const Tensor x = kiln::arange(10).reshape({10, 1});
  data::DataLoader whole(data::TensorDataset{{x}}, {.batch_size = 3, .shuffle = true, .seed = 1});
  whole.start_epoch(2);
  std::vector<std::vector<std::int64_t>> order;
  for (std::vector<Tensor> b; whole.next(b);) order.push_back(b[0].to_vector<std::int64_t>());
  ASSERT_EQ(order.size(), 4u);
  for (int prefetch : {0, 2}) {
    data::DataLoader part(data::TensorDataset{{x}},
                          {.batch_size = 3, .shuffle = true, .seed = 1, .prefetch = prefetch});
    part.start_epoch(2, 1);
    EXPECT_EQ(part.position(), 1);
    std::vector<Tensor> b;
    for (std::size_t k = 1; k < order.size(); ++k) {
      ASSERT_TRUE(part.next(b));
      EXPECT_EQ(b[0].to_vector<std::int64_t>(), order[k]);
    }
    EXPECT_FALSE(part.next(b));
    EXPECT_EQ(kiln_test::code_of([&] { part.start_epoch(0, 5); }), kiln::ErrorCode::invalid_select);
    EXPECT_FALSE(part.next(b));  // a refused start leaves no half-started epoch
    EXPECT_EQ(kiln_test::code_of([&] { part.load_state_dict({}); }),
              kiln::ErrorCode::invalid_select);
  }
}

}  // namespace
