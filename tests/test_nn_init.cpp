// nn::init and Module::apply: initialisation per module type, with PyTorch's fans, bounds and
// standard deviations, drawn reproducibly from nn::manual_seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

namespace nn = kiln::nn;
using kiln::ErrorCode;
using kiln_test::code_of;

double std_of(const std::vector<float>& v) {
  double mean = 0, square = 0;
  for (float x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (float x : v) square += (x - mean) * (x - mean);
  return std::sqrt(square / static_cast<double>(v.size()));
}

TEST(NnInit, FansAreTorchs) {
  EXPECT_EQ(nn::init::fans({10, 20}), (std::pair<std::int64_t, std::int64_t>{20, 10}));
  EXPECT_EQ(nn::init::fans({8, 3, 5, 5}), (std::pair<std::int64_t, std::int64_t>{75, 200}));
  EXPECT_EQ(code_of([] { (void)nn::init::fans({7}); }), ErrorCode::illegal_dimension);
}

TEST(NnInit, ApplyInitialisesPerModuleType) {
  nn::manual_seed(5);
  nn::Sequential model(nn::Conv2d(3, 8, 5), nn::ReLU(), nn::Flatten(), nn::Linear(200, 400),
                       nn::ReLU(), nn::Linear(400, 300));
  std::vector<std::string> visited;
  model.apply([&](nn::Module& m) {
    visited.push_back(m.describe().substr(0, m.describe().find('(')));
    if (auto* l = dynamic_cast<nn::Linear*>(&m)) {
      nn::init::xavier_uniform_(l->weight());
      nn::init::zeros_(l->bias());
    } else if (auto* c = dynamic_cast<nn::Conv2d*>(&m)) {
      nn::init::kaiming_normal_(c->weight());
      nn::init::constant_(c->bias(), 0.5);
    }
  });
  // Children first, then the container (PyTorch's order).
  ASSERT_EQ(visited.size(), 7u);
  EXPECT_EQ(visited.back(), "Sequential");
  const auto& linear = dynamic_cast<nn::Linear&>(model[3]);
  const std::vector<float> w = linear.weight().value().to_vector<float>();
  const double bound = std::sqrt(6.0 / (200 + 400));
  EXPECT_LE(*std::max_element(w.begin(), w.end()), bound);
  EXPECT_GE(*std::min_element(w.begin(), w.end()), -bound);
  EXPECT_NEAR(std_of(w), bound / std::sqrt(3.0), 0.02 * bound);  // uniform's std
  const std::vector<float> b = linear.bias().value().to_vector<float>();
  EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](float x) { return x == 0; }));
  const auto& conv = dynamic_cast<nn::Conv2d&>(model[0]);
  // kaiming normal: std sqrt(2 / fan_in), fan_in = 3 * 5 * 5; 600 values, so a loose check.
  EXPECT_NEAR(std_of(conv.weight().value().to_vector<float>()), std::sqrt(2.0 / 75), 0.02);
  EXPECT_EQ(conv.bias().value().to_vector<float>(), std::vector<float>(8, 0.5f));
}

TEST(NnInit, DrawsAreReproducibleAndChecked) {
  auto draw = [] {
    nn::manual_seed(9);
    nn::Linear l(300, 200);
    nn::init::kaiming_uniform_(l.weight(), std::sqrt(5.0));
    nn::init::normal_(l.bias(), 1.0, 0.5);
    return std::pair{l.weight().value().to_vector<float>(), l.bias().value().to_vector<float>()};
  };
  const auto [w, b] = draw();
  EXPECT_EQ(draw(), std::pair(w, b));
  // a = sqrt(5): PyTorch's default bound 1 / sqrt(fan_in).
  EXPECT_LE(*std::max_element(w.begin(), w.end()), 1 / std::sqrt(300.0));
  double mean = 0;
  for (float x : b) mean += x;
  EXPECT_NEAR(mean / 200, 1.0, 0.15);
  nn::Linear l(2, 3);
  EXPECT_EQ(code_of([&] { nn::init::xavier_uniform_(l.bias()); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { nn::init::normal_(l.weight(), 0, -1); }), ErrorCode::invalid_select);
}

}  // namespace
