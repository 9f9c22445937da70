// Adaptive average pooling (the function and nn::AdaptiveAvgPool2d) against windows computed by
// hand with PyTorch's bounds, with dividing and overlapping windows, gradients, bad arguments;
// nn::Upsample by size and by scale against kiln::interpolate.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

namespace nn = kiln::nn;
using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;

// PyTorch's definition, element by element: window i spans floor(i*in/out) to ceil((i+1)*in/out).
std::vector<double> adaptive_by_hand(const std::vector<double>& x, std::int64_t planes,
                                     std::int64_t h, std::int64_t w, std::int64_t oh,
                                     std::int64_t ow) {
  std::vector<double> out;
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j) {
        const std::int64_t r0 = i * h / oh, r1 = ((i + 1) * h + oh - 1) / oh;
        const std::int64_t c0 = j * w / ow, c1 = ((j + 1) * w + ow - 1) / ow;
        double sum = 0;
        for (std::int64_t r = r0; r < r1; ++r)
          for (std::int64_t c = c0; c < c1; ++c)
            sum += x[static_cast<std::size_t>((p * h + r) * w + c)];
        out.push_back(sum / static_cast<double>((r1 - r0) * (c1 - c0)));
      }
  return out;
}

TEST(AdaptiveAvgPool2d, MatchesPyTorchsWindows) {
  const std::int64_t n = 2, c = 3;
  for (auto [h, w, oh, ow] : std::vector<std::array<std::int64_t, 4>>{
           {6, 8, 3, 4}, {7, 5, 3, 2}, {5, 5, 1, 1}, {4, 6, 4, 6}, {3, 4, 5, 7}, {10, 9, 4, 4}}) {
    const Tensor x = kiln::uniform({n, c, h, w}, 11, DType::f64) * 10.0 - 5.0;
    const std::vector<double> expected =
        adaptive_by_hand(x.to_vector<double>(), n * c, h, w, oh, ow);
    const Tensor y = kiln::adaptive_avg_pool2d(x, {oh, ow});
    ASSERT_EQ(y.shape(), (kiln::Shape{n, c, oh, ow}));
    const std::vector<double> got = y.to_vector<double>();
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], 1e-12) << h << "x" << w << " -> " << oh << "x" << ow;
  }
}

TEST(AdaptiveAvgPool2d, ModuleTakesUnbatchedInputsAndGivesGradients) {
  nn::AdaptiveAvgPool2d pool(std::array<std::int64_t, 2>{2, 3});
  EXPECT_EQ(pool.describe(), "AdaptiveAvgPool2d(2x3)");
  const Tensor x = kiln::uniform({4, 5, 7}, 3, DType::f32);
  EXPECT_EQ(pool(x).shape(), (kiln::Shape{4, 2, 3}));
  EXPECT_EQ(nn::AdaptiveAvgPool2d(1)(kiln::uniform({2, 4, 5, 5}, 1, DType::f32)).shape(),
            (kiln::Shape{2, 4, 1, 1}));
  // Each input's gradient of sum(y) is the sum over the windows holding it of 1/window size.
  const Tensor v = kiln::uniform({1, 1, 3, 1}, 4, DType::f64);
  Tensor y;
  {
    kiln::GradientContext ctx;
    v.watch();
    y = kiln::sum(kiln::adaptive_avg_pool2d(v, {2, 1}));  // windows rows {0,1} and {1,2}
  }
  EXPECT_EQ(kiln::gradient(y, v).to_vector<double>(), (std::vector<double>{0.5, 1.0, 0.5}));
}

TEST(AdaptiveAvgPool2d, RefusesBadArguments) {
  auto code = [](auto f) { return kiln_test::code_of(f); };
  const Tensor x = kiln::uniform({1, 2, 4, 4}, 1, DType::f32);
  EXPECT_EQ(code([&] { (void)kiln::adaptive_avg_pool2d(x, {0, 2}); }),
            ErrorCode::illegal_dimension);
  const Tensor integers = kiln::arange(16).reshape({1, 1, 4, 4});
  EXPECT_EQ(code([&] { (void)kiln::adaptive_avg_pool2d(integers, {2, 2}); }),
            ErrorCode::wrong_type);
  const Tensor matrix = kiln::uniform({4, 4}, 1, DType::f32);
  EXPECT_EQ(code([&] { (void)kiln::adaptive_avg_pool2d(matrix, {2, 2}); }),
            ErrorCode::illegal_dimensionality);
  const Tensor empty = kiln::zeros({1, 1, 0, 4});
  EXPECT_EQ(code([&] { (void)kiln::adaptive_avg_pool2d(empty, {2, 2}); }),
            ErrorCode::illegal_dimension);
  EXPECT_EQ(code([] { nn::AdaptiveAvgPool2d bad(-1); }), ErrorCode::illegal_dimension);
}

TEST(Upsample, BySizeAndByScaleAsInterpolate) {
  const Tensor x = kiln::uniform({2, 3, 4, 5}, 7, DType::f32);
  nn::Upsample to_size({.size = {8, 15}});
  EXPECT_EQ(to_size(x).to_vector<float>(),
            kiln::interpolate(x, {8, 15}, kiln::InterpolateMode::nearest).to_vector<float>());
  nn::Upsample twice({.scale_factor = 2.0, .mode = kiln::InterpolateMode::bilinear,
                      .align_corners = true});
  const Tensor y = twice(x);
  EXPECT_EQ(y.shape(), (kiln::Shape{2, 3, 8, 10}));
  EXPECT_EQ(y.to_vector<float>(),
            kiln::interpolate(x, {8, 10}, kiln::InterpolateMode::bilinear, true)
                .to_vector<float>());
  EXPECT_EQ(nn::Upsample({.scale_factor = 1.5})(x).shape(), (kiln::Shape{2, 3, 6, 7}));
  EXPECT_EQ(twice.describe(), "Upsample(scale 2.000000, bilinear)");
}

TEST(Upsample, RefusesBadArguments) {
  EXPECT_EQ(kiln_test::code_of([] { nn::Upsample none({}); }), ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([] { nn::Upsample nan({.scale_factor = std::nan("")}); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([] {
              nn::Upsample corners({.scale_factor = 2, .align_corners = true});
            }),
            ErrorCode::invalid_select);
  nn::Upsample tiny({.scale_factor = 0.1});
  EXPECT_EQ(kiln_test::code_of([&] { (void)tiny(kiln::zeros({1, 1, 4, 4})); }),
            ErrorCode::illegal_dimension);
  EXPECT_EQ(kiln_test::code_of([&] { (void)tiny(kiln::zeros({4, 4})); }),
            ErrorCode::illegal_dimensionality);
}

}  // namespace
