// Training checkpoints: an optimiser's state_dict round-trips, and training N steps, saving,
// loading into a fresh model and optimiser and training M more gives the same bits as N + M
// steps straight, for every optimiser. Mismatched checkpoints change nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln_test::error_of;
using kiln_test::TempFile;

namespace nn = kiln::nn;
using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;

nn::Sequential model(std::uint64_t seed) {
  nn::manual_seed(seed);
  return nn::Sequential(nn::Linear(6, 8), nn::BatchNorm1d(8), nn::Tanh(), nn::Linear(8, 3));
}

using MakeOptimizer = std::function<std::unique_ptr<nn::Optimizer>(std::vector<nn::Parameter>)>;

// One step on batch `k` (the same inputs whatever the process did before).
void train_step(nn::Sequential& m, nn::Optimizer& opt, int k) {
  const Tensor x = kiln::uniform({5, 6}, 100 + static_cast<std::uint64_t>(k)) * 2.f - 1.f;
  const Tensor labels = Tensor::from(std::vector<std::int64_t>{0, 1, 2, 1, (k % 3)}, {5});
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = nn::cross_entropy(m(x), labels);
  }
  opt.step(loss);
}

// The bits of every parameter and buffer.
std::vector<std::vector<std::uint32_t>> bits_of(const nn::Module& m) {
  std::vector<std::vector<std::uint32_t>> out;
  auto add = [&](const nn::Parameter& p) {
    const std::vector<float> v = p.value().to_vector<float>();
    std::vector<std::uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    out.push_back(std::move(b));
  };
  for (const auto& [name, p] : m.named_parameters()) add(p);
  for (const auto& [name, p] : m.named_buffers()) add(p);
  return out;
}

void expect_exact_resume(const MakeOptimizer& make) {
  constexpr int N = 3, M = 4;
  nn::Sequential straight = model(11);
  auto straight_opt = make(straight.parameters());
  for (int k = 0; k < N + M; ++k) train_step(straight, *straight_opt, k);

  nn::Sequential first = model(11);
  auto first_opt = make(first.parameters());
  for (int k = 0; k < N; ++k) train_step(first, *first_opt, k);
  TempFile f("resume.safetensors");
  nn::save_checkpoint(first, *first_opt, f.path);

  nn::Sequential resumed = model(12);  // other initial values, to be replaced
  auto resumed_opt = make(resumed.parameters());
  resumed_opt->set_lr(123.0);  // likewise
  nn::load_checkpoint(resumed, *resumed_opt, f.path);
  EXPECT_EQ(resumed_opt->steps(), N);
  for (int k = N; k < N + M; ++k) train_step(resumed, *resumed_opt, k);
  EXPECT_EQ(bits_of(resumed), bits_of(straight));
}

TEST(NnCheckpoint, ResumingIsExactForEveryOptimiser) {
  const std::vector<std::pair<std::string, MakeOptimizer>> optimisers = {
      {"SGD momentum nesterov",
       [](auto p) {
         return std::make_unique<nn::SGD>(
             p, nn::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true});
       }},
      {"Adam", [](auto p) { return std::make_unique<nn::Adam>(p, nn::AdamOptions{.lr = 1e-2}); }},
      {"AdamW",
       [](auto p) { return std::make_unique<nn::AdamW>(p, nn::AdamWOptions{.lr = 1e-2}); }},
      {"RMSprop centered momentum",
       [](auto p) {
         return std::make_unique<nn::RMSprop>(
             p, nn::RMSpropOptions{.lr = 1e-2, .momentum = 0.5, .centered = true});
       }},
      {"Adagrad", [](auto p) {
         return std::make_unique<nn::Adagrad>(p, nn::AdagradOptions{.lr = 0.1, .lr_decay = 0.01});
       }}};
  for (const auto& [name, make] : optimisers) {
    SCOPED_TRACE(name);
    expect_exact_resume(make);
  }
}

TEST(NnCheckpoint, StateDictNamesAndChecks) {
  nn::Sequential m = model(3);
  nn::Adam opt(m.parameters(), {.lr = 0.05});
  std::vector<std::string> names;
  for (const auto& [name, t] : opt.state_dict()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"steps", "t", "lr"}));  // no step taken yet
  train_step(m, opt, 0);
  const auto state = opt.state_dict();
  ASSERT_EQ(state.size(), 3u + 2 * m.parameters().size());
  EXPECT_EQ(state[3].first, "0.exp_avg");
  EXPECT_EQ(state[4].first, "0.exp_avg_sq");
  EXPECT_EQ(state[3].second.shape(), m.parameters()[0].value().shape());

  // An SGD's state does not fit an Adam, and nothing changes.
  nn::SGD sgd(m.parameters(), {.lr = 0.1, .momentum = 0.9});
  train_step(m, sgd, 1);
  const auto before = opt.state_dict();
  try {
    opt.load_state_dict(sgd.state_dict());
    ADD_FAILURE() << "an SGD state loaded into Adam";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::incompatible_shapes);
    EXPECT_NE(std::string(e.what()).find("'t' is missing"), std::string::npos) << e.what();
  }
  auto wrong_shape = state;
  wrong_shape[3].second = kiln::zeros({1});
  try {
    opt.load_state_dict(wrong_shape);
    ADD_FAILURE() << "a state of the wrong shape loaded";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::incompatible_shapes);
    EXPECT_NE(std::string(e.what()).find("'0.exp_avg'"), std::string::npos) << e.what();
  }
  const auto after = opt.state_dict();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i)
    EXPECT_EQ(after[i].second.to_vector<double>(), before[i].second.to_vector<double>())
        << after[i].first;
}

TEST(NnCheckpoint, ACheckpointOfAnotherModelChangesNothing) {
  nn::Sequential m = model(4);
  nn::Adam opt(m.parameters());
  train_step(m, opt, 0);
  nn::Sequential other(nn::Linear(6, 8), nn::BatchNorm1d(8), nn::Tanh(), nn::Linear(8, 4));
  nn::Adam other_opt(other.parameters());
  TempFile f("other.safetensors");
  nn::save_checkpoint(other, other_opt, f.path);
  const auto before = bits_of(m);
  const std::int64_t steps = opt.steps();
  try {
    nn::load_checkpoint(m, opt, f.path);
    ADD_FAILURE() << "another model's checkpoint loaded";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::incompatible_shapes);
    EXPECT_NE(std::string(e.what()).find(f.path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("model.3.weight"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bits_of(m), before);
  EXPECT_EQ(opt.steps(), steps);
  // A plain model file is not a checkpoint.
  nn::save_safetensors(m, f.path);
  try {
    nn::load_checkpoint(m, opt, f.path);
    ADD_FAILURE() << "a model file loaded as a checkpoint";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a checkpoint"), std::string::npos) << e.what();
  }
}

TEST(NnCheckpoint, SchedulesResumeThroughTheExtraEntries) {
  auto make = [](std::uint64_t seed) {
    auto m = std::make_unique<nn::Sequential>(model(seed));
    auto opt = std::make_unique<nn::SGD>(m->parameters(), nn::SGDOptions{.lr = 0.2});
    return std::pair{std::move(m), std::move(opt)};
  };
  auto [straight, straight_opt] = make(21);
  nn::StepLR straight_schedule(*straight_opt, 2, 0.5);
  for (int k = 0; k < 7; ++k) {
    train_step(*straight, *straight_opt, k);
    straight_schedule.step();
  }
  auto [first, first_opt] = make(21);
  nn::StepLR first_schedule(*first_opt, 2, 0.5);
  for (int k = 0; k < 3; ++k) {
    train_step(*first, *first_opt, k);
    first_schedule.step();
  }
  TempFile f("schedule.safetensors");
  auto extra = first_schedule.state_dict();
  extra.emplace_back("epoch", Tensor::from(std::vector<std::int64_t>{3}, {}));
  nn::save_checkpoint(*first, *first_opt, f.path, extra);

  auto [resumed, resumed_opt] = make(22);
  nn::StepLR resumed_schedule(*resumed_opt, 2, 0.5);
  std::vector<std::pair<std::string, Tensor>> loaded;
  nn::load_checkpoint(*resumed, *resumed_opt, f.path, &loaded);
  ASSERT_EQ(loaded.size(), 3u);
  EXPECT_EQ(loaded[2].first, "epoch");
  EXPECT_EQ(loaded[2].second.item<std::int64_t>(), 3);
  loaded.pop_back();
  resumed_schedule.load_state_dict(loaded);
  EXPECT_EQ(resumed_schedule.last_epoch(), 3);
  for (int k = 3; k < 7; ++k) {
    train_step(*resumed, *resumed_opt, k);
    resumed_schedule.step();
  }
  EXPECT_EQ(resumed_opt->lr(), straight_opt->lr());
  EXPECT_EQ(bits_of(*resumed), bits_of(*straight));
  // A plateau schedule's counters round-trip; another schedule's state is refused.
  nn::ReduceLROnPlateau plateau(*resumed_opt, 0.5, 1);
  plateau.step(3.0);
  plateau.step(4.0);
  nn::ReduceLROnPlateau again(*resumed_opt, 0.5, 1);
  again.load_state_dict(plateau.state_dict());
  EXPECT_EQ(again.best(), 3.0);
  EXPECT_EQ(kiln_test::code_of([&] { again.load_state_dict(resumed_schedule.state_dict()); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(again.best(), 3.0);
}

}  // namespace
