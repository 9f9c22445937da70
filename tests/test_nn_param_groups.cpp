// Parameter groups: a group's lr and weight decay replace the optimiser's for its parameters,
// schedules scale every group's rate, and a group's state is kept and saved like the others.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

namespace nn = kiln::nn;
using kiln::ErrorCode;
using kiln::Tensor;
using kiln_test::code_of;
using Vf = std::vector<float>;

// loss = sum(a * x) + sum(b * x): both gradients are x.
void step(nn::Optimizer& opt, const nn::Parameter& a, const nn::Parameter& b, const Tensor& x) {
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = kiln::sum(a.value() * x) + kiln::sum(b.value() * x);
  }
  opt.step(loss);
}

TEST(NnParamGroups, AGroupsRateAndDecayReplaceTheOptimisers) {
  const nn::Parameter a("a", Tensor::from(Vf{1.f, 2.f}));
  const nn::Parameter b("b", Tensor::from(Vf{3.f, 4.f}));
  const Tensor x = Tensor::from(Vf{1.f, -1.f});
  nn::SGD sgd({a}, {.lr = 0.1, .weight_decay = 0.5});
  sgd.add_param_group({.parameters = {b}, .lr = 0.5, .weight_decay = 0.0});
  EXPECT_DOUBLE_EQ(sgd.lr_of(0), 0.1);
  EXPECT_DOUBLE_EQ(sgd.lr_of(1), 0.5);
  step(sgd, a, b, x);
  // a: 0.1 * (x + 0.5 a); b: 0.5 * x, no decay.
  EXPECT_EQ(a.value().to_vector<float>(), (Vf{1.f - 0.1f * 1.5f, 2.f - 0.1f * 0.f}));
  EXPECT_EQ(b.value().to_vector<float>(), (Vf{2.5f, 4.5f}));
  // A schedule halves both rates.
  nn::StepLR halve(sgd, 1, 0.5);
  halve.step();
  EXPECT_DOUBLE_EQ(sgd.lr_of(0), 0.05);
  EXPECT_DOUBLE_EQ(sgd.lr_of(1), 0.25);
  step(sgd, a, b, x);
  EXPECT_EQ(b.value().to_vector<float>(), (Vf{2.25f, 4.75f}));
}

TEST(NnParamGroups, AGroupStepsAsAnOptimiserOfItsOwnWould) {
  kiln::manual_seed(4);
  const Tensor start_a = kiln::uniform({3}, 1), start_b = kiln::uniform({3}, 2);
  const Tensor x = kiln::uniform({3}, 3) - 0.5f;
  // One Adam with two groups ...
  const nn::Parameter a("a", start_a), b("b", start_b);
  nn::Adam both({a}, {.lr = 1e-2});
  both.add_param_group({.parameters = {b}, .lr = 1e-1});
  // ... against two Adams.
  const nn::Parameter a2("a", start_a), b2("b", start_b);
  nn::Adam only_a({a2}, {.lr = 1e-2});
  nn::Adam only_b({b2}, {.lr = 1e-1});
  for (int k = 0; k < 3; ++k) {
    step(both, a, b, x);
    Tensor la, lb;
    {
      kiln::GradientContext ctx;
      la = kiln::sum(a2.value() * x);
      lb = kiln::sum(b2.value() * x);
    }
    only_a.step(la);
    only_b.step(lb);
  }
  const Vf got_a = a.value().to_vector<float>(), want_a = a2.value().to_vector<float>();
  const Vf got_b = b.value().to_vector<float>(), want_b = b2.value().to_vector<float>();
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(got_a[i], want_a[i], 1e-6f);
    EXPECT_NEAR(got_b[i], want_b[i], 1e-6f);
  }
  // The group's state is part of the optimiser's.
  const auto state = both.state_dict();
  bool has_b = false;
  for (const auto& [name, t] : state) has_b = has_b || name == "1.exp_avg";
  EXPECT_TRUE(has_b);
}

TEST(NnParamGroups, GroupsAreChecked) {
  const nn::Parameter a("a", Tensor::from(Vf{1.f})), b("b", Tensor::from(Vf{2.f}));
  nn::SGD sgd({a}, {.lr = 0.1});
  EXPECT_EQ(code_of([&] { sgd.add_param_group({.parameters = {a}}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] {
              sgd.add_param_group({.parameters = {b, b}});
            }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { sgd.add_param_group({.parameters = {b}, .lr = -1.0}); }),
            ErrorCode::invalid_select);
  nn::SGD frozen({a}, {.lr = 0.0});
  EXPECT_EQ(code_of([&] { frozen.add_param_group({.parameters = {b}, .lr = 0.1}); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(sgd.parameters().size(), 1u);  // nothing was added by the refused groups
}

}  // namespace
