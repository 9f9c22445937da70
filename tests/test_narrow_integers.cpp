// The 8- and 16-bit integers (u8, i8, i16): stored in their width, computed in i32 and wrapped,
// promoted and reduced as PyTorch 2.15's uint8, int8 and int16 are (the values below are
// PyTorch's), on every executor alike.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/data.hpp"
#include "kiln/images.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;

Tensor u8(std::vector<std::uint8_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::from(v, {n});
}
Tensor i8(std::vector<std::int8_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::from(v, {n});
}
Tensor i16(std::vector<std::int16_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::from(v, {n});
}
std::vector<std::int64_t> ints(const Tensor& t) { return t.to_vector<std::int64_t>(); }
using I = std::vector<std::int64_t>;

TEST(NarrowIntegers, AreStoredInTheirWidthAndReadBack) {
  const Tensor x = u8({0, 128, 255});
  EXPECT_EQ(x.dtype(), DType::u8);
  EXPECT_EQ(kiln::size_of(DType::u8), 1u);
  EXPECT_EQ(kiln::size_of(DType::i16), 2u);
  EXPECT_EQ(x.to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{0, 128, 255}));
  EXPECT_EQ(i8({-128, 127}).to_vector<std::int8_t>(), (std::vector<std::int8_t>{-128, 127}));
  EXPECT_EQ(i16({-32768, 32767}).to_vector<std::int16_t>(),
            (std::vector<std::int16_t>{-32768, 32767}));
  EXPECT_EQ(std::string(kiln::dtype_name(DType::i8)), "i8");
  EXPECT_EQ(x[1].item<std::int64_t>(), 128);
  EXPECT_TRUE(kiln::is_integer(DType::i16));
}

TEST(NarrowIntegers, ArithmeticWrapsToTheWidth) {
  EXPECT_EQ(ints(u8({200, 255, 0}) + u8({100, 1, 0})), (I{44, 0, 0}));
  EXPECT_EQ(ints(u8({0, 5}) - 1), (I{255, 4}));
  EXPECT_EQ(ints(-u8({1, 0})), (I{255, 0}));
  EXPECT_EQ(ints(i8({127, -128}) + 1), (I{-128, -127}));
  EXPECT_EQ(ints(kiln::abs(i8({-128, -5}))), (I{-128, 5}));
  EXPECT_EQ(ints(i16({30000, -20000}) * 2), (I{-5536, 25536}));
  EXPECT_EQ(ints(u8({200, 100}) * u8({2, 3})), (I{144, 44}));
  EXPECT_EQ(ints(i16({300}) * i16({300})), (I{24464}));
  EXPECT_EQ(ints(i8({-128}) * -1), (I{-128}));
  EXPECT_EQ(ints(u8({10}) - u8({20})), (I{246}));
  EXPECT_EQ(ints(kiln::sign(i8({-5, 0, 5}))), (I{-1, 0, 1}));
  EXPECT_EQ(kiln::sign(i8({-5})).dtype(), DType::i8);
  // A chain of ops fused into one kernel wraps after each, as the ops one at a time do.
  const Tensor chained = (u8({250}) + 10) * 2;  // (260 -> 4) * 2
  EXPECT_EQ(ints(chained), (I{8}));
}

TEST(NarrowIntegers, PromoteAsPyTorchDoes) {
  EXPECT_EQ((u8({1}) + i8({1})).dtype(), DType::i16);
  EXPECT_EQ((u8({1}) + Tensor::from<std::int32_t>({1}, {1})).dtype(), DType::i32);
  EXPECT_EQ((u8({1}) * 0.5).dtype(), kiln::default_dtype());
  EXPECT_EQ((u8({1}) + kiln::ones({1}, DType::boolean)).dtype(), DType::u8);
  EXPECT_EQ((i8({1}) + i16({1})).dtype(), DType::i16);
  EXPECT_EQ((i16({1}) + kiln::ones({1}, DType::f16)).dtype(), DType::f16);
  EXPECT_EQ(ints(u8({255}) + i8({-1})), (I{254}));
  EXPECT_EQ(kiln::promote(DType::u8, DType::i8), DType::i16);
  EXPECT_EQ(kiln::promote(DType::i8, DType::i64), DType::i64);
}

TEST(NarrowIntegers, ConvertLikePyTorch) {
  // Floats truncate and wrap to the width (through i32, whose range saturates first).
  const Tensor f = Tensor::from<float>({-1.5f, 300.7f, 255.9f, -129.0f}, {4});
  EXPECT_EQ(ints(kiln::convert(f, DType::u8)), (I{255, 44, 255, 127}));
  EXPECT_EQ(ints(kiln::convert(f, DType::i8)), (I{-1, 44, -1, 127}));
  EXPECT_EQ(ints(kiln::convert(f, DType::i16)), (I{-1, 300, 255, -129}));
  // Integers wrap, i64's high bits included.
  const Tensor big = Tensor::from<std::int64_t>({(std::int64_t{1} << 40) + 5, -1, 70000}, {3});
  EXPECT_EQ(ints(kiln::convert(big, DType::u8)), (I{5, 255, 112}));
  EXPECT_EQ(ints(kiln::convert(big, DType::i16)), (I{5, -1, 4464}));
  // To floats and bool, exactly.
  EXPECT_EQ(kiln::convert(i16({-32768}), DType::f32).item<float>(), -32768.0f);
  EXPECT_EQ(kiln::convert(u8({0, 2}), DType::boolean).to_vector<bool>(),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(ints(kiln::convert(kiln::ones({2}, DType::boolean), DType::i8)), (I{1, 1}));
  // An image's bytes as floats in [0, 1].
  const Tensor pixels = kiln::convert(u8({0, 51, 255}), DType::f32) / 255.0f;
  EXPECT_EQ(pixels.to_vector<float>(), (std::vector<float>{0.0f, 0.2f, 1.0f}));
}

TEST(NarrowIntegers, SumsAndScansAreI64) {
  const Tensor s = u8({200, 200, 100});
  EXPECT_EQ(kiln::sum(s).dtype(), DType::i64);
  EXPECT_EQ(kiln::sum(s).item<std::int64_t>(), 500);
  EXPECT_EQ(kiln::prod(s).item<std::int64_t>(), 4000000);
  EXPECT_EQ(kiln::cumsum(s, 0).dtype(), DType::i64);
  EXPECT_EQ(ints(kiln::cumsum(s, 0)), (I{200, 400, 500}));
  EXPECT_NEAR(kiln::mean(s).item<double>(), 166.6666717529297, 1e-4);
  EXPECT_EQ(kiln::max(u8({3, 250, 7})).item<std::int64_t>(), 250);
  EXPECT_EQ(kiln::max(u8({3, 250, 7})).dtype(), DType::u8);
  EXPECT_EQ(kiln::argmax(u8({3, 250, 7})).item<std::int64_t>(), 1);
  EXPECT_EQ(kiln::min(i8({3, -100, 7})).item<std::int64_t>(), -100);
}

TEST(NarrowIntegers, DivideCompareAndRemainder) {
  EXPECT_EQ((u8({7, 200}) / u8({2, 3})).to_vector<float>(),
            (std::vector<float>{3.5f, 66.66666412353516f}));
  EXPECT_EQ(ints(kiln::div(i8({-7, 7}), i8({2, -2}), "floor")), (I{-4, -4}));
  EXPECT_EQ(ints(kiln::floor_divide(i8({-128}), i8({-1}))), (I{-128}));
  EXPECT_EQ(ints(kiln::remainder(i8({-7}), 3)), (I{2}));
  EXPECT_EQ(kiln::less(u8({200}), i8({-1})).to_vector<bool>(), std::vector<bool>{false});
}

TEST(NarrowIntegers, IndexAndSelect) {
  const Tensor x = Tensor::from<std::uint8_t>({10, 20, 30, 40, 50, 60}, {2, 3});
  EXPECT_EQ(ints(kiln::index_select(x, 1, Tensor::from<std::int64_t>({2, 0}, {2}))),
            (I{30, 10, 60, 40}));
  EXPECT_EQ(ints(kiln::gather(x, 1, Tensor::from<std::int64_t>({1, 1, 0, 2}, {2, 2}))),
            (I{20, 20, 40, 60}));
  EXPECT_EQ(ints(x.slice({0, 1}, {2, 3})), (I{20, 30, 50, 60}));
  EXPECT_EQ(ints(x.t()), (I{10, 40, 20, 50, 30, 60}));
  EXPECT_EQ(ints(kiln::masked_fill(u8({1, 2, 3}),
                                   Tensor::from(std::vector<bool>{true, false, true}, {3}), 9)),
            (I{9, 2, 9}));
  EXPECT_EQ(ints(kiln::concat({u8({1}), u8({255})}, 0)), (I{1, 255}));
  EXPECT_EQ(ints(kiln::where(Tensor::from(std::vector<bool>{true, false}, {2}), i8({-1, -2}),
                             i8({5, 6}))),
            (I{-1, 6}));
  // Narrow integers index as other integers do.
  EXPECT_EQ(ints(kiln::index_select(x, 0, i16({1}))), (I{40, 50, 60}));
}

TEST(NarrowIntegers, FillsMustFitWhereArithmeticWraps) {
  // As libtorch: a fill out of the type's range is an error, arithmetic wraps, clamp's bounds
  // saturate.
  const kiln::Error full = kiln_test::error_of([] { kiln::full({2}, 300, DType::u8); });
  EXPECT_EQ(full.code(), kiln::ErrorCode::wrong_type);
  EXPECT_EQ(std::string(full.what()), "full: the value 300 does not fit in u8 (0 to 255)");
  const kiln::Error masked = kiln_test::error_of([] {
    kiln::masked_fill(u8({1, 2}), Tensor::from(std::vector<bool>{true, false}, {2}), -1);
  });
  EXPECT_EQ(masked.code(), kiln::ErrorCode::wrong_type);
  const kiln::Error padded = kiln_test::error_of([] { kiln::pad(i8({1}), {1}, {1}, 200); });
  EXPECT_EQ(padded.code(), kiln::ErrorCode::wrong_type);
  EXPECT_EQ(ints(u8({200, 3}) + 300), (I{244, 47}));
  EXPECT_EQ(ints(kiln::clamp(u8({200, 3}), 0, 300)), (I{200, 3}));
  EXPECT_EQ(ints(kiln::clamp(i8({5, -100}), -200, 200)), (I{5, -100}));
  EXPECT_EQ(ints(kiln::full({2}, 255.7, DType::u8)), (I{255, 255}));
  // A pad's fill is the tensor's type on every executor.
  kiln_test::ExecutorGuard guard;
  auto build = [] { return kiln::convert(kiln::pad(i16({5}), {1}, {1}, -1), DType::i64) * 3; };
  for (const auto& executor : kiln::executors()) {
    kiln::set_executor(executor);
    EXPECT_EQ(ints(build()), (I{-3, 15, -3})) << executor->name();
  }
}

TEST(NarrowIntegers, ByteLabelsAreClassesUpTo255) {
  // Class 156 is not the default ignore_index -100 wrapped to u8.
  const Tensor logits = kiln::zeros({2, 200});
  const Tensor labels = u8({156, 3});
  const Tensor loss = kiln::nn::cross_entropy(logits, labels, {.reduction = kiln::nn::Reduction::sum});
  EXPECT_NEAR(loss.item<float>(), 2 * std::log(200.0f), 1e-4f);
}

TEST(NarrowIntegers, EveryExecutorGivesTheReferenceValues) {
  kiln_test::ExecutorGuard guard;
  auto build = [] {
    const Tensor a = Tensor::from<std::uint8_t>({0, 1, 127, 128, 200, 255}, {2, 3});
    const Tensor b = Tensor::from<std::int8_t>({-128, -1, 0, 1, 100, 127}, {2, 3});
    const Tensor c = Tensor::from<std::int16_t>({-32768, -300, 0, 7, 300, 32767}, {2, 3});
    const Tensor mixed = (a * 3 + b) * c - kiln::convert(a.t().contiguous().reshape({2, 3}), DType::i16);
    return kiln::concat({kiln::convert(mixed, DType::i64),
                         kiln::convert(a + a, DType::i64),
                         kiln::convert(kiln::max(c, {1}, true), DType::i64).expand({2, 3}),
                         kiln::sum(b, {0}, true).expand({2, 3})},
                        1);
  };
  const auto all = kiln::executors();
  kiln::set_executor(all.front());
  const std::vector<std::int64_t> want = ints(build());
  for (std::size_t e = 1; e < all.size(); ++e) {
    kiln::set_executor(all[e]);
    EXPECT_EQ(ints(build()), want) << all[e]->name();
  }
}

TEST(NarrowIntegers, FilesKeepTheirTypes) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const Tensor x = Tensor::from<std::uint8_t>({0, 7, 255, 128}, {2, 2});
  const std::string npy = (dir / "kiln_narrow_integers.npy").string();
  kiln::data::save_npy(npy, x);
  const Tensor back = kiln::data::load_npy(npy);
  EXPECT_EQ(back.dtype(), DType::u8);
  EXPECT_EQ(ints(back), ints(x));
  std::filesystem::remove(npy);
  const std::string st = (dir / "kiln_narrow_integers.safetensors").string();
  kiln::save_safetensors(st, {{"a", i8({-128, 5})}, {"b", i16({-300, 32767})}});
  const kiln::Safetensors loaded = kiln::load_safetensors(st);
  EXPECT_EQ(loaded.at("a").dtype(), DType::i8);
  EXPECT_EQ(ints(loaded.at("a")), (I{-128, 5}));
  EXPECT_EQ(loaded.at("b").dtype(), DType::i16);
  EXPECT_EQ(ints(loaded.at("b")), (I{-300, 32767}));
  std::filesystem::remove(st);
}

TEST(NarrowIntegers, AnImageOfBytesIsWrittenAsItsBytes) {
  const Tensor image = Tensor::from<std::uint8_t>({0, 1, 128, 254, 255, 7}, {2, 3, 1});
  const std::vector<std::uint8_t> png = kiln::data::encode_image(image, kiln::data::ImageFormat::png);
  const Tensor back = kiln::data::decode_image(
      {reinterpret_cast<const std::byte*>(png.data()), png.size()});
  const Tensor bytes = kiln::convert(kiln::round(back * 255.0f), DType::u8);
  EXPECT_EQ(ints(bytes), ints(image));
}

}  // namespace
