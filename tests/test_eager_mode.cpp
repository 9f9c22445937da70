// kiln::EagerMode: ops built on a thread inside one are evaluated as they are built (views stay
// views), errors in the values come from the op that caused them, gradients come back evaluated,
// the values are the lazy ones, and other threads keep building lazily.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;
using Vf = std::vector<float>;

TEST(EagerMode, EvaluatesEachOpAsItIsBuilt) {
  const Tensor x = Tensor::from(Vf{0.5f, -1.f, 2.f});
  const Tensor lazy = kiln::exp(x) * 2.0f + kiln::sum(x);
  EXPECT_FALSE(lazy.is_evaluated());
  EXPECT_FALSE(kiln::in_eager_mode());
  kiln::EagerMode eager;
  EXPECT_TRUE(kiln::in_eager_mode());
  const Tensor e = kiln::exp(x);
  EXPECT_TRUE(e.is_evaluated());
  const Tensor s = kiln::sum(x);
  EXPECT_TRUE(s.is_evaluated());
  const Tensor y = e * 2.0f + s;
  EXPECT_TRUE(y.is_evaluated());
  EXPECT_EQ(y.to_vector<float>(), lazy.to_vector<float>());
}

TEST(EagerMode, ViewsStayViews) {
  kiln::EagerMode eager;
  const Tensor m = kiln::arange(6).reshape({2, 3});
  const Tensor t = kiln::transpose(m, 0, 1);
  EXPECT_FALSE(t.is_evaluated());  // copies nothing until an op reads it
  const Tensor doubled = t * 2;
  EXPECT_TRUE(doubled.is_evaluated());
  EXPECT_EQ(doubled.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 6, 2, 8, 4, 10}));
}

TEST(EagerMode, AnErrorInTheValuesComesFromTheOpThatCausedIt) {
  const Tensor not_positive = Tensor::from(std::vector<double>{1, 2, 2, 1}, {2, 2});
  // Lazily, building succeeds and the error waits for the values.
  const Tensor lazy = kiln::cholesky(not_positive);
  EXPECT_EQ(kiln_test::code_of([&] { (void)lazy.to_vector<double>(); }),
            ErrorCode::illegal_dimensionality);
  kiln::EagerMode eager;
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::cholesky(not_positive); }),
            ErrorCode::illegal_dimensionality);
}

TEST(EagerMode, GradientsComeBackEvaluated) {
  const Tensor x = Tensor::from(Vf{1.f, 2.f, 3.f});
  auto grad_of = [&] {
    Tensor y;
    {
      kiln::GradientContext ctx;
      x.watch();
      y = kiln::sum(kiln::sin(x) * x);
    }
    return kiln::gradient(y, x);
  };
  const Tensor lazy = grad_of();
  EXPECT_FALSE(lazy.is_evaluated());
  kiln::EagerMode eager;
  const Tensor eager_grad = grad_of();
  EXPECT_TRUE(eager_grad.is_evaluated());
  EXPECT_EQ(eager_grad.to_vector<float>(), lazy.to_vector<float>());
}

TEST(EagerMode, IsPerThreadAndNests) {
  const Tensor x = Tensor::from(Vf{1.f, 2.f});
  {
    kiln::EagerMode outer;
    {
      kiln::EagerMode inner;
      EXPECT_TRUE((x + 1.0f).is_evaluated());
    }
    EXPECT_TRUE(kiln::in_eager_mode());
    bool other_thread_lazy = false;
    std::thread other([&] { other_thread_lazy = !(x + 1.0f).is_evaluated() && !kiln::in_eager_mode(); });
    other.join();
    EXPECT_TRUE(other_thread_lazy);
  }
  EXPECT_FALSE(kiln::in_eager_mode());
  EXPECT_FALSE((x + 1.0f).is_evaluated());
}

}  // namespace
