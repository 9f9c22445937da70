// Frozen parameters (requires_grad false), ModuleList and ModuleDict.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::ErrorCode;
using kiln::Tensor;
using kiln_test::code_of;

// A module with a hand-written forward over a ModuleList.
class TwoLayers : public kiln::nn::Module {
 public:
  TwoLayers() {
    layers_->push_back(kiln::nn::Linear(3, 4));
    layers_->push_back(kiln::nn::Linear(4, 2));
    register_module("layers", layers_);
  }
  Tensor forward(const Tensor& x) override {
    return (*layers_)[1](kiln::relu((*layers_)[0](x)));
  }
  std::string describe() const override { return "TwoLayers"; }
  kiln::nn::ModuleList& layers() { return *layers_; }

 private:
  std::shared_ptr<kiln::nn::ModuleList> layers_ = std::make_shared<kiln::nn::ModuleList>();
};

TEST(NnFreezing, ModuleListHoldsModulesForAHandWrittenForward) {
  kiln::manual_seed(1);
  TwoLayers model;
  const auto named = model.named_parameters();
  ASSERT_EQ(named.size(), 4u);
  EXPECT_EQ(named[0].first, "layers.0.weight");
  EXPECT_EQ(named[3].first, "layers.1.bias");
  EXPECT_EQ(model(kiln::ones({5, 3})).shape(), (kiln::Shape{5, 2}));
  EXPECT_EQ(model.layers().size(), 2u);
  EXPECT_EQ(code_of([&] { (void)model.layers()[2]; }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)model.layers()(kiln::ones({1, 3})); }), ErrorCode::invalid_select);
}

TEST(NnFreezing, FrozenParametersStayAsTheyAre) {
  kiln::manual_seed(2);
  TwoLayers model;
  model.layers()[0].set_requires_grad(false);  // freeze the first layer
  const auto params = model.parameters();
  std::vector<std::vector<float>> before;
  for (const auto& p : params) before.push_back(p.value().to_vector<float>());
  EXPECT_FALSE(params[0].requires_grad());
  EXPECT_TRUE(params[2].requires_grad());
  kiln::nn::SGD sgd(params, {.lr = 0.1});
  const Tensor x = kiln::uniform({8, 3}, 3);
  for (int i = 0; i < 3; ++i) {
    kiln::GradientContext context;
    sgd.step(kiln::sum(kiln::square(model(x))));
  }
  EXPECT_EQ(params[0].value().to_vector<float>(), before[0]);
  EXPECT_EQ(params[1].value().to_vector<float>(), before[1]);
  EXPECT_NE(params[2].value().to_vector<float>(), before[2]);
  // step() after backward() leaves them alone too; unfreezing trains them again.
  {
    kiln::GradientContext context;
    kiln::sum(kiln::square(model(x))).backward();
  }
  sgd.step();
  EXPECT_EQ(params[0].value().to_vector<float>(), before[0]);
  model.set_requires_grad(true);
  sgd.zero_grad();
  {
    kiln::GradientContext context;
    sgd.step(kiln::sum(kiln::square(model(x))));
  }
  EXPECT_NE(params[0].value().to_vector<float>(), before[0]);
}

// Two heads chosen by name, as a multi-task model would.
class Heads : public kiln::nn::Module {
 public:
  Heads() {
    heads_->insert("classify", kiln::nn::Linear(3, 4)).insert("regress", kiln::nn::Linear(3, 1));
    register_module("heads", heads_);
  }
  Tensor forward(const Tensor& x) override { return (*heads_)["regress"](x); }
  std::string describe() const override { return "Heads"; }
  kiln::nn::ModuleDict& heads() { return *heads_; }

 private:
  std::shared_ptr<kiln::nn::ModuleDict> heads_ = std::make_shared<kiln::nn::ModuleDict>();
};

TEST(NnFreezing, ModuleDictHoldsModulesByName) {
  kiln::manual_seed(3);
  Heads model;
  const auto named = model.named_parameters();
  ASSERT_EQ(named.size(), 4u);
  EXPECT_EQ(named[0].first, "heads.classify.weight");
  EXPECT_EQ(named[3].first, "heads.regress.bias");
  EXPECT_EQ(model.heads().keys(), (std::vector<std::string>{"classify", "regress"}));
  EXPECT_TRUE(model.heads().contains("classify"));
  EXPECT_FALSE(model.heads().contains("segment"));
  EXPECT_EQ(model(kiln::ones({5, 3})).shape(), (kiln::Shape{5, 1}));
  EXPECT_EQ(model.heads()["classify"](kiln::ones({5, 3})).shape(), (kiln::Shape{5, 4}));
  try {
    (void)model.heads()["segment"];
    ADD_FAILURE() << "an absent name was found";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_select);
    EXPECT_NE(std::string(e.what()).find("'segment' (it has 'classify', 'regress')"),
              std::string::npos)
        << e.what();
  }
  // Names keep parameter paths unique.
  EXPECT_EQ(code_of([&] { model.heads().insert("classify", kiln::nn::Linear(1, 1)); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { model.heads().insert("a.b", kiln::nn::Linear(1, 1)); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { model.heads().insert("", kiln::nn::Linear(1, 1)); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(model.heads().size(), 2u);
  EXPECT_EQ(code_of([&] { (void)model.heads()(kiln::ones({1, 3})); }), ErrorCode::invalid_select);
}

}  // namespace
