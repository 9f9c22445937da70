// Hostile arguments to the C++ builders: sizes, steps, dilations, paddings and counts whose
// arithmetic overflows must give a kiln::Error when the node is built (never a wrong shape, an
// out-of-bounds read or undefined behaviour), and the edge cases that are legal must work.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kiln/activations.hpp"
#include "kiln/indexing.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "kiln/windows.hpp"
#include "test_support.hpp"

namespace {

using kiln::ErrorCode;
using kiln::Tensor;
using kiln_test::code_of;
using I64s = std::vector<std::int64_t>;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

Tensor image4x4() { return kiln::reshape(kiln::arange(16).convert(kiln::DType::f32), {1, 1, 4, 4}); }

TEST(HostileWindows, DilationNearInt64MaxIsRejected) {
  const Tensor x = image4x4();
  kiln::Pool2dOptions pool;
  pool.dilation = {kMax, 1};
  EXPECT_EQ(code_of([&] { kiln::max_pool2d(x, {2, 2}, pool); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::avg_pool2d(x, {2, 2}, pool); }), ErrorCode::invalid_select);
  pool.dilation = {1, kMax / 2 + 2};
  EXPECT_EQ(code_of([&] { kiln::max_pool2d(x, {2, 3}, pool); }), ErrorCode::invalid_select);

  kiln::Conv2dOptions conv;
  conv.dilation = {kMax, kMax};
  const Tensor w = kiln::ones({1, 1, 2, 2}, kiln::DType::f32);
  EXPECT_EQ(code_of([&] { kiln::conv2d(x, w, Tensor(), conv); }), ErrorCode::invalid_select);
}

TEST(HostileWindows, PaddingThatOverflowsIsRejected) {
  const Tensor x = image4x4();
  kiln::Conv2dOptions conv;
  conv.padding = {kMax / 2 + 1, 0};
  const Tensor w = kiln::ones({1, 1, 1, 1}, kiln::DType::f32);
  EXPECT_EQ(code_of([&] { kiln::conv2d(x, w, Tensor(), conv); }), ErrorCode::invalid_select);
  kiln::Pool2dOptions pool;
  pool.padding = {0, kMax / 2 + 1};
  EXPECT_EQ(code_of([&] { kiln::max_pool2d(x, {1, 1}, pool); }), ErrorCode::invalid_select);
}

TEST(HostileWindows, KernelSizesBelowOneAreRejected) {
  const Tensor x = image4x4();
  EXPECT_EQ(code_of([&] { kiln::max_pool2d(x, {kMin, 2}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::max_pool2d(x, {0, 2}); }), ErrorCode::invalid_select);
}

TEST(HostileWindows, UnslideWindowWithTooManyWindowsIsAnError) {
  const Tensor windows = kiln::ones({1, 1, 1}, kiln::DType::f32);
  const kiln::Shape huge{std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_EQ(code_of([&] { kiln::unslide_window(windows, huge, {1, 1}); }),
            ErrorCode::incompatible_shapes);
}

TEST(HostileShapes, EmptyShapesWithHugeOtherSizesAreRejected) {
  const std::int64_t big = std::int64_t{1} << 40;
  for (const kiln::Shape& s : {kiln::Shape{big, big, 0}, kiln::Shape{0, big, big}}) {
    EXPECT_EQ(code_of([&] { kiln::full(s, 1.0); }), ErrorCode::out_of_memory)
        << kiln::shape_to_string(s);
    EXPECT_NE(code_of([&] { kiln::reshape(kiln::zeros({0}), s); }), ErrorCode::none);
  }
  // Sizes whose product of non-zero sizes is addressable stay legal, empty or not.
  EXPECT_EQ(kiln::full({std::int64_t{1} << 30, 0, 4}, 1.0).numel(), 0);
}

TEST(HostileShapes, PaddingThatOverflowsIsRejected) {
  const Tensor a = kiln::ones({3});
  EXPECT_EQ(code_of([&] { kiln::pad(a, {kMax}, {0}); }), ErrorCode::out_of_memory);
  EXPECT_EQ(code_of([&] { kiln::pad(a, {kMax}, {kMax}); }), ErrorCode::out_of_memory);
  EXPECT_EQ(code_of([&] { kiln::pad(a, {std::int64_t{1} << 62}, {0}); }),
            ErrorCode::out_of_memory);
}

TEST(HostileShapes, PaddingAStretchedViewKeepsItsOffsetInRange) {
  // A slice with a huge step leaves strides so long that the padding's offset, counted in them,
  // leaves int64_t: the view then pads over a fresh layer instead (UBSan checks the arithmetic).
  // (Not evaluated: the CPU executor would copy out the padded layer of 2^61 elements.)
  const Tensor strided = kiln::slice(kiln::arange(64), {0}, {64}, {63});  // 0, 63: stride 63
  const std::int64_t before = std::int64_t{1} << 61;
  const Tensor padded = kiln::pad(strided, {before}, {0});
  EXPECT_EQ(padded.shape(), (kiln::Shape{before + 2}));
  EXPECT_EQ(kiln::slice(padded, {-3}, {before + 2}).shape(), (kiln::Shape{3}));
}

TEST(HostileShapes, RepeatThatOverflowsIsRejected) {
  const Tensor a = kiln::ones({2});
  EXPECT_EQ(code_of([&] { kiln::repeat(a, {kMax}); }), ErrorCode::out_of_memory);
  EXPECT_EQ(code_of([&] { kiln::repeat(kiln::ones({std::int64_t{1} << 31}), {std::int64_t{1} << 32}); }),
            ErrorCode::out_of_memory);
}

TEST(HostileShapes, ConcatThatOverflowsIsRejected) {
  const Tensor wide = kiln::broadcast_to(kiln::ones({1}), {std::int64_t{1} << 61});
  EXPECT_EQ(code_of([&] { kiln::concat({wide, wide, wide, wide, wide}, 0); }),
            ErrorCode::out_of_memory);
}

TEST(HostileShapes, ExtendBeyondTheShapeIsRejected) {
  const Tensor a = kiln::ones({2});
  EXPECT_EQ(code_of([&] { kiln::extend(a, {5}, {kMax}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::extend(a, {5}, {kMin}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::extend(a, {kMax}, {kMax - 2}); }), ErrorCode::out_of_memory);
  // A step whose gaps overflow the spread dimension.
  EXPECT_EQ(code_of([&] { kiln::extend(a, {5}, {0}, {kMax}); }), ErrorCode::out_of_memory);
  EXPECT_EQ(code_of([&] { kiln::extend(a, {5}, {0}, {kMin}); }), ErrorCode::out_of_memory);
  // One element needs no gaps, whatever the step.
  const Tensor one = kiln::full({1}, 7.0);
  EXPECT_EQ(kiln::extend(one, {3}, {1}, {kMax}).to_vector<double>(),
            (std::vector<double>{0, 7, 0}));
  EXPECT_EQ(kiln::extend(one, {3}, {2}, {kMin}).to_vector<double>(),
            (std::vector<double>{0, 0, 7}));
}

TEST(HostileShapes, SliceStepsAtTheLimitsKeepOneElement) {
  const Tensor a = kiln::arange(5);
  EXPECT_EQ(kiln::slice(a, {0}, {5}, {kMax}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0}));
  EXPECT_EQ(kiln::slice(a, {4}, {-6}, {kMin}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{4}));
  EXPECT_EQ(kiln::slice(a, {2}, {kMax}, {kMax}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2}));
  EXPECT_EQ(kiln::slice(a, {kMax}, {kMin}, {kMin}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{4}));
  EXPECT_EQ(kiln::slice(a, {kMin}, {kMax}, {kMax}).numel(), 1);
  EXPECT_EQ(kiln::slice(a, {3}, {1}, {kMax}).numel(), 0);

  // The gradient places the one element back (through extend with the same step).
  const Tensor x = kiln::arange(5).convert(kiln::DType::f64);
  x.watch();
  Tensor y;
  {
    kiln::GradientContext ctx;
    y = kiln::sum(kiln::slice(x, {4}, {-6}, {kMin}) * 3.0);
  }
  EXPECT_EQ(kiln::gradient(y, x).to_vector<double>(), (std::vector<double>{0, 0, 0, 0, 3}));
}

TEST(HostileEdges, LogsumexpOverAnEmptyAxisIsMinusInfinity) {
  const Tensor r = kiln::logsumexp(kiln::zeros({3, 0}, kiln::DType::f32), 1);
  EXPECT_EQ(r.shape(), (kiln::Shape{3}));
  for (float v : r.to_vector<float>()) EXPECT_TRUE(std::isinf(v) && v < 0) << v;
  EXPECT_EQ(kiln::logsumexp(kiln::zeros({2, 0}), -1, true).shape(), (kiln::Shape{2, 1}));
}

TEST(HostileEdges, PoolingAndFlattenTakeABatchOfNothing) {
  const Tensor none = kiln::zeros({0, 2, 4, 4}, kiln::DType::f32);
  EXPECT_EQ(kiln::avg_pool2d(none, {2, 2}).shape(), (kiln::Shape{0, 2, 2, 2}));
  EXPECT_EQ(kiln::max_pool2d(none, {2, 2}).shape(), (kiln::Shape{0, 2, 2, 2}));
  EXPECT_EQ(kiln::avg_pool2d(none, {2, 2}).numel(), 0);
  kiln::nn::Flatten flatten;
  EXPECT_EQ(flatten.forward(none).shape(), (kiln::Shape{0, 32}));
  EXPECT_EQ(flatten.forward(none).to_vector<float>().size(), 0u);
}

}  // namespace

namespace {

// Found by the graph fuzzer (fuzz/regressions/graph/).
TEST(HostileEdges, PaddingOfNothingBroadcastReadsNothing) {
  // An empty tensor padded to [1] is all padding, with an offset before its (absent) first
  // element; broadcast, the CPU executor read the 8 bytes before the empty buffer.
  const Tensor none = kiln::zeros({0}, kiln::DType::i64);
  const Tensor zero = kiln::extend(none, {1}, {1});
  const Tensor cube = kiln::reshape(kiln::arange(8) + std::int64_t{1}, {2, 2, 2});
  EXPECT_EQ((zero + cube).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ((zero * cube).to_vector<std::int64_t>(), (std::vector<std::int64_t>(8, 0)));
}

TEST(HostileEdges, ResultsWithNoElementsCostNothing) {
  // Empty results whose other sizes are huge: a concat copied 2^40 outer rows of nothing and a
  // permuted copy tabulated them; neither computes anything now.
  const std::int64_t big = std::int64_t{1} << 40;
  const Tensor empty = kiln::zeros({big, 0}, kiln::DType::f32);
  EXPECT_EQ(kiln::concat({empty, empty}, 1).contiguous().to_vector<float>().size(), 0u);
  EXPECT_EQ(kiln::permute(empty, {1, 0}).contiguous().to_vector<float>().size(), 0u);
  const Tensor idx = kiln::zeros({0}, kiln::DType::i64);
  EXPECT_EQ(kiln::index(kiln::ones({3}), idx).to_vector<float>().size(), 0u);
}

}  // namespace
