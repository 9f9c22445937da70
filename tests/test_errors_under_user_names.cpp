// Errors raised inside a composite op name the op the user called and the user's shapes, also
// when a bad value surfaces only at a later evaluation (an out-of-range token).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln_test::error_of;

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

TEST(ErrorsUnderUserNames, IndexSelectWithFloatIndicesNamesIndexSelect) {
  const kiln::Error e = error_of([] {
    kiln::index_select(kiln::zeros({4, 5}), 0, Tensor::from<float>({0, 1}));
  });
  EXPECT_EQ(e.code(), kiln::ErrorCode::wrong_type);
  EXPECT_TRUE(starts_with(e.what(), "index_select of f32 [4,5] and f32 [2]: ")) << e.what();
  // Errors index_select raises itself are unchanged.
  const kiln::Error own = error_of([] {
    kiln::index_select(kiln::zeros({4, 5}), 0, Tensor::from<std::int64_t>({0, 1}, {1, 2}));
  });
  EXPECT_TRUE(starts_with(own.what(), "index_select: indices must be 1-D")) << own.what();
}

TEST(ErrorsUnderUserNames, AnOutOfRangeIndexFoundLaterNamesTheOpTheUserCalled) {
  const Tensor seven = Tensor::from<std::int64_t>({7});
  // Known indices are checked as the op is built...
  const kiln::Error now = error_of([&] { kiln::index_select(kiln::zeros({4, 5}), 1, seven); });
  EXPECT_TRUE(starts_with(now.what(), "index_select of f32 [4,5] and i64 [1]: gather: index 7"))
      << now.what();
  // ...computed ones when they are evaluated, under the same name.
  const Tensor picked = kiln::index_select(kiln::zeros({4, 5}), 1, seven * 1);
  const kiln::Error e = error_of([&] { picked.eval(); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::invalid_select);
  EXPECT_TRUE(starts_with(e.what(), "index_select: gather: index 7 out of range")) << e.what();
}

TEST(ErrorsUnderUserNames, EmbeddingNamesItselfForBadTokens) {
  kiln::nn::Embedding embedding(10, 4);
  const Tensor tokens = Tensor::from<std::int64_t>({1, 12, 3}, {1, 3});
  const Tensor out = embedding(tokens * 1);  // a computed token: found when evaluated
  const kiln::Error late = error_of([&] { out.sum().eval(); });
  EXPECT_EQ(late.code(), kiln::ErrorCode::invalid_select);
  EXPECT_TRUE(starts_with(late.what(), "nn::Embedding: gather: index 12 out of range"))
      << late.what();
  const kiln::Error known = error_of([&] { embedding(tokens); });  // known: found when built
  EXPECT_TRUE(starts_with(known.what(), "nn::Embedding of i64 [1,3]: ")) << known.what();
  EXPECT_NE(std::string(known.what()).find("12"), std::string::npos) << known.what();
  const kiln::Error floats = error_of([&] { embedding(kiln::zeros({2})); });
  EXPECT_EQ(floats.code(), kiln::ErrorCode::wrong_type);
  EXPECT_TRUE(starts_with(floats.what(), "nn::Embedding: needs integer indices, got f32 [2]"))
      << floats.what();
}

TEST(ErrorsUnderUserNames, MathCompositesNameThemselves) {
  const Tensor a = kiln::ones({2, 3}), b = kiln::ones({2, 4});
  auto expect_named = [](const kiln::Error& e, const std::string& prefix) {
    EXPECT_TRUE(starts_with(e.what(), prefix)) << e.what();
  };
  expect_named(error_of([&] { kiln::cosine_similarity(a, b, 1); }),
               "cosine_similarity of f32 [2,3] and f32 [2,4]: ");
  expect_named(error_of([&] { kiln::nn::functional::normalize(a, 2.0, 5); }),
               "normalize of f32 [2,3]: ");
  expect_named(error_of([&] { kiln::isclose(a, b); }), "isclose of f32 [2,3] and f32 [2,4]: ");
  expect_named(error_of([&] { (void)kiln::allclose(a, b); }),
               "allclose of f32 [2,3] and f32 [2,4]: ");
  expect_named(error_of([&] { kiln::std(a, {3}); }), "std of f32 [2,3]: ");
}

TEST(ErrorsUnderUserNames, CrossEntropyNamesItselfForBadLabels) {
  const Tensor logits = kiln::zeros({2, 3});
  const kiln::Error late = error_of(
      [&] { kiln::nn::cross_entropy(logits, Tensor::from<std::int64_t>({0, 5}) * 1).eval(); });
  EXPECT_EQ(late.code(), kiln::ErrorCode::invalid_select);
  EXPECT_TRUE(starts_with(late.what(), "cross_entropy: ")) << late.what();
  EXPECT_NE(std::string(late.what()).find("index 5 out of range"), std::string::npos)
      << late.what();
  const kiln::Error shapes =
      error_of([&] { kiln::cross_entropy(logits, Tensor::from<std::int64_t>({0, 1, 2})); });
  EXPECT_TRUE(starts_with(shapes.what(), "cross_entropy: needs logits [N, C]")) << shapes.what();
}

}  // namespace

namespace {

TEST(DetectAnomaly, NamesTheFirstOpThatMadeNaNFromFiniteValues) {
  const Tensor x = Tensor::from<float>({1, -1});
  const Tensor y = (kiln::sqrt(x) * 2.0f + 1.0f).sum();
  EXPECT_TRUE(std::isnan(y.item<float>()));  // off: no check
  EXPECT_FALSE(kiln::anomaly_detection_enabled());
  const kiln::DetectAnomalyGuard guard;
  EXPECT_TRUE(kiln::anomaly_detection_enabled());
  const Tensor z = (kiln::sqrt(x) * 2.0f + 1.0f).sum();
  const kiln::Error e = error_of([&] { z.eval(); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::illegal_derive);
  EXPECT_TRUE(starts_with(e.what(), "detect_anomaly: sqrt f32 [2] computed NaN from inputs "
                                    "without NaN f32 [2]"))
      << e.what();
  EXPECT_NE(std::string(e.what()).find("evaluating sum f32 []"), std::string::npos) << e.what();
  // A view of NaN is found through the values below it.
  const kiln::Error view = error_of([&] { kiln::sqrt(x).reshape({2, 1}).eval(); });
  EXPECT_TRUE(starts_with(view.what(), "detect_anomaly: sqrt f32 [2]")) << view.what();
  EXPECT_EQ((kiln::sqrt(Tensor::from<float>({4, 9})) + 1.0f).sum().item<float>(), 7.0f);
}

TEST(DetectAnomaly, NamesTheOpThatMadeInfinityFromFiniteValuesButLetsMasksBe) {
  const kiln::DetectAnomalyGuard guard;
  const Tensor p = Tensor::from<float>({0, 1});
  const kiln::Error e = error_of([&] { (kiln::log(p) * 2.0f).sum().eval(); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::illegal_derive);
  EXPECT_TRUE(starts_with(e.what(), "detect_anomaly: log f32 [2] computed infinity from finite "
                                    "inputs f32 [2]"))
      << e.what();
  const kiln::Error overflow = error_of([] {
    (kiln::convert(Tensor::from<float>({1e5f}), DType::f16) + Tensor::from<float>({1})).eval();
  });
  EXPECT_TRUE(starts_with(overflow.what(), "detect_anomaly: convert f16 [1]")) << overflow.what();
  // Infinities that inputs and constants hold on purpose are no anomaly: a mask's -inf, and
  // what follows from it, and max-pooling's padding.
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor scores = Tensor::from<float>({1, 2, 3, 4}, {2, 2});
  const Tensor mask = Tensor::from(std::vector<bool>{false, true, false, false}, {2, 2});
  const Tensor masked = kiln::masked_fill(scores, mask, -inf);
  EXPECT_TRUE(std::isinf(masked.to_vector<float>()[1]));
  EXPECT_NEAR(kiln::softmax(masked, 1).to_vector<float>()[0], 1.0f, 1e-6f);
  EXPECT_TRUE(std::isinf((Tensor::from<float>({-inf, 1}) * 2.0f).to_vector<float>()[0]));
  const Tensor image = Tensor::from<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor pooled = kiln::max_pool2d(image, {2, 2}, {.stride = {1, 1}, .padding = {1, 1}});
  EXPECT_EQ(pooled.sum().item<float>(), 27.0f);  // 1 2 2 / 3 4 4 / 3 4 4
  // logsumexp of a row masked whole is -inf, as PyTorch's, through a log(0) of values computed
  // from the mask's -inf: no anomaly either.
  const Tensor row_masked = kiln::masked_fill(scores, kiln::ones({2, 2}, DType::boolean), -inf);
  EXPECT_TRUE(std::isinf(kiln::logsumexp(row_masked, {1}).to_vector<float>()[0]));
}

TEST(DetectAnomaly, FindsNaNInGradientsAndInInputs) {
  kiln::detect_anomaly(true);
  Tensor w = Tensor::from<double>({0.0, 4.0});
  w.watch();
  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = (kiln::sqrt(w) * 0.0).sum();  // d/dw at 0: 0 * infinity
  }
  EXPECT_EQ(loss.item<double>(), 0.0);
  const kiln::Error e = error_of([&] { kiln::gradients(loss, {w})[0].eval(); });
  EXPECT_EQ(e.code(), kiln::ErrorCode::illegal_derive);
  EXPECT_NE(std::string(e.what()).find("computed NaN from inputs without NaN"), std::string::npos)
      << e.what();
  const kiln::Error input = error_of([] {
    (Tensor::from<float>({1, std::numeric_limits<float>::quiet_NaN()}) + 1.0f).eval();
  });
  EXPECT_TRUE(starts_with(input.what(), "detect_anomaly: the input store f32 [2] holds NaN"))
      << input.what();
  // Training steps still run, in place or not.
  kiln::nn::Linear lin(2, 1);
  kiln::nn::SGD opt(lin.parameters(), {.lr = 0.1});
  for (int i = 0; i < 3; ++i) {
    Tensor l;
    {
      kiln::GradientContext ctx;
      l = kiln::nn::mse_loss(lin(kiln::ones({4, 2})), kiln::zeros({4, 1}));
    }
    opt.step(l);
  }
  EXPECT_TRUE(std::isfinite(lin.weight().value().sum().item<float>()));
  kiln::detect_anomaly(false);
  EXPECT_FALSE(kiln::anomaly_detection_enabled());
}

}  // namespace
