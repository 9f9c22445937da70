// The device model: x.to(device) and module.to(device) place tensors on an executor, every
// computation with them (a training step included) runs there, mixing devices in one op is an
// error naming both, and a DeviceGuard picks the executor of a block's unplaced computations.
#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Tensor;
namespace nn = kiln::nn;
using kiln_test::error_of;

// The CPU executor under another name, counting what it is asked to compute: where a
// computation ran is then visible, and its values are the CPU executor's own.
class CountingExecutor final : public kiln::Executor {
 public:
  explicit CountingExecutor(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  void execute(std::span<kiln::detail::Node* const> targets) override {
    ++runs;
    inner_->execute(targets);
  }
  void place(std::span<kiln::detail::Node* const> targets) override { inner_->place(targets); }
  bool holds(const kiln::detail::Node& node) const override { return inner_->holds(node); }

  int runs = 0;

 private:
  std::string name_;
  std::shared_ptr<kiln::Executor> inner_ = kiln::cpu_executor();
};

Tensor data() { return Tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3}); }

TEST(Devices, ComputationRunsWhereItsInputsLive) {
  auto counting = std::make_shared<CountingExecutor>("counting");
  const Device device(counting);
  const Tensor x = data().to(device);
  EXPECT_TRUE(x.is_placed());
  EXPECT_EQ(x.device(), device);
  const int after_move = counting->runs;

  const Tensor y = (x * 2.0f + 1.0f).sum(1);  // the scalars follow x
  EXPECT_TRUE(y.is_placed());
  EXPECT_EQ(y.device(), device);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{15, 33}));
  EXPECT_GT(counting->runs, after_move);

  // Unplaced computations stay on the current executor.
  const int before = counting->runs;
  const Tensor z = (data() * 2.0f).sum();
  EXPECT_FALSE(z.is_placed());
  EXPECT_EQ(z.device(), Device(kiln::current_executor()));
  EXPECT_EQ(z.item<float>(), 42.0f);
  EXPECT_EQ(counting->runs, before);
}

TEST(Devices, MixingDevicesInOneOpIsAnErrorNamingBoth) {
  const Tensor a = data().to("cpu");
  const Tensor b = data().to("reference");
  const kiln::Error e = error_of([&] { static_cast<void>(a + b); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::device_error);
  const std::string what = e.what();
  EXPECT_NE(what.find("add"), std::string::npos) << what;
  EXPECT_NE(what.find("f32 [2,3] on cpu"), std::string::npos) << what;
  EXPECT_NE(what.find("f32 [2,3] on reference"), std::string::npos) << what;
  // Moving one operand resolves it; unplaced operands follow the placed one.
  EXPECT_EQ((a + b.to("cpu")).device(), Device("cpu"));
  EXPECT_EQ((b + data()).device(), Device("reference"));
  EXPECT_EQ((b + data()).to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
}

TEST(Devices, AMoveSharesValuesAndKeepsTheSource) {
  const Tensor x = data();
  const Tensor moved = x.to("reference");
  EXPECT_FALSE(x.is_placed());
  EXPECT_EQ(moved.to_vector<float>(), x.to_vector<float>());
  EXPECT_TRUE(moved.same_node(moved.to("reference")));  // already there
  EXPECT_TRUE(moved.detach().is_placed());               // detach keeps the device
  const Tensor both = x.to("reference", DType::f64);
  EXPECT_EQ(both.dtype(), DType::f64);
  EXPECT_EQ(both.device(), Device("reference"));
}

TEST(Devices, NamesAndEmptyExecutorsAreCheckedAsFindExecutorDoes) {
  EXPECT_EQ(error_of([] { Device("nowhere"); }).code(), kiln::ErrorCode::invalid_select);
  EXPECT_EQ(error_of([] { Device(std::shared_ptr<kiln::Executor>()); }).code(),
            kiln::ErrorCode::invalid_select);
  EXPECT_EQ(Device("cpu").name(), "cpu");
  EXPECT_EQ(Device("cpu"), Device(kiln::cpu_executor()));
  EXPECT_FALSE(Device("cpu") == Device("reference"));
}

TEST(Devices, GradientsDoNotPassThroughAMoveSoSuchMovesAreRefused) {
  const Tensor w = data();
  w.watch();
  EXPECT_EQ(error_of([&] { static_cast<void>(w.to("reference")); }).code(),
            kiln::ErrorCode::device_error);
  Tensor h;
  {
    kiln::GradientContext ctx;
    h = data() * w;
    const kiln::Error e = error_of([&] { static_cast<void>(h.to("reference")); });
    EXPECT_EQ(e.code(), kiln::ErrorCode::device_error);
    EXPECT_NE(std::string(e.what()).find("to: f32 [2,3] to reference"), std::string::npos)
        << e.what();
    // Data built in the context moves, computed or not: no gradient reaches it.
    EXPECT_TRUE(data().to("reference").is_placed());
    EXPECT_TRUE((data() * 2.0f).to("reference").is_placed());
  }
}

TEST(Devices, AGuardChoosesTheExecutorOfUnplacedComputationsInItsBlock) {
  auto guarded = std::make_shared<CountingExecutor>("guarded");
  auto placed = std::make_shared<CountingExecutor>("placed");
  const Tensor on_placed = data().to(Device(placed));
  const auto outside = kiln::current_executor();
  {
    const kiln::DeviceGuard guard{Device(guarded)};
    EXPECT_EQ(kiln::current_executor(), guarded);
    EXPECT_EQ((data() * 3.0f).sum().item<float>(), 63.0f);
    EXPECT_GT(guarded->runs, 0);
    // A placed tensor keeps computing where it lives.
    const int guarded_runs = guarded->runs;
    const int placed_runs = placed->runs;
    EXPECT_EQ((on_placed * 3.0f).sum().item<float>(), 63.0f);
    EXPECT_EQ(guarded->runs, guarded_runs);
    EXPECT_GT(placed->runs, placed_runs);
    {
      const kiln::DeviceGuard inner{Device("reference")};
      EXPECT_EQ(kiln::current_executor(), kiln::reference_executor());
    }
    EXPECT_EQ(kiln::current_executor(), guarded);
  }
  EXPECT_EQ(kiln::current_executor(), outside);
  const int runs = guarded->runs;
  EXPECT_EQ((data() * 3.0f).sum().item<float>(), 63.0f);
  EXPECT_EQ(guarded->runs, runs);
}

struct Net : nn::Module {
  std::shared_ptr<nn::Linear> a = std::make_shared<nn::Linear>(3, 4);
  std::shared_ptr<nn::Linear> b = std::make_shared<nn::Linear>(4, 1);
  Net() {
    register_module("a", a);
    register_module("b", b);
  }
  Tensor forward(const Tensor& x) override { return (*b)(kiln::tanh((*a)(x))); }
  std::string describe() const override { return "Net"; }
};

// Ten Adam steps on `device` (null: unplaced); the losses.
std::vector<double> train(const Device* device, Net& net) {
  Tensor x = Tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 0, 1}, {4, 3});
  Tensor y = Tensor::from<float>({1, 2, 3, 4}, {4, 1});
  if (device != nullptr) {
    net.to(*device);
    x = x.to(*device);
    y = y.to(*device);
  }
  nn::Adam opt(net.parameters(), {.lr = 0.01});
  std::vector<double> losses;
  for (int step = 0; step < 10; ++step) {
    Tensor loss;
    {
      kiln::GradientContext ctx;
      loss = nn::mse_loss(net(x), y);
    }
    losses.push_back(loss.item<double>());
    opt.step(loss);
  }
  return losses;
}

TEST(Devices, AModuleMovedToADeviceTrainsThere) {
  kiln::manual_seed(5);
  Net unplaced;
  kiln::manual_seed(5);
  Net moved;
  auto counting = std::make_shared<CountingExecutor>("counting");
  const Device device(counting);
  const std::vector<double> expected = train(nullptr, unplaced);
  const std::vector<double> losses = train(&device, moved);
  EXPECT_EQ(losses, expected);
  EXPECT_GT(counting->runs, 10);  // the forward passes, gradients and optimiser steps
  for (const auto& [name, p] : moved.named_parameters()) {
    EXPECT_TRUE(p.value().is_placed()) << name;
    EXPECT_EQ(p.value().device(), device) << name;
  }
  // Data on another device is refused by name.
  const kiln::Error e = error_of([&] {
    static_cast<void>(moved(Tensor::from<float>({1, 2, 3}, {1, 3}).to("reference")));
  });
  EXPECT_EQ(e.code(), kiln::ErrorCode::device_error);
  EXPECT_NE(std::string(e.what()).find("counting"), std::string::npos) << e.what();
}

TEST(Devices, NewParameterValuesStayOnTheParametersDevice) {
  nn::Linear lin(2, 1);
  lin.to(Device("reference"));
  lin.weight().copy_(Tensor::from<double>({1, 2}, {1, 2}));
  EXPECT_EQ(lin.weight().value().device(), Device("reference"));
  EXPECT_EQ(lin.weight().value().to_vector<float>(), (std::vector<float>{1, 2}));
  lin.weight().set(Tensor::from<float>({3, 4}, {1, 2}).to("cpu"));
  EXPECT_EQ(lin.weight().value().device(), Device("reference"));
  EXPECT_TRUE(lin.weight().value().is_watched());
  lin.to(DType::f64);
  EXPECT_EQ(lin.weight().value().device(), Device("reference"));
  // An unplaced parameter stays unplaced whatever device its new value comes from.
  nn::Linear unplaced(2, 1);
  unplaced.weight().copy_(Tensor::from<float>({1, 2}, {1, 2}).to("reference"));
  EXPECT_FALSE(unplaced.weight().value().is_placed());
  EXPECT_EQ(unplaced.weight().value().to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(Devices, GradientsStayOnTheirVariablesDevice) {
  const Tensor w = data().to("reference");
  w.watch();
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = (w * w).sum();
  }
  loss.backward();
  EXPECT_EQ(w.grad().device(), Device("reference"));
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(kiln::constant(w).device(), Device("reference"));
}

TEST(Devices, ACompiledFunctionRunsWhereItsOutputsLive) {
  auto counting = std::make_shared<CountingExecutor>("counting");
  const Tensor w = data().to(Device(counting));
  const Tensor in = kiln::placeholder({2, 3}, DType::f32);
  const kiln::Function f = kiln::compile({in}, {(in * w).sum()});
  const int before = counting->runs;
  EXPECT_EQ(f({data()})[0].item<float>(), 91.0f);
  EXPECT_GT(counting->runs, before);
  // Outputs on two devices: the function has nowhere to run unless told.
  const Tensor r = data().to("reference");
  const kiln::Error e = error_of([&] { kiln::compile({in}, {(in * w).sum(), (in * r).sum()}); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::device_error);
  EXPECT_NE(std::string(e.what()).find("counting and reference"), std::string::npos) << e.what();
}

TEST(Devices, OpenClTrainsAModuleMovedToIt) {
  std::shared_ptr<kiln::Executor> opencl;
  try {
    opencl = kiln::opencl_executor();
  } catch (const kiln::Error& e) {
    GTEST_SKIP() << "no OpenCL device: " << e.what();
  }
  kiln::manual_seed(9);
  Net unplaced;
  kiln::manual_seed(9);
  Net moved;
  const Device device(opencl);
  const std::vector<double> expected = train(nullptr, unplaced);
  const std::vector<double> losses = train(&device, moved);
  ASSERT_EQ(losses.size(), expected.size());
  for (std::size_t i = 0; i < losses.size(); ++i)
    EXPECT_NEAR(losses[i], expected[i], 1e-4 * (1 + expected[i])) << "step " << i;
  for (const auto& [name, p] : moved.named_parameters()) {
    EXPECT_EQ(p.value().device(), device) << name;
    EXPECT_TRUE(p.value().is_on(*opencl)) << name;  // updated on the device
  }
}

}  // namespace
