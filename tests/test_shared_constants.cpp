// Scalar operands share one constant node (and one broadcast view of it per shape) per thread,
// so `x = x + 1.0f` in a loop does not build two new nodes for 1.0f every time. Tensors users
// create are never shared, and shared nodes keep graphs immutable.
#include <gtest/gtest.h>

#include <vector>

#include "graph/node.hpp"
#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;

// The node a binary op's result reads as its second operand.
const kiln::detail::Node* second_operand(const Tensor& t) { return t.node()->inputs[1].get(); }

TEST(SharedConstants, ScalarOperandsShareOneNodePerValueTypeAndShape) {
  const Tensor x = kiln::uniform({3, 4}, 1, DType::f32);
  const Tensor y = kiln::uniform({5}, 2, DType::f32);
  EXPECT_EQ(second_operand(x + 1.0f), second_operand(x * 1.0f));
  EXPECT_NE(second_operand(x + 1.0f), second_operand(x + 2.0f));
  // Scalars are weak: 1.0 beside an f32 tensor is the f32 constant 1.
  EXPECT_EQ(second_operand(x + 1.0f), second_operand(x + 1.0));
  const Tensor z = kiln::uniform({3, 4}, 1, DType::f64);
  EXPECT_NE(second_operand(x + 1.0f), second_operand(z + 1.0)) << "f32 and f64 constants";
  EXPECT_NE(second_operand(x + 1.0f), second_operand(y + 1.0f)) << "other shapes";
  // The scalar on the left is the same constant.
  EXPECT_EQ((1.0f - x).node()->inputs[0].get(), second_operand(x + 1.0f));
  // Results are right whichever graph made the constant first.
  const std::vector<float> xs = x.to_vector<float>();
  const std::vector<float> got = (x * 3.0f - 1.0f).to_vector<float>();
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_FLOAT_EQ(got[i], xs[i] * 3.0f - 1.0f);
}

TEST(SharedConstants, UserTensorsAreNeverShared) {
  const Tensor a = kiln::scalar(2.0f);
  const Tensor b = kiln::scalar(2.0f);
  EXPECT_NE(a.node(), b.node());
  const Tensor x = kiln::uniform({4}, 3, DType::f32);
  EXPECT_NE(second_operand(x * a), second_operand(x * b));
  // A watched scalar gets its gradient.
  const Tensor w = kiln::scalar(2.0f).watch();
  Tensor loss;
  {
    kiln::GradientContext context;
    loss = kiln::sum(x * w + 2.0f);
  }
  EXPECT_NEAR(kiln::gradient(loss, w).item<double>(), kiln::sum(x).item<double>(), 1e-5);
}

TEST(SharedConstants, AnEvaluatedSharedViewLeavesTheCache) {
  const Tensor x = kiln::uniform({2, 3}, 4, DType::f64);
  const Tensor first = x + 5.0;
  // Reach the shared broadcast of 5.0 through the graph and evaluate it on its own.
  const std::vector<Tensor> order = kiln::topological_order(first);
  Tensor shared;
  for (const Tensor& t : order)
    if (t.node().get() == second_operand(first)) shared = t;
  ASSERT_TRUE(shared.defined());
  EXPECT_EQ(shared.to_vector<double>(), std::vector<double>(6, 5.0));
  const Tensor second = x + 5.0;
  EXPECT_NE(second_operand(second), shared.node().get()) << "a new view replaces it";
  EXPECT_FALSE(second.node()->inputs[1]->result) << "the new view is not materialised";
  const std::vector<double> xs = x.to_vector<double>();
  const std::vector<double> a = first.to_vector<double>(), b = second.to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_DOUBLE_EQ(a[i], xs[i] + 5.0);
    EXPECT_DOUBLE_EQ(b[i], xs[i] + 5.0);
  }
}

}  // namespace
