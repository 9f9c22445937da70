// Image transforms for batches: normalisation per channel, random horizontal flips and random
// crops with padding, checked image by image against what each must be, reproducible by seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

namespace data = kiln::data;
using kiln::ErrorCode;
using kiln::Tensor;
using kiln_test::code_of;
using Vf = std::vector<float>;

// Images [n, c, h, w] whose values are all different.
Tensor counting(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  Vf v(static_cast<std::size_t>(n * c * h * w));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return Tensor::from(v, {n, c, h, w});
}

Vf image(const Tensor& t, std::int64_t i) {
  return t.slice({i, 0, 0, 0}, {i + 1, t.size(1), t.size(2), t.size(3)}).to_vector<float>();
}

TEST(DataTransforms, NormalizePerChannel) {
  const Tensor x = Tensor::from(Vf{1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 2, 2});
  EXPECT_EQ(data::normalize(x, {2.0, 20.0}, {0.5, 10.0}).to_vector<float>(),
            (Vf{-2, 0, 2, 4, -1, 0, 1, 2}));
  EXPECT_EQ(code_of([&] { (void)data::normalize(x, {1.0}, {1.0}); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { (void)data::normalize(x, {0, 0}, {1, 0}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] {
              (void)data::normalize(kiln::ones({2, 2}), {0}, {1});
            }),
            ErrorCode::illegal_dimension);
}

TEST(DataTransforms, FlipsEachImageOrLeavesIt) {
  const Tensor x = counting(64, 2, 3, 4);
  const Tensor mirrored = kiln::flip(x, {3});
  EXPECT_EQ(data::random_horizontal_flip(x, 1.0, 7).to_vector<float>(),
            mirrored.to_vector<float>());
  EXPECT_EQ(data::random_horizontal_flip(x, 0.0, 7).to_vector<float>(), x.to_vector<float>());
  const Tensor some = data::random_horizontal_flip(x, 0.5, 7);
  int flipped = 0;
  for (std::int64_t i = 0; i < 64; ++i) {
    const Vf got = image(some, i);
    const bool is_flipped = got == image(mirrored, i);
    EXPECT_TRUE(is_flipped || got == image(x, i)) << "image " << i;
    flipped += is_flipped;
  }
  EXPECT_GT(flipped, 16);
  EXPECT_LT(flipped, 48);
  EXPECT_EQ(data::random_horizontal_flip(x, 0.5, 7).to_vector<float>(), some.to_vector<float>());
  EXPECT_EQ(code_of([&] { (void)data::random_horizontal_flip(x, 1.5); }),
            ErrorCode::invalid_select);
}

TEST(DataTransforms, CropsAreWindowsOfThePaddedImage) {
  const Tensor x = counting(16, 2, 5, 6);
  const Tensor padded = kiln::pad(x, {0, 0, 2, 2}, {0, 0, 2, 2}, 0.0);
  const Tensor crops = data::random_crop(x, 4, 5, 2, 11);
  ASSERT_EQ(crops.shape(), (kiln::Shape{16, 2, 4, 5}));
  std::vector<std::pair<std::int64_t, std::int64_t>> places;
  for (std::int64_t i = 0; i < 16; ++i) {
    const Vf got = image(crops, i);
    bool found = false;
    for (std::int64_t y = 0; y + 4 <= 9 && !found; ++y)
      for (std::int64_t x0 = 0; x0 + 5 <= 10 && !found; ++x0)
        if (padded.slice({i, 0, y, x0}, {i + 1, 2, y + 4, x0 + 5}).to_vector<float>() == got) {
          found = true;
          places.emplace_back(y, x0);
        }
    EXPECT_TRUE(found) << "image " << i << " is no window of its padded image";
  }
  // Not all in one place, and the same again for the same seed.
  EXPECT_NE(std::count(places.begin(), places.end(), places.front()), 16);
  EXPECT_EQ(data::random_crop(x, 4, 5, 2, 11).to_vector<float>(), crops.to_vector<float>());
  // The whole image without padding is the image.
  EXPECT_EQ(data::random_crop(x, 5, 6, 0, 3).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(code_of([&] { (void)data::random_crop(x, 6, 6, 0); }), ErrorCode::illegal_dimension);
}

}  // namespace
