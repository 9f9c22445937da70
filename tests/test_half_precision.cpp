// The 16-bit float types f16 and bf16: values stored in 16 bits, arithmetic done in f32 and each
// result rounded back to nearest, ties to even. The registry-driven op test covers every op of
// these types on every executor; here: the conversions, the promotion rules, views and
// broadcasting, gradients, raw data, and the C API's refusal.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "capi/capi.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;

constexpr DType kNarrow[] = {DType::f16, DType::bf16};

std::vector<float> random_floats(std::size_t n, unsigned seed, float low = -3, float high = 3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(low, high);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// The value of type t nearest to x, as the f32 (exact) it is.
float rounded(double x, DType t) {
  if (t == DType::f16) return static_cast<float>(kiln::Half(static_cast<float>(x)));
  return static_cast<float>(kiln::BFloat16(static_cast<float>(x)));
}

// The values of build() on every executor, which must equal the reference's bit for bit.
void expect_same_on_every_executor(const std::string& what, const std::function<Tensor()>& build) {
  kiln_test::ExecutorGuard guard;
  const auto all = kiln::executors();
  kiln::set_executor(all.front());
  const Tensor want = build();
  const std::vector<float> want_values = want.to_vector<float>();
  for (std::size_t e = 1; e < all.size(); ++e) {
    kiln::set_executor(all[e]);
    const Tensor got = build();
    EXPECT_EQ(got.dtype(), want.dtype()) << what << " on " << all[e]->name();
    EXPECT_EQ(got.shape(), want.shape()) << what << " on " << all[e]->name();
    const std::vector<float> values = got.to_vector<float>();
    ASSERT_EQ(values.size(), want_values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(values[i]),
                std::bit_cast<std::uint32_t>(want_values[i]))
          << what << " on " << all[e]->name() << ", element " << i << ": " << values[i]
          << ", reference " << want_values[i];
  }
}

TEST(HalfPrecision, EveryBitPatternRoundTripsThroughF32) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    kiln::Half h;
    h.bits = static_cast<std::uint16_t>(bits);
    kiln::BFloat16 b;
    b.bits = static_cast<std::uint16_t>(bits);
    const float hf = static_cast<float>(h), bf = static_cast<float>(b);
    if (!std::isnan(hf)) {
      EXPECT_EQ(kiln::Half(hf).bits, bits) << std::hex << bits;
    }
    if (!std::isnan(bf)) {
      EXPECT_EQ(kiln::BFloat16(bf).bits, bits) << std::hex << bits;
    }
  }
  // Ties go to the even neighbour; past the largest finite value is infinity.
  EXPECT_EQ(kiln::Half(1.0f + 0x1p-11f).bits, 0x3C00);
  EXPECT_EQ(kiln::Half(1.0f + 3 * 0x1p-11f).bits, 0x3C02);
  EXPECT_EQ(kiln::Half(65520.0f).bits, 0x7C00);
  EXPECT_EQ(kiln::BFloat16(1.0f + 0x1p-8f).bits, 0x3F80);
  EXPECT_EQ(kiln::BFloat16(1.0f + 3 * 0x1p-8f).bits, 0x3F82);
}

TEST(HalfPrecision, ConvertingRoundsOnceFromF64) {
  // 1 + 2^-11 + 2^-30 is nearer 1 + 2^-10 than 1; rounded to f32 first it would be the tie
  // 1 + 2^-11, which rounds to 1.
  const Tensor x =
      Tensor::from(std::vector<double>{1.0 + 0x1p-11 + 0x1p-30, -(1.0 + 0x1p-11)}, {2});
  EXPECT_EQ(kiln::convert(x, DType::f16).to_vector<double>(),
            (std::vector<double>{1.0 + 0x1p-10, -1.0}));
  const Tensor y = Tensor::from(std::vector<double>{1.0 + 0x1p-8 + 0x1p-40, 1e39, 3e38}, {3});
  const std::vector<double> b = kiln::convert(y, DType::bf16).to_vector<double>();
  EXPECT_EQ(b[0], 1.0 + 0x1p-7);
  EXPECT_TRUE(std::isinf(b[1]));  // beyond the largest bf16 (and f32)
  EXPECT_EQ(b[2], static_cast<double>(rounded(3e38, DType::bf16)));
  // Integers and f32 convert to the nearest value too.
  EXPECT_EQ(kiln::convert(Tensor::from(std::vector<std::int32_t>{2049, 70000}, {2}), DType::f16)
                .to_vector<double>(),
            (std::vector<double>{2048, INFINITY}));
}

TEST(HalfPrecision, ValuesMovedIntoA16BitTypeRoundOnceOnEveryExecutor) {
  // 2^24 + 2^16 + 1 is nearest 2^24 + 2^17 in bf16; through f32 it would be the tie 2^24 + 2^16,
  // which rounds to 2^24.
  const std::int32_t big = (1 << 24) + (1 << 16) + 1;
  const double want = (1 << 24) + (1 << 17);
  expect_same_on_every_executor("concat of i32 and bf16", [&] {
    const Tensor i = Tensor::from(std::vector<std::int32_t>{big, 3}, {2});
    const Tensor r = kiln::concat({i, kiln::zeros({1}, DType::bf16)}, 0);
    EXPECT_EQ(r.dtype(), DType::bf16);
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{want, 3, 0}));
    return r;
  });
  expect_same_on_every_executor("convert of a transposed i32 view", [&] {
    const Tensor i = Tensor::from(std::vector<std::int32_t>{big, 1, 2, 3}, {2, 2});
    const Tensor r = kiln::convert(kiln::transpose(i, 0, 1), DType::bf16);
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{want, 2, 1, 3}));
    return r;
  });
}

TEST(HalfPrecision, NanToNumUsesTheTypesLargestValue) {
  const Tensor x = kiln::tensor({INFINITY, -INFINITY, NAN});
  EXPECT_EQ(kiln::nan_to_num(kiln::convert(x, DType::f16)).to_vector<float>(),
            (std::vector<float>{65504, -65504, 0}));
  EXPECT_EQ(kiln::nan_to_num(kiln::convert(x, DType::bf16)).to_vector<float>(),
            (std::vector<float>{0x1.fep127f, -0x1.fep127f, 0}));
}

TEST(HalfPrecision, PromotionFollowsPyTorch) {
  const Tensor h = kiln::ones({2}, DType::f16), b = kiln::ones({2}, DType::bf16);
  const Tensor i = kiln::ones({2}, DType::i32), f = kiln::ones({2}, DType::f32);
  const Tensor d = kiln::ones({2}, DType::f64);
  EXPECT_EQ((h + b).dtype(), DType::f32);  // neither holds the other's values
  EXPECT_EQ((h + i).dtype(), DType::f16);
  EXPECT_EQ((b * i).dtype(), DType::bf16);
  EXPECT_EQ((h + f).dtype(), DType::f32);
  EXPECT_EQ((b - d).dtype(), DType::f64);
  EXPECT_EQ((b * 0.5).dtype(), DType::bf16);  // a scalar takes the tensor's type
  EXPECT_EQ((h + 2).dtype(), DType::f16);
  EXPECT_EQ(kiln::sqrt(i).dtype(), kiln::default_dtype());  // integer operands: unchanged
  EXPECT_EQ(kiln::sum(h).dtype(), DType::f16);
  EXPECT_EQ(kiln::mean(b).dtype(), DType::bf16);
  EXPECT_EQ(kiln::argmax(b, 0).dtype(), DType::i64);
  EXPECT_EQ((h < h).dtype(), DType::boolean);
  EXPECT_EQ(kiln::matmul(kiln::ones({2, 2}, DType::bf16), kiln::ones({2, 2}, DType::bf16)).dtype(),
            DType::bf16);
  EXPECT_EQ(kiln_test::code_of([&] { kiln::set_default_dtype(DType::bf16); }),
            kiln::ErrorCode::none);
  EXPECT_EQ(kiln::zeros({2}).dtype(), DType::bf16);
  kiln::set_default_dtype(DType::f32);
}

TEST(HalfPrecision, EachOpIsItsF32ResultRoundedOnEveryExecutor) {
  for (DType t : kNarrow) {
    const std::vector<float> av = random_floats(300, 1), bv = random_floats(300, 2);
    std::vector<float> a(av.size()), b(bv.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = rounded(av[i], t);
      b[i] = rounded(bv[i], t);
    }
    // A chain the fast executors fuse into one kernel: each op's value is rounded before the
    // next op reads it, as if every result were stored.
    std::vector<float> want(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const float product = rounded(static_cast<double>(a[i] * b[i]), t);
      const float sum = rounded(static_cast<double>(product + a[i]), t);
      want[i] = rounded(static_cast<double>(sum * 0.5f), t);
    }
    expect_same_on_every_executor(std::string(kiln::dtype_name(t)) + " (a * b + a) * 0.5", [&] {
      const Tensor x = kiln::convert(Tensor::from(a, {300}), t);
      const Tensor y = kiln::convert(Tensor::from(b, {300}), t);
      const Tensor r = (x * y + x) * 0.5;
      EXPECT_EQ(r.to_vector<float>(), want) << kiln::current_executor()->name();
      return r;
    });
  }
}

TEST(HalfPrecision, ViewsAndBroadcastingAgreeOnEveryExecutor) {
  for (DType t : kNarrow) {
    const std::string name = kiln::dtype_name(t);
    const auto x = [&] {
      return kiln::convert(Tensor::from(random_floats(4 * 6, 3), {4, 6}), t).eval();
    };
    const auto row = [&] {
      return kiln::convert(Tensor::from(random_floats(6, 4), {6}), t).eval();
    };
    expect_same_on_every_executor(name + " transpose + broadcast row", [&] {
      return kiln::transpose(x(), 0, 1) * kiln::unsqueeze(row(), 1);
    });
    expect_same_on_every_executor(name + " strided slice, pad with a fill", [&] {
      return kiln::pad(kiln::slice(x(), {1, 0}, {4, 6}, {2, 3}), {1, 0}, {0, 2}, 2.5) - 1;
    });
    expect_same_on_every_executor(name + " concat with itself reversed, reshape", [&] {
      const Tensor v = x();
      return kiln::reshape(kiln::concat({v, kiln::flip(v, {1})}, 0), {6, 8}) + 0.25;
    });
    expect_same_on_every_executor(name + " inverse broadcasting", [&] {
      const Tensor col = kiln::convert(Tensor::from(random_floats(4, 5), {4}), t);
      return x() + col.inverse_broadcast();
    });
    expect_same_on_every_executor(name + " sums over rows and columns of a view", [&] {
      const Tensor v = kiln::transpose(x(), 0, 1);
      return kiln::concat({kiln::sum(v, {0}), kiln::max(v, {1})}, 0);
    });
  }
}

TEST(HalfPrecision, GradientsHaveTheTypeOfTheirVariableAndFollowF32) {
  for (DType t : kNarrow) {
    const std::vector<float> xv = random_floats(12, 6, -1, 1), wv = random_floats(12, 7, -1, 1);
    auto grad_of = [&](DType type) {
      const Tensor x = kiln::convert(Tensor::from(xv, {3, 4}), type).eval();
      const Tensor w = kiln::convert(Tensor::from(wv, {4, 3}), type).eval();
      x.watch();
      kiln::GradientContext context;
      const Tensor h = kiln::tanh(kiln::matmul(x, w));
      const Tensor y = kiln::sum(kiln::matmul(h, kiln::transpose(w, 0, 1)) + x * x);
      return kiln::gradient(y, x);
    };
    const Tensor g = grad_of(t);
    EXPECT_EQ(g.dtype(), t);
    // The f32 gradient of the same (already rounded) values, within a few roundings of type t.
    const std::vector<float> want = grad_of(DType::f32).to_vector<float>();
    const std::vector<float> got = g.to_vector<float>();
    const double ulp = t == DType::f16 ? 0x1p-10 : 0x1p-7;
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 8 * ulp * std::max(1.0f, std::fabs(want[i])))
          << kiln::dtype_name(t) << " element " << i;
  }
}

TEST(HalfPrecision, RawValuesComeAndGoAsHalfAndBFloat16) {
  std::vector<kiln::Half> h = {kiln::Half(1.5f), kiln::Half(-0.1f), kiln::Half(65504.0f)};
  const Tensor t = Tensor::from(h, {3});
  EXPECT_EQ(t.dtype(), DType::f16);
  const std::vector<kiln::Half> back = (t * 1).to_vector<kiln::Half>();
  for (std::size_t i = 0; i < h.size(); ++i) EXPECT_EQ(back[i].bits, h[i].bits);
  const std::vector<kiln::BFloat16> b = t.to_vector<kiln::BFloat16>();
  EXPECT_EQ(static_cast<float>(b[0]), 1.5f);
  EXPECT_EQ(b[1].bits, kiln::BFloat16(static_cast<float>(h[1])).bits);
  EXPECT_EQ(t.data<kiln::Half>()[2].bits, h[2].bits);
  EXPECT_EQ(kiln_test::code_of([&] { (void)t.data<kiln::BFloat16>(); }),
            kiln::ErrorCode::wrong_type);
  EXPECT_EQ(t.at<float>({0}), 1.5f);
  EXPECT_EQ(kiln::sum(t).item<double>(),
            static_cast<double>(static_cast<float>(kiln::Half(1.5f - 0.1f + 65504.0f))));
}

TEST(HalfPrecision, SafetensorsKeepsThe16BitTypesAsTheyAre) {
  kiln_test::TempFile f("narrow.safetensors");
  const Tensor values = Tensor::from(random_floats(10, 8), {2, 5});
  const Tensor h = kiln::convert(values, DType::f16), b = kiln::convert(values, DType::bf16);
  kiln::save_safetensors(f.path, {{"h", h}, {"b", b}});
  const kiln::Safetensors st = kiln::load_safetensors(f.path);
  EXPECT_EQ(st.at("h").dtype(), DType::f16);
  EXPECT_EQ(st.at("b").dtype(), DType::bf16);
  const std::vector<kiln::Half> hb = st.at("h").to_vector<kiln::Half>();
  const std::vector<kiln::Half> hw = h.to_vector<kiln::Half>();
  const std::vector<kiln::BFloat16> bb = st.at("b").to_vector<kiln::BFloat16>();
  const std::vector<kiln::BFloat16> bw = b.to_vector<kiln::BFloat16>();
  for (std::size_t i = 0; i < hw.size(); ++i) {
    EXPECT_EQ(hb[i].bits, hw[i].bits) << i;
    EXPECT_EQ(bb[i].bits, bw[i].bits) << i;
  }
}

TEST(HalfPrecision, AGraphOfA16BitTypeReachingTheCApiIsWrongType) {
  for (DType t : kNarrow) {
    try {
      (void)kiln::capi::to_ftype(t);
      ADD_FAILURE() << kiln::dtype_name(t) << " was given an FType";
    } catch (const kiln::capi::CError& e) {
      EXPECT_EQ(e.code(), WRONG_TYPE);
      EXPECT_NE(std::string(e.what()).find(kiln::dtype_name(t)), std::string::npos) << e.what();
    }
    try {
      (void)kiln::capi::make_node(kiln::ones({2}, t), FSTORE, {});
      ADD_FAILURE() << "a C node of " << kiln::dtype_name(t) << " was made";
    } catch (const kiln::capi::CError& e) {
      EXPECT_EQ(e.code(), WRONG_TYPE);
    }
  }
  EXPECT_EQ(kiln::capi::to_ftype(DType::f64), F_FLOAT64);
}

}  // namespace
