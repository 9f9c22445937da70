// Where the C++ API follows libtorch and the C API keeps Flint's rules: true division of integers
// and the rounding modes, sign's type and zero, dropout's rescaling, the type of
// tensor({1.0, 2.0}); and everyday forms (cosine_similarity, normalize, repeat_interleave,
// NoGradGuard). The values are PyTorch 2.15's.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln_test::code_of;

TEST(LibtorchSemantics, RoundingModesAndFloorDivide) {
  const Tensor a = kiln::tensor({7, -7, 7, -7, 6, 5});
  const Tensor b = kiln::tensor({2, 2, -2, -2, 3, 0});
  // torch.div(a, b, rounding_mode='floor') and 'trunc' (integer division by zero: 0 here).
  const Tensor f = kiln::div(a, b, "floor");
  EXPECT_EQ(f.dtype(), DType::i32);
  EXPECT_EQ(f.to_vector<int>(), (std::vector<int>{3, -4, -4, 3, 2, 0}));
  EXPECT_EQ(kiln::floor_divide(a, b).to_vector<int>(), (std::vector<int>{3, -4, -4, 3, 2, 0}));
  EXPECT_EQ(kiln::div(a, b, "trunc").to_vector<int>(), (std::vector<int>{3, -3, -3, 3, 2, 0}));
  EXPECT_EQ(kiln::div(a, 2, "floor").to_vector<int>(), (std::vector<int>{3, -4, 3, -4, 3, 2}));
  const Tensor r = kiln::tensor({7.5f, -7.5f});
  EXPECT_EQ(kiln::div(r, 2, "trunc").to_vector<float>(), (std::vector<float>{3, -3}));
  EXPECT_EQ(kiln::div(r, 2, "floor").to_vector<float>(), (std::vector<float>{3, -4}));
  EXPECT_EQ(kiln::floor_divide(kiln::tensor({true, false}), kiln::tensor({true, true})).dtype(),
            DType::i64);
  EXPECT_EQ(code_of([&] { kiln::div(a, b, "round"); }), kiln::ErrorCode::invalid_select);
}

TEST(LibtorchSemantics, DropoutRescalesWhatItKeeps) {
  const Tensor x = kiln::ones({100000});
  const std::vector<float> y = kiln::dropout(x, 0.25, 7).to_vector<float>();
  double sum = 0;
  int dropped = 0;
  for (float v : y) {
    if (v == 0) ++dropped;
    else EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
    sum += v;
  }
  EXPECT_NEAR(dropped / 100000.0, 0.25, 0.01);
  EXPECT_NEAR(sum / 100000.0, 1.0, 0.02);  // the expected value is kept
  EXPECT_EQ(kiln::dropout(x, 1.0, 7).sum().item<float>(), 0.0f);
  EXPECT_EQ(kiln::dropout(x, 0.0, 7).sum().item<float>(), 100000.0f);
}

TEST(LibtorchSemantics, IntegerDivisionIsTrueDivision) {
  const Tensor a = kiln::tensor({7, -7});
  const Tensor q = a / 2;  // torch.tensor([7, -7]) / 2
  EXPECT_EQ(q.dtype(), DType::f32);
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{3.5f, -3.5f}));
  EXPECT_EQ((a / kiln::tensor({2, 4})).to_vector<float>(), (std::vector<float>{3.5f, -1.75f}));
  EXPECT_EQ((1 / kiln::tensor({4})).to_vector<float>(), (std::vector<float>{0.25f}));
  Tensor x = kiln::tensor({3});
  x /= 2;
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.5f}));
  kiln::set_default_dtype(DType::f64);
  EXPECT_EQ((a / 2).dtype(), DType::f64);
  kiln::set_default_dtype(DType::f32);
}

TEST(LibtorchSemantics, SignKeepsTheTypeAndIsZeroAtZero) {
  const float nan = std::nanf("");
  const Tensor s = kiln::sign(kiln::tensor({nan, -0.0f, 0.0f, 2.0f, -3.0f}));
  EXPECT_EQ(s.dtype(), DType::f32);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{0, 0, 0, 1, -1}));  // torch.sign
  EXPECT_EQ(kiln::sign(kiln::tensor({true, false})).dtype(), DType::boolean);
  // sign's gradient is zero, as libtorch's.
  const Tensor w = kiln::tensor({1.5f, -2.0f}).watch();
  Tensor out;
  {
    kiln::GradientContext ctx;
    out = (kiln::sign(w) * w).sum();
  }
  EXPECT_EQ(kiln::gradients(out, {w})[0].to_vector<float>(), (std::vector<float>{1, -1}));
}

TEST(LibtorchSemantics, AListOfDoublesHasTheDefaultType) {
  EXPECT_EQ(kiln::tensor({1.0, 2.0}).dtype(), DType::f32);  // torch.tensor([1.0, 2.0])
  EXPECT_EQ(kiln::tensor({{1.0, 2.0}, {3.0, 4.0}}).dtype(), DType::f32);
  EXPECT_EQ(kiln::tensor({1.0, 2.0}, DType::f64).dtype(), DType::f64);
  EXPECT_EQ(kiln::tensor({0.1}, DType::f64).item<double>(), 0.1);
  EXPECT_EQ(kiln::tensor({1, 2}).dtype(), DType::i32);
  EXPECT_EQ(kiln::tensor({1, 2}, DType::i64).dtype(), DType::i64);
  EXPECT_EQ(kiln::tensor({1.f}).dtype(), DType::f32);
  kiln::set_default_dtype(DType::f64);
  EXPECT_EQ(kiln::tensor({0.1}).item<double>(), 0.1);
  kiln::set_default_dtype(DType::f32);
  EXPECT_EQ(kiln::tensor({0.1}).item<float>(), 0.1f);
}

}  // namespace

namespace {

using kiln::DType;
using kiln::Tensor;

void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << i;
}

const Tensor kA = kiln::tensor({{1.f, 2.f, 3.f}, {0.f, 0.f, 0.f}, {-1.f, 0.5f, 2.f}});
const Tensor kB = kiln::tensor({{2.f, 0.f, 1.f}, {1.f, 1.f, 1.f}, {3.f, -1.f, 0.5f}});

TEST(LibtorchForms, CosineSimilarityAndNormalize) {
  // torch.nn.functional.cosine_similarity(a, b, dim=1) and dim=0
  expect_near(kiln::nn::functional::cosine_similarity(kA, kB), {0.5976142883, 0.0, -0.3407990634});
  expect_near(kiln::cosine_similarity(kA, kB, 0), {-0.1889822185, -0.1714985967, 0.7396003008});
  // broadcast: each row of a against b's first row
  expect_near(kiln::cosine_similarity(kA, kB[0].unsqueeze(0)), {0.5976142883, 0.0, 0.0});
  // torch.nn.functional.normalize(a, p=2, dim=1) and (a, p=1, dim=0)
  expect_near(kiln::nn::functional::normalize(kA),
              {0.2672612369, 0.5345224738, 0.8017836809, 0, 0, 0, -0.4364357591, 0.2182178796,
               0.8728715181});
  expect_near(kiln::normalize(kA, 1, 0), {0.5, 0.8, 0.6, 0, 0, 0, -0.5, 0.2, 0.4});
  // The gradient of the rows that are not zero, as torch's
  const Tensor a = kA.detach().watch();
  Tensor out;
  {
    kiln::GradientContext ctx;
    out = kiln::cosine_similarity(a, kB).sum();
  }
  const std::vector<float> g = kiln::gradients(out, {a})[0].to_vector<float>();
  const std::vector<double> want = {0.19635897874832153, -0.08537346124649048,
                                    -0.008537337183952332, 0.3440447747707367,
                                    -0.10386258363723755, 0.19798801839351654};
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(g[k], want[k], 1e-6);
    EXPECT_NEAR(g[6 + k], want[3 + k], 1e-6);
  }
  EXPECT_EQ(kiln_test::code_of([&] { kiln::cosine_similarity(kA, kiln::ones({2, 2})); }),
            kiln::ErrorCode::incompatible_shapes);
}

TEST(LibtorchForms, RepeatInterleave) {
  const Tensor x = kiln::tensor({{1, 2}, {3, 4}});
  const Tensor r0 = kiln::repeat_interleave(x, 2, 0);  // torch.repeat_interleave(x, 2, dim=0)
  EXPECT_EQ(r0.shape(), (kiln::Shape{4, 2}));
  EXPECT_EQ(r0.to_vector<int>(), (std::vector<int>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(kiln::repeat_interleave(x, 3).to_vector<int>(),
            (std::vector<int>{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}));
  EXPECT_EQ(kiln::repeat_interleave(x, 2, -1).to_vector<int>(),
            (std::vector<int>{1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(kiln::repeat_interleave(x, 0, 0).shape(), (kiln::Shape{0, 2}));
  EXPECT_EQ(kiln_test::code_of([&] { kiln::repeat_interleave(x, -1, 0); }),
            kiln::ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([&] { kiln::repeat_interleave(x, 2, 2); }),
            kiln::ErrorCode::illegal_dimension);
}

TEST(LibtorchForms, NoGradGuardTurnsRecordingOffInsideAContext) {
  const Tensor w = kiln::tensor({2.f}).watch();
  kiln::GradientContext ctx;
  EXPECT_TRUE(kiln::in_gradient_context());
  {
    kiln::NoGradGuard no_grad;
    EXPECT_FALSE(kiln::in_gradient_context());
    const Tensor y = w * 3;
    EXPECT_EQ(y.item<float>(), 6.0f);
    {
      kiln::GradientContext again;
      EXPECT_TRUE(kiln::in_gradient_context());
    }
    EXPECT_FALSE(kiln::in_gradient_context());
  }
  EXPECT_TRUE(kiln::in_gradient_context());
  const Tensor z = (w * w).sum();
  EXPECT_EQ(kiln::gradients(z, {w})[0].item<float>(), 4.0f);
}

}  // namespace
