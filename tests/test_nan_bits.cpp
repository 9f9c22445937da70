// NaN bits are the reference's on every executor (semantics/nan_rules.hpp): a NaN operand comes
// through an op as it is (quieted), and an op that makes a NaN of numbers gives the host's
// default NaN. Devices differ here (NVIDIA's give one canonical NaN for everything), so the test
// checks the bit patterns themselves, not only that each executor agrees with the reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kiln/executor.hpp"
#include "kiln/kiln.hpp"

namespace {

using kiln::Tensor;

std::uint32_t bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float from_bits(std::uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// The NaN this machine's arithmetic makes of numbers (0/0), as the reference computes it.
std::uint32_t host_default_nan() {
  volatile float zero = 0.f;
  return bits(zero / zero);
}

constexpr std::uint32_t kPayloadNan = 0x7fc00123u;  // a quiet NaN with a payload
constexpr std::uint32_t kNegativeNan = 0xffc00456u;

Tensor with_nans() {
  return Tensor::from(std::vector<float>{1.5f, from_bits(kPayloadNan), -2.f, from_bits(kNegativeNan),
                                         0.f, 4.f},
                      {2, 3});
}

struct Case {
  std::string name;
  std::function<Tensor()> build;
  std::vector<std::uint32_t> nan_bits;  // the bits of the NaN elements, in order
};

std::vector<Case> cases() {
  const std::uint32_t made = host_default_nan();
  const auto x = [] { return with_nans(); };
  return {
      {"x + 1", [=] { return x() + 1.f; }, {kPayloadNan, kNegativeNan}},
      {"3 * x", [=] { return 3.f * x(); }, {kPayloadNan, kNegativeNan}},
      {"exp(x)", [=] { return kiln::exp(x()); }, {kPayloadNan, kNegativeNan}},
      {"x / 0", [=] { return x() / 0.f; }, {kPayloadNan, kNegativeNan, made}},
      {"(x - x) made of numbers",
       [=] { return kiln::Tensor::from(std::vector<float>{1.f, 2.f}) * 0.f / 0.f; }, {made, made}},
      {"cumprod(x + 1)", [=] { return kiln::cumprod(x() + 1.f, 0); },
       {kPayloadNan, kNegativeNan, kPayloadNan}},
      {"sum along rows", [=] { return kiln::sum(x() * 2.f, {1}); }, {kPayloadNan, kNegativeNan}},
      {"mean along rows", [=] { return kiln::mean(x(), {1}); }, {kPayloadNan, kNegativeNan}},
      // A product's NaN row and column: each output that reads the NaN is that NaN.
      {"matmul", [=] { return kiln::matmul(x(), kiln::ones({3, 2})); },
       {kPayloadNan, kPayloadNan, kNegativeNan, kNegativeNan}},
      {"softmax", [=] { return kiln::softmax(x(), 1); },
       {kPayloadNan, kPayloadNan, kPayloadNan, kNegativeNan, kNegativeNan, kNegativeNan}},
      {"conv2d", [=] { return kiln::conv2d(x().reshape({1, 1, 2, 3}), kiln::ones({1, 1, 1, 2})); },
       {kPayloadNan, kPayloadNan, kNegativeNan}},
  };
}

TEST(NanBits, TheReferenceKeepsPayloadsAndMakesTheHostsNan) {
  for (const Case& c : cases()) {
    const auto values = c.build().eval(*kiln::reference_executor()).to_vector<float>();
    std::vector<std::uint32_t> nans;
    for (float v : values)
      if (v != v) nans.push_back(bits(v));
    EXPECT_EQ(nans, c.nan_bits) << c.name;
  }
}

TEST(NanBits, EveryExecutorGivesTheReferencesBits) {
  for (const auto& executor : kiln::executors()) {
    if (executor->name() == "reference") continue;
    for (const Case& c : cases()) {
      const auto got = c.build().eval(*executor).to_vector<float>();
      const auto want = c.build().eval(*kiln::reference_executor()).to_vector<float>();
      ASSERT_EQ(got.size(), want.size());
      // Numbers within the documented tolerance are other tests' business; NaNs must be equal.
      for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != got[i] || want[i] != want[i])
          EXPECT_EQ(bits(got[i]), bits(want[i]))
            << executor->name() << ", " << c.name << ", element " << i << std::hex
            << ": 0x" << bits(got[i]) << " vs the reference's 0x" << bits(want[i]);
    }
  }
}

}  // namespace
