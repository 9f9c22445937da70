// kiln/losses.hpp against the definitions, evaluated here element by element in double, with
// hand values, every reduction and the errors of inputs that do not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/losses.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using kiln::nn::ClassLossOptions;
using kiln::nn::Reduction;
using kiln_test::code_of;
using F64 = std::vector<double>;

F64 values(const Tensor& t) { return kiln::convert(t, DType::f64).to_vector<double>(); }
double value(const Tensor& t) { return kiln::convert(t, DType::f64).item<double>(); }

void expect_near(const F64& got, const F64& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

double total(const F64& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

Tensor input() { return kiln::tensor({0.5, -1.0, 2.0, 3.0}, kiln::DType::f64); }
Tensor target() { return kiln::tensor({1.0, -1.0, 0.0, 0.5}, kiln::DType::f64); }

TEST(Losses, ElementwiseLossesAndReductions) {
  // d = |input - target| = 0.5, 0, 2, 2.5
  const F64 squared{0.25, 0, 4, 6.25}, absolute{0.5, 0, 2, 2.5};
  expect_near(values(kiln::nn::mse_loss(input(), target(), Reduction::none)), squared);
  EXPECT_DOUBLE_EQ(value(kiln::nn::mse_loss(input(), target())), total(squared) / 4);
  EXPECT_DOUBLE_EQ(value(kiln::nn::mse_loss(input(), target(), Reduction::sum)), total(squared));
  EXPECT_DOUBLE_EQ(value(kiln::nn::l1_loss(input(), target())), total(absolute) / 4);
  // smooth_l1 (beta 1): 0.5 d^2 below 1, d - 0.5 above.
  expect_near(values(kiln::nn::smooth_l1_loss(input(), target(), Reduction::none)),
              {0.125, 0, 1.5, 2.0});
  // beta 0 is l1; beta 4: 0.5 d^2 / 4 everywhere here.
  expect_near(values(kiln::nn::smooth_l1_loss(input(), target(), Reduction::none, 0)), absolute);
  expect_near(values(kiln::nn::smooth_l1_loss(input(), target(), Reduction::none, 4)),
              {0.03125, 0, 0.5, 0.78125});
  // huber (delta 2): 0.5 d^2 below 2, 2 (d - 1) from 2 on.
  expect_near(values(kiln::nn::huber_loss(input(), target(), Reduction::none, 2)),
              {0.125, 0, 2, 3});
  // f32 stays f32, and an f64 target is taken in the input's type.
  const Tensor f = kiln::nn::mse_loss(kiln::convert(input(), DType::f32), target());
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_FLOAT_EQ(f.item<float>(), static_cast<float>(total(squared) / 4));
}

TEST(Losses, BinaryCrossEntropy) {
  const Tensor p = kiln::tensor({0.9, 0.2, 1.0, 0.0}, kiln::DType::f64);
  const Tensor t = kiln::tensor({1.0, 0.0, 0.0, 0.0}, kiln::DType::f64);
  // A certain wrong answer costs 100 (the log is clamped), a certain right one 0.
  expect_near(values(kiln::nn::binary_cross_entropy(p, t, Reduction::none)),
              {-std::log(0.9), -std::log(0.8), 100, 0});
  const Tensor w = kiln::tensor({2.0, 1.0, 0.5, 1.0}, kiln::DType::f64);
  EXPECT_NEAR(value(kiln::nn::binary_cross_entropy(p, t, Reduction::sum, w)),
              -2 * std::log(0.9) - std::log(0.8) + 50, 1e-12);
  // With logits: the same as of sigmoid(x) where that is representable, finite where it is not.
  const Tensor x = kiln::tensor({-3.0, 0.0, 2.5, 100.0, -100.0}, kiln::DType::f64);
  const Tensor y = kiln::tensor({0.0, 1.0, 0.25, 0.0, 1.0}, kiln::DType::f64);
  const F64 got = values(kiln::nn::binary_cross_entropy_with_logits(x, y, Reduction::none));
  const F64 xs{-3, 0, 2.5, 100, -100}, ys{0, 1, 0.25, 0, 1};
  for (std::size_t i = 0; i < 3; ++i) {
    const double s = 1 / (1 + std::exp(-xs[i]));
    EXPECT_NEAR(got[i], -(ys[i] * std::log(s) + (1 - ys[i]) * std::log(1 - s)), 1e-12);
  }
  EXPECT_NEAR(got[3], 100, 1e-12);
  EXPECT_NEAR(got[4], 100, 1e-12);
  // pos_weight multiplies the positive term: -(pw t log s + (1 - t) log(1 - s)).
  const Tensor pw = kiln::full({5}, 3.0, DType::f64);
  const F64 weighted =
      values(kiln::nn::binary_cross_entropy_with_logits(x, y, Reduction::none, pw));
  for (std::size_t i = 0; i < 3; ++i) {
    const double s = 1 / (1 + std::exp(-xs[i]));
    EXPECT_NEAR(weighted[i], -(3 * ys[i] * std::log(s) + (1 - ys[i]) * std::log(1 - s)), 1e-12);
  }
}

// log-probabilities of 3 samples over 3 classes.
Tensor log_probabilities() {
  return kiln::log_softmax(kiln::tensor({{1.0, 2.0, 0.5}, {0.1, -1.0, 3.0}, {2.0, 2.0, -2.0}}, kiln::DType::f64), 1);
}

TEST(Losses, NllLossWithWeightsAndIgnoredLabels) {
  const Tensor kLogp = log_probabilities();
  const F64 lp = values(kLogp);
  const Tensor labels = Tensor::from(std::vector<std::int64_t>{0, 2, -100});
  // Unweighted mean over the two samples that count.
  EXPECT_NEAR(value(kiln::nn::nll_loss(kLogp, labels)), -(lp[0] + lp[5]) / 2, 1e-12);
  ClassLossOptions o;
  o.weight = kiln::tensor({1.0, 2.0, 3.0}, kiln::DType::f64);
  EXPECT_NEAR(value(kiln::nn::nll_loss(kLogp, labels, o)), -(1 * lp[0] + 3 * lp[5]) / 4, 1e-12);
  o.reduction = Reduction::none;
  expect_near(values(kiln::nn::nll_loss(kLogp, labels, o)), {-lp[0], -3 * lp[5], 0});
  o.reduction = Reduction::sum;
  EXPECT_NEAR(value(kiln::nn::nll_loss(kLogp, labels, o)), -(lp[0] + 3 * lp[5]), 1e-12);
  // i32 labels and another ignore_index.
  ClassLossOptions skip1;
  skip1.ignore_index = 1;
  const Tensor l32 = Tensor::from(std::vector<std::int32_t>{1, 1, 2});
  EXPECT_NEAR(value(kiln::nn::nll_loss(kLogp, l32, skip1)), -lp[8], 1e-12);
}

TEST(Losses, CrossEntropyWithLabelSmoothing) {
  const Tensor logits = kiln::tensor({{1.0, 2.0, 0.5}, {0.1, -1.0, 3.0}, {2.0, 2.0, -2.0}}, kiln::DType::f64);
  const F64 lp = values(log_probabilities());
  const Tensor labels = Tensor::from(std::vector<std::int64_t>{0, 2, 1});
  // Without options it is kiln::cross_entropy.
  EXPECT_NEAR(value(kiln::nn::cross_entropy(logits, labels, {})),
              value(kiln::cross_entropy(logits, labels)), 1e-12);
  // Smoothing 0.3 over 3 classes: (1 - 0.3) nll + 0.3 / 3 * mean(-sum_c log p_c).
  ClassLossOptions o;
  o.label_smoothing = 0.3;
  const double nll = -(lp[0] + lp[5] + lp[7]) / 3;
  const double smooth = -total(lp) / 3;
  EXPECT_NEAR(value(kiln::nn::cross_entropy(logits, labels, o)), 0.7 * nll + 0.1 * smooth, 1e-12);
  // With class weights and an ignored sample, both terms are normalised by the counted weights.
  o.weight = kiln::tensor({1.0, 2.0, 3.0}, kiln::DType::f64);
  const Tensor some = Tensor::from(std::vector<std::int64_t>{0, 2, -100});
  const double wsum = 1 + 3;
  const double wnll = -(1 * lp[0] + 3 * lp[5]) / wsum;
  double wsmooth = 0;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c) wsmooth -= (c + 1) * lp[static_cast<std::size_t>(3 * n + c)];
  EXPECT_NEAR(value(kiln::nn::cross_entropy(logits, some, o)),
              0.7 * wnll + 0.1 * wsmooth / wsum, 1e-12);
}

TEST(Losses, KlDivergence) {
  const Tensor q = kiln::tensor({{0.5, 0.25, 0.25}, {0.1, 0.6, 0.3}}, kiln::DType::f64);
  const Tensor p = kiln::tensor({{0.0, 0.5, 0.5}, {0.2, 0.2, 0.6}}, kiln::DType::f64);
  const F64 qs{0.5, 0.25, 0.25, 0.1, 0.6, 0.3}, ps{0, 0.5, 0.5, 0.2, 0.2, 0.6};
  F64 want;
  for (std::size_t i = 0; i < qs.size(); ++i)
    want.push_back(ps[i] == 0 ? 0 : ps[i] * (std::log(ps[i]) - std::log(qs[i])));
  const Tensor logq = kiln::log(q);
  expect_near(values(kiln::nn::kl_div(logq, p, Reduction::none)), want);
  EXPECT_NEAR(value(kiln::nn::kl_div(logq, p)), total(want) / 6, 1e-12);
  EXPECT_NEAR(value(kiln::nn::kl_div(logq, p, Reduction::batchmean)), total(want) / 2, 1e-12);
  // log_target: the target as log-probabilities gives the same where p > 0.
  const Tensor logp = kiln::log(kiln::tensor({0.25, 0.75}, kiln::DType::f64));
  EXPECT_NEAR(value(kiln::nn::kl_div(kiln::log(kiln::tensor({0.5, 0.5}, kiln::DType::f64)), logp, Reduction::sum,
                                     true)),
              0.25 * std::log(0.5) + 0.75 * std::log(1.5), 1e-12);
}

TEST(Losses, InputsThatDoNotFitAreErrors) {
  EXPECT_EQ(code_of([] { (void)kiln::nn::mse_loss(input(), kiln::tensor({1.0, 2.0}, kiln::DType::f64)); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([] {
              (void)kiln::nn::l1_loss(Tensor::from(std::vector<std::int32_t>{1, 2}),
                                      Tensor::from(std::vector<std::int32_t>{1, 2}));
            }),
            ErrorCode::wrong_type);
  EXPECT_EQ(code_of([] { (void)kiln::nn::mse_loss(input(), target(), Reduction::batchmean); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([] { (void)kiln::nn::smooth_l1_loss(input(), target(), {}, -1); }),
            ErrorCode::invalid_select);
  const Tensor kLogp = log_probabilities();
  const Tensor labels = Tensor::from(std::vector<std::int64_t>{0, 1, 2});
  EXPECT_EQ(code_of([&] { (void)kiln::nn::nll_loss(kLogp, kiln::tensor({0.0, 1.0, 2.0}, kiln::DType::f64)); }),
            ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { (void)kiln::nn::nll_loss(kLogp, Tensor::from(std::vector<std::int64_t>{0, 1})); }),
            ErrorCode::incompatible_shapes);
  ClassLossOptions bad_weight;
  bad_weight.weight = kiln::tensor({1.0, 2.0}, kiln::DType::f64);
  EXPECT_EQ(code_of([&] { (void)kiln::nn::nll_loss(kLogp, labels, bad_weight); }),
            ErrorCode::incompatible_shapes);
  ClassLossOptions too_smooth;
  too_smooth.label_smoothing = 1.5;
  EXPECT_EQ(code_of([&] { (void)kiln::nn::cross_entropy(kLogp, labels, too_smooth); }),
            ErrorCode::invalid_select);
  try {
    (void)kiln::nn::huber_loss(input(), kiln::zeros({2, 2}, DType::f64));
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("huber_loss"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2,2]"), std::string::npos) << e.what();
  }
}

}  // namespace
