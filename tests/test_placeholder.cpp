// kiln::placeholder and kiln::constant: graphs over a symbolic input are built with their shape
// and type errors, printed and inspected, never evaluated as they are built, and evaluating one
// is an error naming the placeholder; constants hold their values and are marked in prints.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;
using Vf = std::vector<float>;

TEST(Placeholder, GraphsAreBuiltWithTheirShapesAndErrors) {
  const Tensor x = kiln::placeholder({8, 784}, DType::f32, "images");
  EXPECT_EQ(x.shape(), (kiln::Shape{8, 784}));
  EXPECT_EQ(x.name(), "images");
  EXPECT_FALSE(x.is_evaluated());
  kiln::nn::Linear layer(784, 10);
  const Tensor logits = kiln::softmax(layer(x), 1);
  EXPECT_EQ(logits.shape(), (kiln::Shape{8, 10}));
  EXPECT_EQ(logits.dtype(), DType::f32);
  // Shape and type errors still come when the op is built.
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::matmul(x, kiln::placeholder({10, 3})); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::even(x); }), ErrorCode::wrong_type);
}

TEST(Placeholder, EvaluatingAGraphThatReadsOneNamesIt) {
  const Tensor x = kiln::placeholder({2, 3}, DType::f64, "x");
  const Tensor y = kiln::exp(x) + 1.0;
  try {
    (void)y.to_vector<double>();
    ADD_FAILURE() << "a graph over a placeholder was evaluated";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_select);
    const std::string what = e.what();
    EXPECT_NE(what.find("placeholder \"x\" f64[2,3] has no values"), std::string::npos) << what;
  }
  EXPECT_EQ(kiln_test::code_of([] { (void)kiln::placeholder({}).item<float>(); }),
            ErrorCode::invalid_select);
}

TEST(Placeholder, NeverEvaluatedAsTheGraphGrows) {
  // Deep graphs outside a gradient context are evaluated as they grow, and eager mode evaluates
  // every op: neither may touch a graph over a placeholder.
  Tensor x = kiln::placeholder({4});
  for (int i = 0; i < 5000; ++i) x = x * 1.0f + 1.0f;
  EXPECT_FALSE(x.is_evaluated());
  kiln::EagerMode eager;
  const Tensor y = kiln::sin(kiln::placeholder({3}));
  EXPECT_FALSE(y.is_evaluated());
  EXPECT_TRUE(kiln::sin(Tensor::from(Vf{1.f})).is_evaluated());
}

TEST(Placeholder, PrintsSayWhatEachLeafIs) {
  const Tensor x = kiln::placeholder({3}, DType::f32, "x");
  const Tensor c = kiln::constant(Tensor::from(Vf{1.f, 2.f, 3.f}));
  const Tensor d = Tensor::from(Vf{4.f, 5.f, 6.f});
  const Tensor y = x * c + d;
  const std::string tree = kiln::debug_print(y);
  EXPECT_NE(tree.find("store f32[3] \"x\" placeholder"), std::string::npos) << tree;
  EXPECT_NE(tree.find("store f32[3] constant"), std::string::npos) << tree;
  EXPECT_NE(tree.find("store f32[3] data"), std::string::npos) << tree;
  const std::string lines = kiln::graph_to_string(y);
  EXPECT_NE(lines.find("(placeholder)"), std::string::npos) << lines;
  EXPECT_NE(lines.find("(constant)"), std::string::npos) << lines;
}

TEST(Constant, HoldsTheValuesOfWhatItWasMadeFrom) {
  const Tensor lazy = kiln::arange(4) * 3;
  const Tensor c = kiln::constant(lazy);
  EXPECT_TRUE(c.is_evaluated());
  EXPECT_TRUE(c.inputs().empty());
  EXPECT_EQ(c.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 3, 6, 9}));
  EXPECT_EQ((c + 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 4, 7, 10}));
  EXPECT_EQ(kiln_test::code_of([] { (void)kiln::constant(Tensor()); }), ErrorCode::invalid_select);
}

}  // namespace
