// Mixed precision in kiln::nn: layers computing in bf16 or f16 under nn::Autocast while the
// parameters and losses stay f32, and the loss scaling that f16's gradients need.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

namespace nn = kiln::nn;
using kiln::DType;
using kiln::Tensor;

Tensor inputs() {
  std::vector<float> v(8 * 6);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7f * static_cast<float>(i));
  return Tensor::from(v, {8, 6});
}

Tensor labels() { return Tensor::from(std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8}); }

TEST(MixedPrecision, AutocastComputesLayersIn16BitsAndKeepsParametersAndLossF32) {
  for (DType t : {DType::bf16, DType::f16}) {
    nn::manual_seed(3);
    nn::Sequential model(nn::Linear(6, 16), nn::ReLU(), nn::Linear(16, 3));
    nn::manual_seed(3);
    nn::Sequential reference(nn::Linear(6, 16), nn::ReLU(), nn::Linear(16, 3));
    nn::SGD optimizer(model.parameters(), {.lr = 0.1});
    nn::SGD reference_optimizer(reference.parameters(), {.lr = 0.1});
    Tensor loss, logits;
    {
      kiln::GradientContext gradients;
      nn::Autocast mixed(t);
      EXPECT_EQ(nn::autocast_dtype(), t);
      logits = model(inputs());
      loss = nn::cross_entropy(logits, labels());
    }
    EXPECT_EQ(nn::autocast_dtype(), DType::f32);
    EXPECT_EQ(logits.dtype(), t);
    EXPECT_EQ(loss.dtype(), DType::f32);
    Tensor reference_loss;
    {
      kiln::GradientContext gradients;
      reference_loss = nn::cross_entropy(reference(inputs()), labels());
    }
    optimizer.step(loss);
    reference_optimizer.step(reference_loss);
    EXPECT_NEAR(loss.item<double>(), reference_loss.item<double>(), 0.02);
    const auto params = model.parameters(), reference_params = reference.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      EXPECT_EQ(params[i].value().dtype(), DType::f32);
      const std::vector<float> got = params[i].value().to_vector<float>();
      const std::vector<float> want = reference_params[i].value().to_vector<float>();
      for (std::size_t j = 0; j < got.size(); ++j)
        EXPECT_NEAR(got[j], want[j], 0.01) << kiln::dtype_name(t) << " parameter " << i;
    }
  }
}

TEST(MixedPrecision, AutocastNestsAndTakesOnly16BitFloats) {
  EXPECT_EQ(kiln_test::code_of([] { nn::Autocast bad(DType::f64); }), kiln::ErrorCode::wrong_type);
  {
    nn::Autocast outer(DType::bf16);
    {
      nn::Autocast inner(DType::f16);
      EXPECT_EQ(nn::autocast_dtype(), DType::f16);
      nn::Linear layer(2, 2);
      EXPECT_EQ(layer(kiln::ones({1, 2})).dtype(), DType::f16);
    }
    EXPECT_EQ(nn::autocast_dtype(), DType::bf16);
  }
  EXPECT_EQ(nn::autocast_dtype(), DType::f32);
  nn::Linear layer(2, 2);
  EXPECT_EQ(layer(kiln::ones({1, 2})).dtype(), DType::f32);
}

// One weight row w [1, 6], loss = factor * sum(x w^T) under f16: the gradient of each output,
// `factor`, passes through f16.
struct Probe {
  explicit Probe(double lr = 1.0) : optimizer{layer.parameters(), {.lr = lr}} {}
  nn::Linear layer{6, 1, /*bias=*/false};
  nn::SGD optimizer;
  std::vector<float> before = layer.weight().value().to_vector<float>();

  void step(double factor) {
    Tensor loss;
    {
      kiln::GradientContext gradients;
      nn::Autocast mixed(DType::f16);
      loss = kiln::sum(kiln::convert(layer(inputs()), DType::f32)) * factor;
    }
    optimizer.step(loss);
  }
  std::vector<float> change() const {
    std::vector<float> now = layer.weight().value().to_vector<float>();
    for (std::size_t j = 0; j < now.size(); ++j) now[j] -= before[j];
    return now;
  }
};

TEST(MixedPrecision, LossScalingKeepsSmallF16GradientsFromUnderflowing) {
  // 1e-8 is below f16's smallest value (2^-24): unscaled, every gradient is 0.
  Probe unscaled(1e6);
  unscaled.step(1e-8);
  for (float c : unscaled.change()) EXPECT_EQ(c, 0.0f);

  // A rate of 1e6 makes the change large enough for the f32 weights to show it.
  Probe scaled(1e6);
  scaled.optimizer.set_loss_scaling({});
  scaled.step(1e-8);
  // d loss / d w_j = 1e-8 * sum over the batch of x[:, j]; SGD subtracts 1e6 times it.
  const std::vector<float> x = inputs().to_vector<float>();
  const std::vector<float> change = scaled.change();
  for (std::size_t j = 0; j < 6; ++j) {
    double column = 0;
    for (std::size_t r = 0; r < 8; ++r) column += x[r * 6 + j];
    const double want = -1e6 * 1e-8 * column;
    // f16 keeps about 3 decimal digits of the gradients on their way
    EXPECT_NEAR(change[j], want, 5e-3 * std::fabs(want) + 1e-6) << "w" << j;
  }
  EXPECT_EQ(scaled.optimizer.skipped_steps(), 0);
  EXPECT_EQ(scaled.optimizer.steps(), 1);
}

TEST(MixedPrecision, AStepWhoseGradientsOverflowIsSkippedAndTheScaleBacksOff) {
  Probe p;
  p.optimizer.set_loss_scaling(
      {.initial_scale = 65536, .growth = 2, .backoff = 0.5, .interval = 2});
  // Each output's gradient is 65536 after scaling: beyond f16's largest value, infinite.
  p.step(1.0);
  for (float c : p.change()) EXPECT_EQ(c, 0.0f);
  EXPECT_EQ(p.optimizer.skipped_steps(), 1);
  EXPECT_EQ(p.optimizer.steps(), 0);
  EXPECT_EQ(p.optimizer.loss_scale(), 32768);
  // 32768 fits: two steps in a row without overflow grow the scale back.
  p.step(1.0);
  EXPECT_EQ(p.optimizer.steps(), 1);
  EXPECT_EQ(p.optimizer.loss_scale(), 32768);
  for (float c : p.change()) EXPECT_NE(c, 0.0f);
  p.step(1.0);
  EXPECT_EQ(p.optimizer.loss_scale(), 65536);
  EXPECT_EQ(p.optimizer.skipped_steps(), 1);

  EXPECT_EQ(kiln_test::code_of([&] { p.optimizer.set_loss_scaling({.backoff = 1.5}); }),
            kiln::ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([&] { p.optimizer.set_loss_scaling({.initial_scale = -1}); }),
            kiln::ErrorCode::invalid_select);
  p.optimizer.set_loss_scaling({.initial_scale = 0});
  EXPECT_EQ(p.optimizer.loss_scale(), 0);
}

TEST(MixedPrecision, TheLossScaleIsPartOfTheOptimizersState) {
  Probe p;
  p.optimizer.set_loss_scaling(
      {.initial_scale = 65536, .growth = 2, .backoff = 0.5, .interval = 3});
  p.step(1.0);  // overflows: skipped, scale 32768
  p.step(1.0);  // one good step toward growing again
  const auto state = p.optimizer.state_dict();
  auto entry = [&](const std::string& name) {
    for (const auto& [n, t] : state)
      if (n == name) return t;
    ADD_FAILURE() << name << " is not in the state";
    return Tensor();
  };
  EXPECT_EQ(entry("loss_scale").item<double>(), 32768);
  EXPECT_EQ(entry("loss_scale_good_steps").item<std::int64_t>(), 1);
  EXPECT_EQ(entry("skipped_steps").item<std::int64_t>(), 1);

  // A resumed optimiser goes on where this one stands, not at the initial scale.
  Probe resumed;
  resumed.optimizer.set_loss_scaling(
      {.initial_scale = 65536, .growth = 2, .backoff = 0.5, .interval = 3});
  resumed.optimizer.load_state_dict(state);
  EXPECT_EQ(resumed.optimizer.loss_scale(), 32768);
  EXPECT_EQ(resumed.optimizer.skipped_steps(), 1);
  resumed.step(1.0);
  resumed.step(1.0);  // the third good step in a row: the scale grows
  EXPECT_EQ(resumed.optimizer.loss_scale(), 65536);

  // Without loss scaling the state is refused whole; an optimiser without it writes none.
  Probe plain;
  EXPECT_EQ(kiln_test::code_of([&] { plain.optimizer.load_state_dict(state); }),
            kiln::ErrorCode::incompatible_shapes);
  EXPECT_EQ(plain.optimizer.loss_scale(), 0);
  for (const auto& [name, t] : plain.optimizer.state_dict())
    EXPECT_EQ(name.find("loss_scale"), std::string::npos) << name;
}

}  // namespace
