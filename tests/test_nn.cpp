// kiln::nn and kiln::data: module shapes and parameter counts, initialisation bounds, Dropout in
// training and evaluation mode, SGD and Adam steps against hand-computed values, saving and
// loading (round trip, other model, truncated and corrupted files), the IDX reader on small
// synthetic files (plain and gzipped, whole and truncated), the batch iterator, and a quick
// training run of the small CNN on real Fashion-MNIST images.
#include <gtest/gtest.h>

#include "graph/node.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"

namespace {

namespace nn = kiln::nn;
namespace data = kiln::data;
using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using Vf = std::vector<float>;

template <class F> kiln::Error error_of(F f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e;
  }
  return kiln::Error(ErrorCode::none, "no error");
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("kiln_test_nn_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name) : path(temp_path(name)) {}
  ~TempFile() { std::remove(path.c_str()); }
};

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

nn::Sequential small_cnn() {
  return nn::Sequential(nn::Conv2d(1, 8, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Conv2d(8, 16, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Flatten(), nn::Linear(16 * 7 * 7, 128), nn::ReLU(), nn::Dropout(0.4),
                        nn::Linear(128, 10));
}

// ---- modules --------------------------------------------------------------------------------------

TEST(NnModules, LinearShapesAndParameters) {
  nn::Linear fc(5, 3);
  EXPECT_EQ(fc.num_parameters(), 5 * 3 + 3);
  EXPECT_EQ(fc.weight().shape(), (Shape{3, 5}));  // [out, in], as PyTorch
  EXPECT_EQ(fc.bias().shape(), (Shape{3}));
  EXPECT_TRUE(fc.weight().value().is_watched());
  EXPECT_EQ(fc.weight().value().dtype(), DType::f32);
  EXPECT_EQ(fc(kiln::ones({4, 5})).shape(), (Shape{4, 3}));
  EXPECT_EQ(fc(kiln::ones({2, 4, 5})).shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(fc(kiln::ones({5})).shape(), (Shape{3}));
  EXPECT_EQ(error_of([&] { fc(kiln::ones({4, 6})); }).code(), ErrorCode::incompatible_shapes);

  nn::Linear no_bias(5, 3, false);
  EXPECT_EQ(no_bias.num_parameters(), 15);
  EXPECT_FALSE(no_bias.bias().defined());

  // y = x W^T + b, checked against the parameters' values.
  const Tensor x = kiln::tensor({{1.f, 2.f, 3.f, 4.f, 5.f}});
  const Vf y = fc(x).to_vector<float>();
  const Vf w = fc.weight().value().to_vector<float>(), b = fc.bias().value().to_vector<float>();
  for (int j = 0; j < 3; ++j) {
    float want = b[j];
    for (int i = 0; i < 5; ++i) want += static_cast<float>(i + 1) * w[j * 5 + i];
    EXPECT_NEAR(y[j], want, 1e-5);
  }
}

TEST(NnModules, ConvPoolFlattenShapes) {
  nn::Conv2d conv(3, 4, 5);  // padding 0 by default, as PyTorch
  EXPECT_EQ(conv.num_parameters(), 4 * 3 * 5 * 5 + 4);
  EXPECT_EQ(conv.weight().shape(), (Shape{4, 3, 5, 5}));
  EXPECT_EQ(conv(kiln::ones({2, 3, 8, 8})).shape(), (Shape{2, 4, 4, 4}));
  nn::Conv2d same(3, 4, 5, 1, nn::Conv2d::same_padding);
  EXPECT_EQ(same(kiln::ones({2, 3, 8, 8})).shape(), (Shape{2, 4, 8, 8}));
  nn::Conv2d strided(3, 4, 3, /*stride=*/2, /*padding=*/1);
  EXPECT_EQ(strided(kiln::ones({2, 3, 8, 8})).shape(), (Shape{2, 4, 4, 4}));
  nn::Conv2d valid(3, 4, 3, 1, 0, /*bias=*/false);
  EXPECT_EQ(valid.num_parameters(), 4 * 3 * 9);
  EXPECT_EQ(valid(kiln::ones({1, 3, 8, 8})).shape(), (Shape{1, 4, 6, 6}));
  EXPECT_EQ(error_of([] { nn::Conv2d(3, 4, 4, 1, nn::Conv2d::same_padding); }).code(),
            ErrorCode::illegal_dimension);
  EXPECT_EQ(error_of([] { nn::Conv2d(0, 4, 3); }).code(), ErrorCode::illegal_dimension);

  nn::MaxPool2d pool(2);
  const Tensor img = kiln::tensor({{{{1.f, 2.f, 5.f, 0.f},
                                     {3.f, 4.f, 1.f, 1.f},
                                     {0.f, 0.f, -1.f, -2.f},
                                     {0.f, 9.f, -3.f, -4.f}}}});
  const Tensor pooled = pool(img);
  EXPECT_EQ(pooled.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(pooled.to_vector<float>(), (Vf{4, 5, 9, -1}));
  EXPECT_EQ(nn::MaxPool2d(3, 1)(kiln::ones({2, 4, 8, 8})).shape(), (Shape{2, 4, 6, 6}));

  EXPECT_EQ(nn::Flatten()(kiln::ones({2, 4, 3, 3})).shape(), (Shape{2, 36}));
  EXPECT_EQ(nn::ReLU()(kiln::tensor({-1.f, 2.f})).to_vector<float>(), (Vf{0, 2}));
}

TEST(NnModules, SequentialNamesCountsAndModes) {
  nn::Sequential model = small_cnn();
  EXPECT_EQ(model.size(), 11u);
  const auto named = model.named_parameters();
  std::vector<std::string> names;
  for (const auto& [n, p] : named) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias",
                                             "7.weight", "7.bias", "10.weight", "10.bias"}));
  const std::int64_t expected = (8 * 25 + 8) + (16 * 8 * 25 + 16) + (784 * 128 + 128) +
                                (128 * 10 + 10);
  EXPECT_EQ(model.num_parameters(), expected);
  EXPECT_EQ(model(kiln::zeros({3, 1, 28, 28})).shape(), (Shape{3, 10}));
  EXPECT_NE(model.summary().find("total: 105,194 parameters"), std::string::npos)
      << model.summary();

  // The full "2 Conv+pooling" model.
  nn::Sequential full(nn::Conv2d(1, 32, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                      nn::Conv2d(32, 64, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                      nn::Flatten(), nn::Linear(3136, 1024), nn::ReLU(), nn::Dropout(0.4),
                      nn::Linear(1024, 10));
  EXPECT_EQ(full.num_parameters(), 832 + 51264 + 3212288 + 10250);

  EXPECT_TRUE(model.is_training());
  EXPECT_TRUE(model[9].is_training());
  model.eval();
  EXPECT_FALSE(model.is_training());
  EXPECT_FALSE(model[9].is_training());
  model.train();
  EXPECT_TRUE(model[9].is_training());

  // Parameters are shared handles: what the optimiser sees is what the module uses.
  EXPECT_TRUE(model.parameters()[0].same_slot(model.parameters()[0]));
  EXPECT_TRUE(model.parameters()[6].value().same_node(
      dynamic_cast<nn::Linear&>(model[10]).weight().value()));
}

TEST(NnInit, BoundsAndSeeding) {
  nn::manual_seed(7);
  const Vf a = nn::kaiming_uniform({64, 50}, 50).to_vector<float>();
  const double kb = std::sqrt(6.0 / 50);
  EXPECT_LE(*std::max_element(a.begin(), a.end()), kb);
  EXPECT_GE(*std::min_element(a.begin(), a.end()), -kb);
  EXPECT_GT(*std::max_element(a.begin(), a.end()), 0.9 * kb);  // the range is used
  const Vf x = nn::xavier_uniform({30, 20}, 20, 30).to_vector<float>();
  const double xb = std::sqrt(6.0 / 50);
  EXPECT_LE(*std::max_element(x.begin(), x.end()), xb);
  EXPECT_GE(*std::min_element(x.begin(), x.end()), -xb);

  nn::manual_seed(7);
  EXPECT_EQ(nn::kaiming_uniform({64, 50}, 50).to_vector<float>(), a);  // reproducible
  EXPECT_NE(nn::kaiming_uniform({64, 50}, 50).to_vector<float>(), a);  // next draw differs

  // Linear and Conv2d: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases.
  nn::Linear fc(100, 40);
  const double lb = 1.0 / std::sqrt(100.0);
  for (const Tensor& t : {fc.weight().value(), fc.bias().value()}) {
    const Vf v = t.to_vector<float>();
    EXPECT_LE(*std::max_element(v.begin(), v.end()), lb);
    EXPECT_GE(*std::min_element(v.begin(), v.end()), -lb);
  }
  nn::Conv2d conv(4, 8, 3);
  const Vf cw = conv.weight().value().to_vector<float>();
  EXPECT_LE(*std::max_element(cw.begin(), cw.end()), 1.0 / std::sqrt(36.0));
  EXPECT_GT(*std::max_element(cw.begin(), cw.end()), 0.8 / std::sqrt(36.0));
}

TEST(NnModules, DropoutTrainingAndEvaluation) {
  nn::manual_seed(3);
  nn::Dropout drop(0.4);
  const Tensor x = kiln::full({100, 100}, 2.0f);
  const Vf y = drop(x).to_vector<float>();
  const auto zeros = std::count(y.begin(), y.end(), 0.0f);
  EXPECT_NEAR(static_cast<double>(zeros) / y.size(), 0.4, 0.03);
  for (float v : y) {
    if (v != 0.0f) {
      EXPECT_NEAR(v, 2.0 / 0.6, 1e-5);  // 1/(1-p) rescaling
    }
  }
  double mean = std::accumulate(y.begin(), y.end(), 0.0) / y.size();
  EXPECT_NEAR(mean, 2.0, 0.1);  // expectation preserved
  EXPECT_NE(drop(x).to_vector<float>(), y);  // a fresh mask per forward call

  drop.eval();
  const Tensor same = drop(x);
  EXPECT_TRUE(same.same_node(x));  // identity in evaluation mode
  drop.train();
  EXPECT_EQ(nn::Dropout(0.0)(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(nn::Dropout(1.0)(x).to_vector<float>(), Vf(10000, 0.0f));
  EXPECT_EQ(error_of([] { nn::Dropout(1.5); }).code(), ErrorCode::invalid_select);

  // The gradient flows through kept elements only, scaled by 1/(1-p).
  const Tensor w = Tensor::from(Vf(1000, 1.0f), {1000}).watch();
  Tensor out;
  {
    kiln::GradientContext ctx;
    out = kiln::sum(drop(w * 3.0f));
  }
  const Vf g = kiln::gradient(out, w).to_vector<float>();
  for (float v : g) EXPECT_TRUE(v == 0.0f || std::abs(v - 3.0f / 0.6f) < 1e-5) << v;
}

TEST(NnLosses, CrossEntropyMseAccuracy) {
  const Tensor logits = kiln::tensor({{2.f, 1.f, 0.f}, {0.f, 0.f, 3.f}});
  const Tensor labels = Tensor::from(std::vector<std::int64_t>{0, 1});
  const double l0 = -std::log(std::exp(2.0) / (std::exp(2.0) + std::exp(1.0) + 1.0));
  const double l1 = -std::log(1.0 / (2.0 + std::exp(3.0)));
  EXPECT_NEAR(nn::cross_entropy(logits, labels).item<double>(), (l0 + l1) / 2, 1e-5);
  EXPECT_EQ(nn::correct_count(logits, labels).item<std::int64_t>(), 1);
  EXPECT_DOUBLE_EQ(nn::accuracy(logits, labels).item<double>(), 0.5);
  EXPECT_NEAR(nn::mse(kiln::tensor({1.f, 2.f}), kiln::tensor({0.f, 4.f})).item<double>(), 2.5,
              1e-6);
  EXPECT_EQ(error_of([] { nn::mse(kiln::ones({2}), kiln::ones({3})); }).code(),
            ErrorCode::incompatible_shapes);
}

// ---- optimisers -----------------------------------------------------------------------------------

// Loss 0.5 * sum(p^2), whose gradient is p itself.
Tensor half_square(const nn::Parameter& p) {
  kiln::GradientContext ctx;
  return kiln::sum(kiln::square(p.value())) * 0.5f;
}

void expect_values(const nn::Parameter& p, const std::vector<double>& want, double tol) {
  const Vf got = p.value().to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// One optimiser step on half_square(p): evaluated in one pass (step(loss)) or PyTorch-style
// (backward(), then step()).
template <class Optimizer>
void optimizer_step(Optimizer& opt, const nn::Parameter& p, bool one_pass) {
  const Tensor loss = half_square(p);
  if (one_pass) {
    opt.step(loss);
  } else {
    loss.backward();
    opt.step();
  }
}

TEST(NnOptim, SgdMomentumHandComputed) {
  for (bool one_pass : {false, true}) {
    nn::Parameter p("p", kiln::tensor({1.f, -2.f}));
    nn::SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
    auto step = [&] { optimizer_step(opt, p, one_pass); };
    // Step 1: g = [1, -2], buf = g, p = p - 0.1 buf = [0.9, -1.8].
    step();
    expect_values(p, {0.9, -1.8}, 1e-6);
    EXPECT_FALSE(p.grad().defined());  // a new leaf without gradient
    EXPECT_TRUE(p.value().is_watched());
    // Step 2: g = [0.9, -1.8], buf = 0.9 [1, -2] + g = [1.8, -3.6], p = [0.72, -1.44].
    step();
    expect_values(p, {0.72, -1.44}, 1e-6);
    EXPECT_EQ(opt.steps(), 2);
  }
}

TEST(NnOptim, SgdWeightDecayAndNesterov) {
  // Loss sum(c * p): g = c + wd * p.
  nn::Parameter p("p", kiln::tensor({1.f, 2.f}));
  nn::SGD opt({p}, {.lr = 0.5, .weight_decay = 0.1});
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = kiln::sum(p.value() * kiln::tensor({3.f, -1.f}));
  }
  opt.step(loss);
  // g = [3.1, -0.8]; p = [1 - 1.55, 2 + 0.4].
  expect_values(p, {-0.55, 2.4}, 1e-6);

  nn::Parameter q("q", kiln::tensor({1.f}));
  nn::SGD nesterov({q}, {.lr = 0.1, .momentum = 0.5, .nesterov = true});
  nesterov.step(half_square(q));  // g = 1, buf = 1, update g + 0.5 buf = 1.5 -> 0.85
  expect_values(q, {0.85}, 1e-6);
  nesterov.step(half_square(q));  // g = 0.85, buf = 0.5 + 0.85 = 1.35, update 0.85 + 0.675
  expect_values(q, {0.85 - 0.1 * 1.525}, 1e-6);
}

TEST(NnOptim, AdamOneAndTwoStepsHandComputed) {
  for (bool one_pass : {false, true}) {
    nn::Parameter p("p", kiln::tensor({1.f, -2.f}));
    nn::Adam opt({p}, {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
    auto step = [&] { optimizer_step(opt, p, one_pass); };
    // Step 1: the bias-corrected m and v are g and g^2, so p moves by lr * sign(g).
    step();
    expect_values(p, {0.9, -1.9}, 1e-6);
    // Step 2 with g = [0.9, -1.9]:
    // m = 0.9 * 0.1 * [1, -2] + 0.1 * g = [0.18, -0.37]
    // v = 0.999 * 0.001 * [1, 4] + 0.001 * g^2 = [0.001809, 0.007606]
    // p -= 0.1 * (m / 0.19) / (sqrt(v / 0.001999) + 1e-8)
    const double m0 = 0.18, m1 = -0.37, v0 = 0.001809, v1 = 0.007606;
    const double bc1 = 1 - 0.9 * 0.9, bc2 = 1 - 0.999 * 0.999;
    step();
    expect_values(p, {0.9 - 0.1 * (m0 / bc1) / (std::sqrt(v0 / bc2) + 1e-8),
                      -1.9 - 0.1 * (m1 / bc1) / (std::sqrt(v1 / bc2) + 1e-8)},
                  2e-6);
    expect_values(p, {0.800412, -1.800167}, 2e-6);  // the same, as numbers
  }
}

TEST(NnOptim, SetLrChangesTheFollowingSteps) {
  // SGD on half_square: p -= lr * p. Adam's first step moves by lr * sign(g).
  nn::Parameter p("p", kiln::tensor({1.f}));
  nn::SGD sgd({p}, {.lr = 0.5});
  sgd.step(half_square(p));
  expect_values(p, {0.5}, 1e-7);
  sgd.set_lr(0.1);
  EXPECT_DOUBLE_EQ(sgd.lr(), 0.1);
  sgd.step(half_square(p));
  expect_values(p, {0.45}, 1e-7);
  nn::Parameter q("q", kiln::tensor({1.f}));
  nn::Adam adam({q}, {.lr = 0.1});
  adam.set_lr(0.25);
  adam.step(half_square(q));
  expect_values(q, {0.75}, 1e-5);
  EXPECT_EQ(error_of([&] { adam.set_lr(-1); }).code(), ErrorCode::invalid_select);
  EXPECT_EQ(error_of([&] { sgd.set_lr(std::nan("")); }).code(), ErrorCode::invalid_select);
  EXPECT_DOUBLE_EQ(adam.lr(), 0.25);
}

// The buffer that holds a tensor's values (internal), to see whether an update was in place.
const void* storage_of(const Tensor& t) { return t.node()->result ? t.node()->result->data() : nullptr; }

TEST(NnOptim, AdamUpdatesInPlaceUnlessTheOldValueIsHeld) {
  const bool cpu = kiln::current_executor()->name() == "cpu";
  nn::Parameter p("p", kiln::tensor({1.f, -2.f, 3.f}));
  nn::Adam opt({p}, {.lr = 0.1});
  opt.step(half_square(p));  // the first step creates the state
  const void* value_storage = storage_of(p.value());
  const Vf before = p.value().to_vector<float>();
  opt.step(half_square(p));
  // The CPU executor writes the new value into the old one's buffer; the reference executor
  // always allocates. Either way the values are Adam's.
  if (cpu) {
    EXPECT_EQ(storage_of(p.value()), value_storage);
  }
  const Vf after = p.value().to_vector<float>();
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_LT(std::fabs(after[i]), std::fabs(before[i]));

  // A detached copy of the old value keeps it: that update is not in place. (A copy of
  // p.value() is the parameter's own handle, which reads the new value.)
  const Tensor kept = p.value().detach();
  const Vf kept_values = kept.to_vector<float>();
  opt.step(half_square(p));
  EXPECT_NE(storage_of(p.value()), storage_of(kept));
  EXPECT_EQ(kept.to_vector<float>(), kept_values);
  EXPECT_NE(p.value().to_vector<float>(), kept_values);
}

TEST(NnOptim, AResultBuiltBeforeAStepSeesTheOldValues) {
  // A lazy result that reads a parameter is computed from the value it was built on, however
  // many steps run before it is read: an in-place update must not reach it.
  for (const bool momentum : {false, true}) {
    nn::Parameter p("p", kiln::tensor({1.f, -2.f, 3.f}));
    nn::SGD opt({p}, {.lr = 0.5, .momentum = momentum ? 0.9 : 0.0});
    opt.step(half_square(p));
    const Vf old_values = p.value().to_vector<float>();
    const Tensor doubled = p.value() * 2.0f;  // not evaluated; no handle to the value itself
    opt.step(half_square(p));
    opt.step(half_square(p));
    const Vf got = doubled.to_vector<float>();
    ASSERT_EQ(got.size(), old_values.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 2 * old_values[i]) << i;
    EXPECT_NE(p.value().to_vector<float>(), old_values);
  }
}

TEST(NnOptim, InPlaceTrainingMatchesTheReferenceExecutor) {
  // A few Adam steps of a small MLP under each executor give the same parameters.
  std::vector<std::vector<float>> final_values[2];
  const auto executors = {kiln::reference_executor(), kiln::cpu_executor()};
  const auto previous = kiln::current_executor();
  int e = 0;
  for (const auto& executor : executors) {
    kiln::set_executor(executor);
    nn::manual_seed(5);
    nn::Sequential model;
    model.add(nn::Linear(6, 8)).add(nn::ReLU()).add(nn::Linear(8, 3));
    nn::Adam opt(model.parameters(), {.lr = 0.05});
    const Tensor x = kiln::uniform({16, 6}, 9, DType::f32);
    const Tensor labels = Tensor::from(std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0,
                                                                 1, 2, 0, 1, 2, 0},
                                       {16});
    for (int step = 0; step < 5; ++step) {
      Tensor loss;
      {
        kiln::GradientContext ctx;
        loss = nn::cross_entropy(model(x), labels);
      }
      opt.step(loss);
    }
    for (const auto& param : model.parameters())
      final_values[e].push_back(param.value().to_vector<float>());
    ++e;
  }
  kiln::set_executor(previous);
  ASSERT_EQ(final_values[0].size(), final_values[1].size());
  for (std::size_t i = 0; i < final_values[0].size(); ++i)
    for (std::size_t j = 0; j < final_values[0][i].size(); ++j)
      EXPECT_NEAR(final_values[0][i][j], final_values[1][i][j], 1e-4) << i << "," << j;
}

TEST(NnOptim, TrainsALinearRegression) {
  // y = 2 x0 - 3 x1 + 0.5, fitted with Adam on mse; the module sees the updated parameters.
  nn::manual_seed(11);
  nn::Linear fc(2, 1);
  nn::Adam opt(fc.parameters(), {.lr = 0.05});
  const Tensor x = nn::uniform({64, 2}, -1, 1, 99);
  const Tensor y = (x.slice({0, 0}, {64, 1}) * 2.0f - x.slice({0, 1}, {64, 2}) * 3.0f + 0.5f)
                       .contiguous()
                       .eval();
  double first = 0, last = 0;
  for (int i = 0; i < 300; ++i) {
    Tensor loss;
    {
      kiln::GradientContext ctx;
      loss = nn::mse(fc(x), y);
    }
    opt.step(loss);
    if (i == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 1e-3);
  expect_values(fc.weight(), {2.0, -3.0}, 0.05);
  expect_values(fc.bias(), {0.5}, 0.05);
}

TEST(NnOptim, Errors) {
  nn::Parameter p("p", kiln::tensor({1.f}));
  EXPECT_EQ(error_of([&] { nn::SGD({p, p}, {}); }).code(), ErrorCode::invalid_select);
  EXPECT_EQ(error_of([&] { nn::Adam({p}, {.beta1 = 1.0}); }).code(), ErrorCode::invalid_select);
  nn::Adam opt({p});
  EXPECT_EQ(error_of([&] { opt.step(kiln::ones({2})); }).code(), ErrorCode::illegal_derive);
  opt.step();  // no gradient: nothing changes
  expect_values(p, {1.0}, 0);
  EXPECT_EQ(error_of([&] { p.set(kiln::ones({2})); }).code(), ErrorCode::incompatible_shapes);
}

// ---- saving and loading ---------------------------------------------------------------------------

TEST(NnSerialize, RoundTripGivesIdenticalPredictions) {
  nn::manual_seed(21);
  nn::Sequential model = small_cnn();
  model.eval();
  const Tensor x = nn::uniform({5, 1, 28, 28}, 0, 1, 5);
  const Vf before = model(x).to_vector<float>();
  TempFile file("roundtrip.kiln");
  nn::save(model, file.path);

  nn::manual_seed(22);
  nn::Sequential other = small_cnn();
  other.eval();
  EXPECT_NE(other(x).to_vector<float>(), before);
  nn::load(other, file.path);
  EXPECT_EQ(other(x).to_vector<float>(), before);
  for (const auto& p : other.parameters()) EXPECT_TRUE(p.value().is_watched());

  // Size: header, names, shapes, data and checksum.
  std::size_t expected = 8 + 4 + 4 + 4;
  for (const auto& [name, p] : model.named_parameters())
    expected += 4 + name.size() + 8 + 8 * p.shape().size() + 4 * p.numel();
  EXPECT_EQ(std::filesystem::file_size(file.path), expected);
}

TEST(NnSerialize, OtherModelIsAClearError) {
  nn::Sequential model = small_cnn();
  TempFile file("model.kiln");
  nn::save(model, file.path);

  nn::Sequential wider(nn::Conv2d(1, 8, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Conv2d(8, 16, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Flatten(), nn::Linear(784, 64), nn::ReLU(), nn::Dropout(0.4),
                       nn::Linear(64, 10));
  const Vf kept = wider.parameters()[0].value().to_vector<float>();
  const kiln::Error e = error_of([&] { nn::load(wider, file.path); });
  EXPECT_EQ(e.code(), ErrorCode::incompatible_shapes);
  EXPECT_NE(std::string(e.what()).find("7.weight"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find(file.path), std::string::npos) << e.what();
  EXPECT_EQ(wider.parameters()[0].value().to_vector<float>(), kept);  // unchanged

  nn::Sequential shallow(nn::Flatten(), nn::Linear(784, 10));
  const kiln::Error count = error_of([&] { nn::load(shallow, file.path); });
  EXPECT_EQ(count.code(), ErrorCode::incompatible_shapes);
  EXPECT_NE(std::string(count.what()).find("8 parameters"), std::string::npos) << count.what();
}

TEST(NnSerialize, TruncatedCorruptedAndMissingFilesFailCleanly) {
  nn::Sequential model(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
  TempFile file("full.kiln"), cut("cut.kiln");
  nn::save(model, file.path);
  const std::vector<char> bytes = read_bytes(file.path);
  for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{16}, std::size_t{30},
                        bytes.size() / 2, bytes.size() - 5, bytes.size() - 1}) {
    write_bytes(cut.path, std::vector<char>(bytes.begin(), bytes.begin() + n));
    const kiln::Error e = error_of([&] { nn::load(model, cut.path); });
    EXPECT_EQ(e.code(), ErrorCode::io_error) << "cut at " << n << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(cut.path), std::string::npos) << e.what();
  }
  // A flipped bit in the data, a bad magic, an impossible rank or name length.
  for (std::size_t at : {bytes.size() - 10, std::size_t{0}, std::size_t{29}, std::size_t{16}}) {
    std::vector<char> bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    write_bytes(cut.path, bad);
    EXPECT_EQ(error_of([&] { nn::load(model, cut.path); }).code(), ErrorCode::io_error)
        << "flipped byte " << at;
  }
  std::vector<char> longer = bytes;
  longer.push_back('x');
  write_bytes(cut.path, longer);
  EXPECT_EQ(error_of([&] { nn::load(model, cut.path); }).code(), ErrorCode::io_error);

  const kiln::Error missing = error_of([&] { nn::load(model, temp_path("does_not_exist")); });
  EXPECT_EQ(missing.code(), ErrorCode::io_error);
  EXPECT_NE(std::string(missing.what()).find("does_not_exist"), std::string::npos);
  EXPECT_EQ(error_of([&] { nn::save(model, "/nonexistent-dir/x.kiln"); }).code(),
            ErrorCode::io_error);

  // The model still works and loads its own file.
  nn::load(model, file.path);
}

// ---- IDX files ------------------------------------------------------------------------------------

std::vector<char> idx_bytes(std::uint8_t type, const std::vector<std::uint32_t>& dims,
                            const std::vector<std::uint8_t>& payload) {
  std::vector<char> out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((d >> s) & 0xFF));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::uint32_t crc32_of(const std::vector<char>& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (char c : bytes) {
    crc ^= static_cast<std::uint8_t>(c);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// A gzip member holding `bytes` in stored (uncompressed) deflate blocks.
std::vector<char> gzip_stored(const std::vector<char>& bytes) {
  std::vector<char> out = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, '\xff'};
  std::size_t pos = 0;
  do {
    const std::size_t n = std::min<std::size_t>(bytes.size() - pos, 65535);
    const bool last = pos + n == bytes.size();
    out.push_back(last ? 1 : 0);
    out.push_back(static_cast<char>(n & 0xFF));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(~n & 0xFF));
    out.push_back(static_cast<char>((~n >> 8) & 0xFF));
    out.insert(out.end(), bytes.begin() + pos, bytes.begin() + pos + n);
    pos += n;
  } while (pos < bytes.size());
  const std::uint32_t crc = crc32_of(bytes), size = static_cast<std::uint32_t>(bytes.size());
  for (int s = 0; s < 32; s += 8) out.push_back(static_cast<char>((crc >> s) & 0xFF));
  for (int s = 0; s < 32; s += 8) out.push_back(static_cast<char>((size >> s) & 0xFF));
  return out;
}

TEST(DataIdx, PlainAndGzippedFiles) {
  std::vector<std::uint8_t> pixels(3 * 2 * 2);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 20);
  const std::vector<char> images = idx_bytes(0x08, {3, 2, 2}, pixels);
  const std::vector<char> labels = idx_bytes(0x08, {3}, {7, 0, 9});
  TempFile plain("images.idx"), gz("images.idx.gz"), lab("labels.idx"), lab_gz("labels.gz");
  write_bytes(plain.path, images);
  write_bytes(gz.path, gzip_stored(images));
  write_bytes(lab.path, labels);
  write_bytes(lab_gz.path, gzip_stored(labels));

  for (const std::string& path : {plain.path, gz.path}) {
    const Tensor t = data::read_idx_images(path);
    EXPECT_EQ(t.shape(), (Shape{3, 1, 2, 2}));
    EXPECT_EQ(t.dtype(), DType::f32);
    const Vf v = t.to_vector<float>();
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_FLOAT_EQ(v[i], pixels[i] / 255.0f);
  }
  for (const std::string& path : {lab.path, lab_gz.path}) {
    const Tensor t = data::read_idx_labels(path);
    EXPECT_EQ(t.dtype(), DType::i64);
    EXPECT_EQ(t.to_vector<std::int64_t>(), (std::vector<std::int64_t>{7, 0, 9}));
  }

  // Other element types, big-endian.
  TempFile ints("ints.idx");
  write_bytes(ints.path, idx_bytes(0x0C, {2}, {0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE}));
  const data::IdxArray a = data::read_idx(ints.path);
  EXPECT_EQ(a.dims, (Shape{2}));
  EXPECT_EQ(a.value(0), 258);
  EXPECT_EQ(a.value(1), -2);
  // Labels where images are expected.
  EXPECT_EQ(error_of([&] { data::read_idx_images(lab.path); }).code(), ErrorCode::io_error);
}

TEST(DataIdx, TruncatedMissingAndBadFilesNameTheFile) {
  std::vector<std::uint8_t> pixels(4 * 3 * 3, 17);
  const std::vector<char> images = idx_bytes(0x08, {4, 3, 3}, pixels);
  const std::vector<char> zipped = gzip_stored(images);
  TempFile file("bad.idx");
  auto check = [&](const std::vector<char>& bytes, const std::string& what) {
    write_bytes(file.path, bytes);
    const kiln::Error e = error_of([&] { data::read_idx_images(file.path); });
    EXPECT_EQ(e.code(), ErrorCode::io_error) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(file.path), std::string::npos) << e.what();
  };
  check({}, "empty");
  check(std::vector<char>(images.begin(), images.begin() + 6), "cut in the header");
  check(std::vector<char>(images.begin(), images.end() - 1), "cut in the data");
  check(std::vector<char>(zipped.begin(), zipped.begin() + zipped.size() / 2), "gzip cut");
  check(std::vector<char>(zipped.begin(), zipped.end() - 4), "gzip without its size");
  std::vector<char> bad_crc = zipped;
  bad_crc[bad_crc.size() - 6] ^= 1;
  check(bad_crc, "gzip with a wrong checksum");
  std::vector<char> bad_magic = images;
  bad_magic[0] = 1;
  check(bad_magic, "bad magic");
  std::vector<char> longer = images;
  longer.push_back(0);
  check(longer, "trailing data");

  const std::string missing = temp_path("missing-images-idx3-ubyte");
  const kiln::Error e = error_of([&] { data::read_idx_images(missing); });
  EXPECT_EQ(e.code(), ErrorCode::io_error);
  EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  const kiln::Error dir = error_of([] { data::load_mnist_split("/nonexistent-dir", "train"); });
  EXPECT_EQ(dir.code(), ErrorCode::io_error);
  EXPECT_NE(std::string(dir.what()).find("/nonexistent-dir/train-images-idx3-ubyte"),
            std::string::npos)
      << dir.what();
}

TEST(DataBatches, ShuffledBatchesCoverEveryExampleOnce) {
  const std::int64_t n = 103;
  std::vector<float> images(static_cast<std::size_t>(n) * 4);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    labels[i] = i;
    for (int k = 0; k < 4; ++k) images[i * 4 + k] = static_cast<float>(i);
  }
  data::Dataset d{Tensor::from(images, {n, 1, 2, 2}), Tensor::from(labels, {n})};
  data::BatchIterator it(d, 10, true, 5);
  EXPECT_EQ(it.num_batches(), 11);
  auto epoch_order = [&](std::int64_t e) {
    it.start_epoch(e);
    std::vector<std::int64_t> seen;
    data::Batch b;
    std::int64_t batches = 0;
    while (it.next(b)) {
      EXPECT_EQ(b.index, batches++);
      EXPECT_EQ(b.images.shape(), (Shape{b.labels.size(0), 1, 2, 2}));
      const auto l = b.labels.to_vector<std::int64_t>();
      const Vf im = b.images.to_vector<float>();
      for (std::size_t j = 0; j < l.size(); ++j) EXPECT_EQ(im[j * 4], static_cast<float>(l[j]));
      seen.insert(seen.end(), l.begin(), l.end());
    }
    EXPECT_EQ(batches, 11);
    return seen;
  };
  const auto e0 = epoch_order(0), e1 = epoch_order(1), again = epoch_order(0);
  std::vector<std::int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, labels);
  EXPECT_NE(e0, labels);  // shuffled
  EXPECT_NE(e0, e1);      // differently each epoch
  EXPECT_EQ(e0, again);   // reproducibly

  data::BatchIterator ordered(d, 10, false, 0, /*drop_last=*/true);
  EXPECT_EQ(ordered.num_batches(), 10);
  data::Batch b;
  ASSERT_TRUE(ordered.next(b));
  EXPECT_EQ(b.labels.to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(data::take(d, 7).size(), 7);
}

// ---- a quick training run -------------------------------------------------------------------------

TEST(NnTraining, SmallCnnLearnsFashionMnistQuickly) {
  const std::string dir = data::fashion_mnist_default_dir;
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(dir + "/train-images-idx3-ubyte"))
    FAIL() << "Fashion-MNIST is missing from " << dir
           << ": install the dataset-fashion-mnist package (scripts/setup.sh does)";
  const auto start = std::chrono::steady_clock::now();
  nn::manual_seed(1);
  const data::Dataset train = data::take(data::load_mnist_split(dir, "train"), 3000);
  const data::Dataset test = data::take(data::load_mnist_split(dir, "test"), 1000);
  nn::Sequential model = small_cnn();
  nn::Adam opt(model.parameters(), {.lr = 1e-3});
  data::BatchIterator batches(train, 64, true, 1);
  std::vector<double> losses;
  data::Batch b;
  while (batches.next(b)) {
    Tensor loss;
    {
      kiln::GradientContext ctx;
      loss = nn::cross_entropy(model(b.images), b.labels);
    }
    opt.step(loss);
    losses.push_back(loss.item<double>());
  }
  ASSERT_EQ(losses.size(), 47u);
  const double first = std::accumulate(losses.begin(), losses.begin() + 5, 0.0) / 5;
  const double last = std::accumulate(losses.end() - 5, losses.end(), 0.0) / 5;
  EXPECT_LT(last, first * 0.6) << "first batches " << first << ", last batches " << last;

  model.eval();
  std::int64_t correct = 0;
  data::BatchIterator test_batches(test, 500, false);
  while (test_batches.next(b)) correct += nn::correct_count(model(b.images), b.labels)
                                              .item<std::int64_t>();
  const double accuracy = static_cast<double>(correct) / test.size();
  EXPECT_GT(accuracy, 0.55);  // chance is 0.1
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ quick training: loss %.3f -> %.3f, test accuracy %.3f, %.1f s ]\n", first, last,
              accuracy, seconds);
}

}  // namespace
