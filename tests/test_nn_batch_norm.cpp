// nn::BatchNorm1d / BatchNorm2d: the training-mode output and running statistics against the
// formulas computed by hand, evaluation mode, statistics computed with the next evaluation and
// kept without graph, gradients against central differences, saving and loading buffers,
// training a small network the same on every executor, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

namespace nn = kiln::nn;
using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;

struct ChannelStats {
  std::vector<double> mean, biased, unbiased;
};

// Per channel of x [N, C, S] (S: the flattened rest), in double.
ChannelStats stats_of(const std::vector<double>& x, std::int64_t n, std::int64_t c,
                      std::int64_t s) {
  ChannelStats out;
  const double count = static_cast<double>(n * s);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, squares = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < s; ++k) sum += x[static_cast<std::size_t>((i * c + ch) * s + k)];
    const double mean = sum / count;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < s; ++k) {
        const double d = x[static_cast<std::size_t>((i * c + ch) * s + k)] - mean;
        squares += d * d;
      }
    out.mean.push_back(mean);
    out.biased.push_back(squares / count);
    out.unbiased.push_back(squares / (count - 1));
  }
  return out;
}

TEST(BatchNorm, TrainingNormalisesAndMovesTheRunningStatistics) {
  const std::int64_t n = 4, c = 3, h = 2, w = 5;
  const Tensor x = kiln::uniform({n, c, h, w}, 21, DType::f32) * 6.0f - 1.0f;
  const std::vector<float> xf = x.to_vector<float>();
  const std::vector<double> xd(xf.begin(), xf.end());
  const ChannelStats st = stats_of(xd, n, c, h * w);
  nn::BatchNorm2d bn(c, {.momentum = 0.25});
  const std::vector<float> y = bn(x).to_vector<float>();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t k = 0; k < h * w; ++k) {
        const auto at = static_cast<std::size_t>((i * c + ch) * h * w + k);
        const double expected = (xd[at] - st.mean[ch]) / std::sqrt(st.biased[ch] + 1e-5);
        EXPECT_NEAR(y[at], expected, 1e-5);
      }
  // Reading y evaluated the running statistics with it.
  EXPECT_TRUE(bn.running_mean().value().is_evaluated());
  const std::vector<float> rm = bn.running_mean().value().to_vector<float>();
  const std::vector<float> rv = bn.running_var().value().to_vector<float>();
  for (std::int64_t ch = 0; ch < c; ++ch) {
    EXPECT_NEAR(rm[ch], 0.25 * st.mean[ch], 1e-6);
    EXPECT_NEAR(rv[ch], 0.75 + 0.25 * st.unbiased[ch], 1e-6);
  }
  // Evaluation mode normalises with the running statistics.
  bn.eval();
  const std::vector<float> z = bn(x).to_vector<float>();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t k = 0; k < h * w; ++k) {
        const auto at = static_cast<std::size_t>((i * c + ch) * h * w + k);
        EXPECT_NEAR(z[at], (xd[at] - rm[ch]) / std::sqrt(rv[ch] + 1e-5), 1e-5);
      }
  EXPECT_EQ(bn.describe(), "BatchNorm2d(3, eps 1e-05, momentum 0.25, affine, running stats)");
}

TEST(BatchNorm, StatisticsKeepNoGraphAcrossSteps) {
  nn::BatchNorm1d bn(4);
  nn::Linear lin(4, 2);
  nn::SGD opt(lin.parameters(), {.lr = 0.01});
  for (int step = 0; step < 30; ++step) {
    const Tensor x = kiln::uniform({8, 4}, 100 + step, DType::f32);
    Tensor loss;
    {
      kiln::GradientContext ctx;
      loss = kiln::sum(kiln::square(lin(bn(x))));
    }
    opt.step(loss);  // computes the statistics with the step
    ASSERT_TRUE(bn.running_mean().value().is_evaluated()) << step;
    ASSERT_TRUE(bn.running_var().value().inputs().empty()) << step;
  }
  EXPECT_EQ(kiln::topological_order(bn.running_mean().value()).size(), 1u);
}

TEST(BatchNorm, GradientsMatchCentralDifferences) {
  nn::BatchNorm1d bn(2);
  kiln::nn::manual_seed(3);
  const Tensor x = kiln::uniform({5, 2, 3}, 8, DType::f64);
  const Tensor r = kiln::uniform({5, 2, 3}, 9, DType::f64);
  auto loss_of = [&](const Tensor& v) { return kiln::sum(bn(v) * r); };
  Tensor loss;
  {
    kiln::GradientContext ctx;
    x.watch();
    loss = loss_of(x);
  }
  const std::vector<double> grad = kiln::gradient(loss, x).to_vector<double>();
  std::vector<double> xv = x.to_vector<double>();
  const double h = 1e-6;
  for (std::size_t i = 0; i < xv.size(); ++i) {
    std::vector<double> up = xv, down = xv;
    up[i] += h;
    down[i] -= h;
    const double numeric = (loss_of(Tensor::from(up, {5, 2, 3})).item<double>() -
                            loss_of(Tensor::from(down, {5, 2, 3})).item<double>()) /
                           (2 * h);
    EXPECT_NEAR(grad[i], numeric, 1e-6) << i;
  }
}

TEST(BatchNorm, BuffersAreSavedAndLoadedButNotTrained) {
  nn::Sequential model;
  model.add(nn::Linear(3, 4)).add(nn::BatchNorm1d(4));
  const auto buffers = model.named_buffers();
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[0].first, "1.running_mean");
  EXPECT_EQ(buffers[1].first, "1.running_var");
  for (const auto& p : model.parameters())
    EXPECT_EQ(p.name().find("running"), std::string::npos) << p.name();
  EXPECT_FALSE(buffers[0].second.value().is_watched());
  (void)model(kiln::uniform({6, 3}, 5, DType::f32)).eval();  // moves the statistics
  const std::vector<float> mean = buffers[0].second.value().to_vector<float>();
  const auto path = std::filesystem::temp_directory_path() /
                    ("kiln_bn_" + std::to_string(::getpid()) + ".kiln");
  nn::save(model, path.string());
  nn::Sequential fresh;
  fresh.add(nn::Linear(3, 4)).add(nn::BatchNorm1d(4));
  nn::load(fresh, path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(fresh.named_buffers()[0].second.value().to_vector<float>(), mean);
  EXPECT_FALSE(fresh.named_buffers()[0].second.value().is_watched());
}

TEST(BatchNorm, ASmallNetworkTrainsTheSameOnEveryExecutor) {
  std::vector<std::vector<float>> finals[2];
  const auto previous = kiln::current_executor();
  int e = 0;
  for (const auto& executor : {kiln::reference_executor(), kiln::cpu_executor()}) {
    kiln::set_executor(executor);
    nn::manual_seed(7);
    nn::Sequential model;
    // No bias before the normalisation: its gradient is zero up to rounding, which Adam would
    // turn into steps of full size in directions that differ between executors.
    model.add(nn::Conv2d(1, 4, 3, 1, 1, /*bias=*/false)).add(nn::BatchNorm2d(4)).add(nn::ReLU());
    model.add(nn::AdaptiveAvgPool2d(1)).add(nn::Flatten()).add(nn::Linear(4, 2));
    nn::Adam opt(model.parameters(), {.lr = 0.05});
    const Tensor x = kiln::uniform({8, 1, 6, 6}, 4, DType::f32);
    const Tensor labels =
        Tensor::from(std::vector<std::int64_t>{0, 1, 0, 1, 1, 0, 1, 0}, {8});
    double first = 0, last = 0;
    for (int step = 0; step < 8; ++step) {
      Tensor loss;
      {
        kiln::GradientContext ctx;
        loss = nn::cross_entropy(model(x), labels);
      }
      opt.step(loss);
      (step == 0 ? first : last) = loss.item<double>();
    }
    EXPECT_LT(last, first);
    for (const auto& [name, b] : model.named_buffers())
      finals[e].push_back(b.value().to_vector<float>());
    for (const auto& p : model.parameters()) finals[e].push_back(p.value().to_vector<float>());
    ++e;
  }
  kiln::set_executor(previous);
  ASSERT_EQ(finals[0].size(), finals[1].size());
  for (std::size_t i = 0; i < finals[0].size(); ++i)
    for (std::size_t j = 0; j < finals[0][i].size(); ++j)
      EXPECT_NEAR(finals[0][i][j], finals[1][i][j], 1e-3) << i << "," << j;
}

TEST(BatchNorm, RefusesBadInput) {
  auto code = [](auto f) { return kiln_test::code_of(f); };
  nn::BatchNorm2d bn(3);
  EXPECT_EQ(code([&] { (void)bn(kiln::zeros({2, 4, 5, 5})); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code([&] { (void)bn(kiln::zeros({3, 5, 5})); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code([&] { (void)bn(kiln::zeros({2, 3, 5, 5}, DType::i32)); }), ErrorCode::wrong_type);
  EXPECT_EQ(code([&] { (void)bn(kiln::zeros({1, 3, 1, 1})); }), ErrorCode::invalid_select);
  bn.eval();
  EXPECT_EQ(bn(kiln::zeros({1, 3, 1, 1})).shape(), (kiln::Shape{1, 3, 1, 1}));
  EXPECT_EQ(code([] { nn::BatchNorm1d bad(0); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code([] { nn::BatchNorm1d bad(2, {.momentum = 1.5}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code([] { nn::BatchNorm1d bad(2, {.eps = 0}); }), ErrorCode::invalid_select);
}

}  // namespace
