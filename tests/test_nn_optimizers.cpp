// AdamW, RMSprop and Adagrad against torch.optim's update rules written out here in double, over
// several steps of a quadratic loss whose gradient is 2 (w - target).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::ErrorCode;
using kiln::Tensor;
using kiln_test::code_of;
using V = std::vector<double>;

const V kStart{0.5, -1.0, 2.0};
const V kTarget{1.0, 0.5, -0.5};

V gradient(const V& w) {
  V g(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) g[i] = 2 * (w[i] - kTarget[i]);
  return g;
}

// Runs `steps` fused steps of `opt` on the parameter `p` and returns its values.
V run(kiln::nn::Optimizer& opt, const kiln::nn::Parameter& p, int steps) {
  const Tensor target = Tensor::from(std::vector<float>(kTarget.begin(), kTarget.end()));
  for (int s = 0; s < steps; ++s) {
    kiln::GradientContext context;
    opt.step(kiln::sum(kiln::square(p.value() - target)));
  }
  const std::vector<float> w = p.value().to_vector<float>();
  return V(w.begin(), w.end());
}

kiln::nn::Parameter start() {
  return kiln::nn::Parameter("w", Tensor::from(std::vector<float>(kStart.begin(), kStart.end())));
}

void expect_near(const V& got, const V& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 2e-5 * (1 + std::abs(want[i]))) << "at " << i;
}

TEST(NnOptimizers, AdamWDecaysTheValueNotTheMoments) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.05;
  V w = kStart, m(3, 0), v(3, 0);
  for (int t = 1; t <= 4; ++t) {
    const V g = gradient(w);
    for (std::size_t i = 0; i < 3; ++i) {
      w[i] *= 1 - lr * wd;
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double mh = m[i] / (1 - std::pow(b1, t)), vh = v[i] / (1 - std::pow(b2, t));
      w[i] -= lr * mh / (std::sqrt(vh) + eps);
    }
  }
  const kiln::nn::Parameter p = start();
  kiln::nn::AdamW opt({p}, {.lr = lr, .weight_decay = wd});
  expect_near(run(opt, p, 4), w);
}

TEST(NnOptimizers, RMSpropPlainCenteredAndWithMomentum) {
  for (const bool centered : {false, true})
    for (const double momentum : {0.0, 0.8}) {
      SCOPED_TRACE(std::string(centered ? "centered" : "plain") + ", momentum " +
                   std::to_string(momentum));
      const double lr = 0.01, alpha = 0.9, eps = 1e-8, wd = 0.1;
      V w = kStart, sq(3, 0), ga(3, 0), buf(3, 0);
      for (int t = 1; t <= 4; ++t) {
        V g = gradient(w);
        for (std::size_t i = 0; i < 3; ++i) {
          g[i] += wd * w[i];
          sq[i] = alpha * sq[i] + (1 - alpha) * g[i] * g[i];
          double avg;
          if (centered) {
            ga[i] = alpha * ga[i] + (1 - alpha) * g[i];
            avg = std::sqrt(sq[i] - ga[i] * ga[i]) + eps;
          } else {
            avg = std::sqrt(sq[i]) + eps;
          }
          if (momentum > 0) {
            buf[i] = momentum * buf[i] + g[i] / avg;
            w[i] -= lr * buf[i];
          } else {
            w[i] -= lr * g[i] / avg;
          }
        }
      }
      const kiln::nn::Parameter p = start();
      kiln::nn::RMSprop opt({p}, {.lr = lr, .alpha = alpha, .eps = eps, .weight_decay = wd,
                                  .momentum = momentum, .centered = centered});
      expect_near(run(opt, p, 4), w);
    }
}

TEST(NnOptimizers, AdagradWithDecayAndInitialAccumulator) {
  const double lr = 0.5, decay = 0.1, init = 0.2, eps = 1e-10;
  V w = kStart, sum(3, init);
  for (int t = 1; t <= 4; ++t) {
    const V g = gradient(w);
    const double clr = lr / (1 + (t - 1) * decay);
    for (std::size_t i = 0; i < 3; ++i) {
      sum[i] += g[i] * g[i];
      w[i] -= clr * g[i] / (std::sqrt(sum[i]) + eps);
    }
  }
  const kiln::nn::Parameter p = start();
  kiln::nn::Adagrad opt({p}, {.lr = lr, .lr_decay = decay, .initial_accumulator_value = init});
  expect_near(run(opt, p, 4), w);
}

TEST(NnOptimizers, SgdWithDampening) {
  const double lr = 0.05, mu = 0.9, damp = 0.3;
  V w = kStart, buf(3, 0);
  for (int t = 1; t <= 4; ++t) {
    const V g = gradient(w);
    for (std::size_t i = 0; i < 3; ++i) {
      buf[i] = t == 1 ? g[i] : mu * buf[i] + (1 - damp) * g[i];
      w[i] -= lr * buf[i];
    }
  }
  const kiln::nn::Parameter p = start();
  kiln::nn::SGD opt({p}, {.lr = lr, .momentum = mu, .dampening = damp});
  expect_near(run(opt, p, 4), w);
  EXPECT_EQ(code_of([&] { kiln::nn::SGD({p}, {.momentum = 0.9, .nesterov = true, .dampening = 0.1}); }),
            ErrorCode::invalid_select);
}

TEST(NnOptimizers, BadOptionsAreErrors) {
  const kiln::nn::Parameter p = start();
  EXPECT_EQ(code_of([&] { kiln::nn::AdamW({p}, {.beta1 = 1.0}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::nn::RMSprop({p}, {.alpha = 1.5}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::nn::Adagrad({p}, {.lr = -1}); }), ErrorCode::invalid_select);
  kiln::nn::Adagrad opt({p});
  EXPECT_EQ(code_of([&] { opt.set_lr(-0.1); }), ErrorCode::invalid_select);
  opt.set_lr(0.3);
  EXPECT_EQ(opt.lr(), 0.3);
}

}  // namespace
