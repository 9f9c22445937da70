// A parameter's tensor kept in a member (libtorch's idiom) trains, and modules have one floating
// type that data must match: f32 by default, any other with module.to(dtype).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;
namespace nn = kiln::nn;
using kiln_test::error_of;

// libtorch's usual module: the parameter lives in a Tensor member.
struct LinearModel : nn::Module {
  Tensor w;
  LinearModel() { w = register_parameter("w", kiln::zeros({3, 1})); }
  Tensor forward(const Tensor& x) override { return kiln::matmul(x, w); }
  std::string describe() const override { return "LinearModel"; }
};

// The same model reading its Parameter each time: the losses the member must reproduce.
struct ParameterModel : nn::Module {
  nn::Parameter w;
  ParameterModel() { w = register_parameter("w", kiln::zeros({3, 1})); }
  Tensor forward(const Tensor& x) override { return kiln::matmul(x, w.value()); }
  std::string describe() const override { return "ParameterModel"; }
};

double mse_step(nn::Module& m, nn::Optimizer& opt, const Tensor& x, const Tensor& y) {
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = nn::mse_loss(m(x), y);
  }
  const double value = loss.item<double>();
  opt.step(loss);
  return value;
}

TEST(NnParameterHandles, ATensorMemberSeesEveryOptimiserStep) {
  LinearModel m;
  const Tensor x = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 0, 1}, {4, 3});
  const Tensor y = Tensor::from<float>({1, 2, 3, 4}, {4, 1});
  nn::SGD opt(m.parameters(), {.lr = 0.01});
  const double first = mse_step(m, opt, x, y);
  EXPECT_NEAR(first, 7.5, 1e-6);  // zeros: the mean of 1, 4, 9, 16
  ParameterModel reference;
  nn::SGD reference_opt(reference.parameters(), {.lr = 0.01});
  EXPECT_EQ(mse_step(reference, reference_opt, x, y), first);
  double last = first;
  for (int i = 0; i < 99; ++i) {
    last = mse_step(m, opt, x, y);
    EXPECT_EQ(last, mse_step(reference, reference_opt, x, y)) << "step " << i + 1;
  }
  EXPECT_LT(last, 0.5 * first);
  // The member and the registered parameter are one value.
  EXPECT_EQ(m.w.to_vector<float>(), m.parameters()[0].value().to_vector<float>());
  EXPECT_TRUE(m.w.same_node(m.parameters()[0].value()));
}

TEST(NnParameterHandles, CopiesOfAParameterReadItsCurrentValue) {
  nn::Linear lin(2, 1);
  Tensor copy = lin.weight();               // through the conversion
  const Tensor copy2 = lin.parameters()[0].value();  // through value()
  lin.weight().set(Tensor::from<float>({5, 6}, {1, 2}));
  EXPECT_EQ(copy.to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(copy2.to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_TRUE(copy.is_variable_handle());
  // A computation reads the value it was built from: graphs stay immutable.
  const Tensor doubled = copy * 2.0f;
  lin.weight().set(Tensor::from<float>({1, 1}, {1, 2}));
  EXPECT_EQ(doubled.to_vector<float>(), (std::vector<float>{10, 12}));
  // detach() gives a plain tensor, and assigning another tensor rebinds the handle.
  const Tensor frozen = copy.detach();
  lin.weight().set(Tensor::from<float>({7, 8}, {1, 2}));
  EXPECT_EQ(frozen.to_vector<float>(), (std::vector<float>{1, 1}));
  copy = kiln::zeros({3});
  EXPECT_FALSE(copy.is_variable_handle());
  EXPECT_EQ(lin.weight().value().to_vector<float>(), (std::vector<float>{7, 8}));
}

TEST(NnParameterHandles, GradientsThroughAMemberReachTheParameter) {
  LinearModel m;
  const Tensor x = Tensor::from<float>({1, 2, 3}, {1, 3});
  Tensor out;
  {
    kiln::GradientContext ctx;
    out = m(x).sum();
  }
  out.backward();
  EXPECT_EQ(m.parameters()[0].grad().to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(m.w.grad().to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(NnModuleDtype, DataOfAnotherTypeIsAnErrorNamingTheLayerAndBothTypes) {
  nn::Linear lin(3, 2);
  const kiln::Error e = error_of([&] { lin(kiln::ones({4, 3}, DType::f64)); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::wrong_type);
  const std::string what = e.what();
  EXPECT_NE(what.find("Linear(3 -> 2"), std::string::npos) << what;
  EXPECT_NE(what.find("f64"), std::string::npos) << what;
  EXPECT_NE(what.find("f32"), std::string::npos) << what;
  nn::Conv2d conv(1, 2, 3);
  EXPECT_EQ(error_of([&] { conv(kiln::ones({1, 1, 5, 5}, DType::f64)); }).code(),
            kiln::ErrorCode::wrong_type);
}

TEST(NnModuleDtype, SetRefusesAnotherTypeAndCopyConverts) {
  nn::Linear lin(2, 1, false);
  const kiln::Error e =
      error_of([&] { lin.weight().set(Tensor::from<double>({0.1, 0.2}, {1, 2})); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::wrong_type);
  EXPECT_NE(std::string(e.what()).find("'weight' is f32, the new value f64"), std::string::npos)
      << e.what();
  lin.weight().copy_(Tensor::from<double>({0.1, 0.2}, {1, 2}));
  EXPECT_EQ(lin.weight().dtype(), DType::f32);
  EXPECT_FLOAT_EQ(lin.weight().value().to_vector<float>()[1], 0.2f);
}

TEST(NnModuleDtype, AModelConvertedToF64ComputesAndTrainsInF64) {
  nn::manual_seed(3);
  nn::Sequential model(nn::Linear(3, 4), nn::Tanh(), nn::Linear(4, 1));
  model.to(DType::f64);
  for (const auto& p : model.parameters()) EXPECT_EQ(p.dtype(), DType::f64);
  const Tensor x = Tensor::from<double>({0.1, 0.2, 0.3, -1, 0.5, 2}, {2, 3});
  const Tensor y = Tensor::from<double>({1, -1}, {2, 1});
  // f64's precision: the forward pass equals the same arithmetic done here in double.
  const auto w1 = model.parameters()[0].value().to_vector<double>();
  const auto b1 = model.parameters()[1].value().to_vector<double>();
  const auto w2 = model.parameters()[2].value().to_vector<double>();
  const auto b2 = model.parameters()[3].value().to_vector<double>();
  const auto xs = x.to_vector<double>();
  const Tensor out = model(x);
  EXPECT_EQ(out.dtype(), DType::f64);
  const auto got = out.to_vector<double>();
  for (int n = 0; n < 2; ++n) {
    double o = b2[0];
    for (int j = 0; j < 4; ++j) {
      double h = b1[j];
      for (int k = 0; k < 3; ++k) h += xs[n * 3 + k] * w1[j * 3 + k];
      o += std::tanh(h) * w2[j];
    }
    EXPECT_NEAR(got[n], o, 1e-14);
  }
  nn::Adam opt(model.parameters(), {.lr = 0.01});
  double first = 0, last = 0;
  for (int i = 0; i < 50; ++i) {
    Tensor loss;
    {
      kiln::GradientContext ctx;
      loss = nn::mse_loss(model(x), y);
    }
    last = loss.item<double>();
    if (i == 0) first = last;
    opt.step(loss);
  }
  EXPECT_LT(last, first);
  for (const auto& p : model.parameters()) EXPECT_EQ(p.dtype(), DType::f64);
  EXPECT_EQ(error_of([&] { model(kiln::ones({2, 3})); }).code(), kiln::ErrorCode::wrong_type);
  EXPECT_EQ(error_of([&] { model.to(DType::i32); }).code(), kiln::ErrorCode::wrong_type);
}

}  // namespace
