// The bool type: one byte per value, computed as an i32 0 or 1, each result true where it is
// non-zero. The registry-driven op test covers every op of bool on every executor; here: what
// returns bool, the conversions, libtorch's arithmetic and counting rules, masks through views
// and broadcasting, fused kernels that store masks, files, gradients around masks, and the C
// API's F_INT32 comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "capi/capi.hpp"
#include "flint.h"
#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "gradient_check.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::int32_t> ints(const Tensor& t) { return t.to_vector<std::int32_t>(); }

// The values of build() on every executor, which must equal the reference's exactly (NaN equal
// to NaN), with the same dtype and shape.
void expect_same_on_every_executor(const std::string& what, const std::function<Tensor()>& build) {
  kiln_test::ExecutorGuard guard;
  const auto all = kiln::executors();
  kiln::set_executor(all.front());
  const Tensor want = build();
  const std::vector<double> want_values = want.to_vector<double>();
  for (std::size_t e = 1; e < all.size(); ++e) {
    kiln::set_executor(all[e]);
    const Tensor got = build();
    EXPECT_EQ(got.dtype(), want.dtype()) << what << " on " << all[e]->name();
    EXPECT_EQ(got.shape(), want.shape()) << what << " on " << all[e]->name();
    const std::vector<double> values = got.to_vector<double>();
    ASSERT_EQ(values.size(), want_values.size()) << what;
    for (std::size_t i = 0; i < values.size(); ++i)
      EXPECT_TRUE(values[i] == want_values[i] ||
                  (std::isnan(values[i]) && std::isnan(want_values[i])))
          << what << " on " << all[e]->name() << ", element " << i << ": " << values[i]
          << ", reference " << want_values[i];
  }
}

TEST(Bool, ComparisonsLogicalOpsAndPredicatesGiveBool) {
  const Tensor x = kiln::tensor({-1.0, 0.0, 2.0, kNaN});
  for (const Tensor& t : {x > 0, x <= 0, x == 2, x != x, (x > 0) & (x < 3), (x < 0) | (x > 1),
                          (x > 0) ^ (x > 1), !(x > 0), ~(x > 0), kiln::any(x), kiln::all(x),
                          kiln::isnan(x), kiln::isinf(x), kiln::isfinite(x)})
    EXPECT_EQ(t.dtype(), DType::boolean) << t.op_name();
  EXPECT_EQ((x > 0).to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(kiln::isnan(x).to_vector<bool>(), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(kiln::any(x > 1).item<bool>(), true);
  EXPECT_EQ(kiln::all(x > -2).item<bool>(), false);  // NaN > -2 is false
  // One byte a value, readable in place.
  const Tensor m = (x >= 0).eval();
  const std::span<const bool> bytes = m.data<bool>();
  EXPECT_EQ(std::vector<bool>(bytes.begin(), bytes.end()),
            (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(sizeof(bytes[0]), 1u);
  // From C++ bools, and printed as such.
  const Tensor made = Tensor::from(std::vector<bool>{true, false, true});
  EXPECT_EQ(made.dtype(), DType::boolean);
  EXPECT_EQ(ints(made), (std::vector<std::int32_t>{1, 0, 1}));
  EXPECT_NE(kiln::to_string(made).find("true, false, true"), std::string::npos)
      << kiln::to_string(made);
  const Tensor nested = kiln::tensor({{true, false}, {false, true}});
  EXPECT_EQ(nested.dtype(), DType::boolean);
  EXPECT_EQ(ints(nested), (std::vector<std::int32_t>{1, 0, 0, 1}));
  // Raw bytes: any non-zero byte is true, stored as 1.
  const std::uint8_t raw[] = {0, 7, 255, 1};
  EXPECT_EQ(ints(Tensor::from_bytes(raw, DType::boolean, {4})),
            (std::vector<std::int32_t>{0, 1, 1, 1}));
  // Borrowed memory of 0s and 1s is read in place; other bytes are copied as 1.
  alignas(64) std::uint8_t mine[4] = {1, 0, 0, 1};
  const Tensor borrowed = Tensor::from_blob(mine, {4}, DType::boolean);
  EXPECT_EQ(static_cast<const void*>(borrowed.data<bool>().data()), static_cast<void*>(mine));
  alignas(64) std::uint8_t odd[4] = {0, 9, 1, 0};
  const Tensor copied = Tensor::from_blob(odd, {4}, DType::boolean);
  EXPECT_NE(static_cast<const void*>(copied.data<bool>().data()), static_cast<void*>(odd));
  EXPECT_EQ(copied.to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
}

TEST(Bool, ConversionsTestForNonZeroOnEveryExecutor) {
  // -0 is false; 0.5, NaN, the infinities and 1e-40 (where the type holds it: not in f16) are
  // true; an i64 beyond f32's integers below.
  const std::vector<double> values = {0.0, -0.0, 0.5, -3, kNaN, INFINITY, -INFINITY, 1e-40, 1};
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const Tensor x = kiln::convert(Tensor::from(values), t).eval();
    std::vector<bool> want;
    for (double v : x.to_vector<double>()) want.push_back(v != 0);
    EXPECT_EQ(kiln::convert(x, DType::boolean).to_vector<bool>(), want) << kiln::dtype_name(t);
    expect_same_on_every_executor(std::string("to bool from ") + kiln::dtype_name(t), [&] {
      return kiln::convert(kiln::convert(Tensor::from(values), t), DType::boolean);
    });
    expect_same_on_every_executor(std::string("bool to ") + kiln::dtype_name(t), [&] {
      return kiln::convert(kiln::convert(Tensor::from(values), DType::boolean), t) * 3;
    });
  }
  const Tensor big = Tensor::from(std::vector<std::int64_t>{0, (std::int64_t{1} << 40), -1});
  EXPECT_EQ(kiln::convert(big, DType::boolean).to_vector<bool>(),
            (std::vector<bool>{false, true, true}));
  expect_same_on_every_executor("to bool from i64", [&] {
    return kiln::convert(Tensor::from(std::vector<std::int64_t>{0, std::int64_t{1} << 40, -1}),
                         DType::boolean);
  });
}

TEST(Bool, ArithmeticAndCountingFollowLibtorch) {
  const Tensor a = Tensor::from(std::vector<bool>{false, false, true, true});
  const Tensor b = Tensor::from(std::vector<bool>{false, true, false, true});
  EXPECT_EQ((a + b).dtype(), DType::boolean);
  EXPECT_EQ(ints(a + b), (std::vector<std::int32_t>{0, 1, 1, 1}));  // or
  EXPECT_EQ(ints(a * b), (std::vector<std::int32_t>{0, 0, 0, 1}));  // and
  EXPECT_EQ(ints(kiln::maximum(a, b)), (std::vector<std::int32_t>{0, 1, 1, 1}));
  // Negation and subtraction have no boolean meaning: an error at build time, naming the op.
  const kiln::Error neg = kiln_test::error_of([&] { (void)kiln::neg(a); });
  EXPECT_EQ(neg.code(), kiln::ErrorCode::wrong_type);
  EXPECT_NE(std::string(neg.what()).find("neg"), std::string::npos) << neg.what();
  EXPECT_NE(std::string(neg.what()).find("bool"), std::string::npos) << neg.what();
  EXPECT_EQ(kiln_test::code_of([&] { (void)(a - b); }), kiln::ErrorCode::wrong_type);
  // Scalars of a higher kind win; the tensor's kind wins otherwise.
  EXPECT_EQ((a + 1).dtype(), DType::i32);
  EXPECT_EQ(ints(a + 1), (std::vector<std::int32_t>{1, 1, 2, 2}));
  EXPECT_EQ((a * 0.5).dtype(), kiln::default_dtype());
  EXPECT_EQ((a + true).dtype(), DType::boolean);
  EXPECT_EQ((a + kiln::tensor({1, 2, 3, 4})).dtype(), DType::i32);
  // Counting in i64; float-valued reductions in the default float type.
  const Tensor mask = kiln::arange(10) > 2;
  EXPECT_EQ(kiln::sum(mask).dtype(), DType::i64);
  EXPECT_EQ(kiln::sum(mask).item<std::int64_t>(), 7);
  EXPECT_EQ(kiln::cumsum(mask, 0).dtype(), DType::i64);
  EXPECT_EQ(kiln::cumsum(mask, 0).to_vector<std::int64_t>().back(), 7);
  EXPECT_EQ(kiln::prod(mask).item<std::int64_t>(), 0);
  EXPECT_EQ(kiln::mean(mask).dtype(), kiln::default_dtype());
  EXPECT_NEAR(kiln::mean(mask).item<double>(), 0.7, 1e-7);
  EXPECT_EQ(kiln::exp(mask).dtype(), kiln::default_dtype());
  EXPECT_EQ(kiln::max(mask).dtype(), DType::boolean);
  EXPECT_EQ(kiln::argmax(mask, 0).item<std::int64_t>(), 3);
  // A mask selects.
  const Tensor x = kiln::convert(kiln::arange(10), DType::f32);
  EXPECT_EQ(kiln::where(mask, x, -x).to_vector<float>().front(), -0.0f);
  EXPECT_EQ(kiln::masked_select(x, mask).numel(), 7);
  EXPECT_EQ(kiln::masked_fill(x, mask, 0.0).to_vector<float>()[5], 0.0f);
}

TEST(Bool, MasksThroughViewsAndBroadcastingOnEveryExecutor) {
  auto values = [] {
    return kiln::reshape(kiln::convert(kiln::arange(20), DType::f32), {4, 5}) - 9.5f;
  };
  expect_same_on_every_executor("a transposed mask", [&] {
    return kiln::transpose(values() > 0, 0, 1) & kiln::transpose(values() < 7, 0, 1);
  });
  expect_same_on_every_executor("a strided slice of a stored mask", [&] {
    const Tensor m = (values() > 0).eval();
    return kiln::convert(kiln::slice(m, {0, 1}, {4, 5}, {2, 2}), DType::i32) + 1;
  });
  expect_same_on_every_executor("a mask padded with true", [&] {
    return kiln::pad((values() > 0).eval(), {1, 0}, {0, 2}, true);
  });
  expect_same_on_every_executor("a row mask broadcast over the columns", [&] {
    const Tensor rows = kiln::tensor({1, 0, 1, 1}) > 0;
    return kiln::where(kiln::reshape(rows, {4, 1}), values(), values() * 2);
  });
  expect_same_on_every_executor("a column mask broadcast, and inverse-broadcast", [&] {
    const Tensor columns = (kiln::tensor({3, 0, -1, 2, 0}) != 0).eval();
    const Tensor rows = (kiln::tensor({0, 1, 1, 0}) != 0).eval();
    return kiln::masked_fill(values(), columns, 7.0) +
           kiln::convert(values() > 0, DType::f32) *
               kiln::convert(rows, DType::f32).inverse_broadcast();
  });
  // The values, once: the reference agrees with the arithmetic.
  const Tensor m = kiln::transpose(values() > 0, 0, 1);
  EXPECT_EQ(m.shape(), (Shape{5, 4}));
  EXPECT_EQ(ints(m)[0 * 4 + 2], 1);  // values()[2][0] = 0.5
  EXPECT_EQ(ints(m)[4 * 4 + 1], 0);  // values()[1][4] = -0.5
}

// n values in [-1, 1), the same on every run.
Tensor wavy(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 200) / 100 - 1;
  return Tensor::from(v);
}

TEST(Bool, FusedKernelsStoreMasksTheyAlsoUse) {
  // The mask is a result of its own and an operand of the kernel that computes it: a stored bool
  // register, read back as i32 by the ops after it.
  expect_same_on_every_executor("a stored mask", [] {
    const Tensor x = wavy(1000) * 1.5f;
    const Tensor mask = (x > 0.25f) | (x < -0.75f);
    const Tensor y = kiln::where(mask, x, 0.0f) + kiln::convert(mask, DType::f32);
    kiln::eval_all({mask, y});
    return kiln::concat({kiln::convert(mask, DType::f32), y}, 0);
  });
  expect_same_on_every_executor("a reduction of masks", [] {
    const Tensor x = wavy(600);
    return kiln::reshape(kiln::any(kiln::reshape(x > 0.9f, {20, 30}), 1), {20});
  });
}

TEST(Bool, MasksIndexAsInLibtorch) {
  using kiln::indexing::Slice;
  const Tensor x = kiln::reshape(kiln::convert(kiln::arange(12), DType::f32), {3, 4}) - 5.0f;
  // A mask over every dimension: the selected elements, in row-major order.
  EXPECT_EQ(x.index({x > 0}).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // A mask over the rows: whole rows; after a slice: the columns it selects.
  const Tensor rows = Tensor::from(std::vector<bool>{true, false, true});
  EXPECT_EQ(x.index({rows}).shape(), (Shape{2, 4}));
  EXPECT_EQ(x.index({rows}).to_vector<float>()[4], 3.0f);
  const Tensor columns = Tensor::from(std::vector<bool>{false, true, false, true});
  EXPECT_EQ(x.index({Slice(), columns}).to_vector<float>(),
            (std::vector<float>{-4, -2, 0, 2, 4, 6}));
  // Assignment through a mask, and the mismatch error.
  EXPECT_EQ(kiln::min(x.index_put({x < 0}, 0.0)).item<float>(), 0.0f);
  EXPECT_EQ(kiln_test::code_of([&] { (void)x.index({columns}); }),
            kiln::ErrorCode::incompatible_shapes);
  // A gradient reaches the selected elements only.
  const Tensor w = kiln::ones({3, 4}).watch();
  Tensor g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradient(kiln::sum(w.index({x > 4})), w);
  }
  EXPECT_EQ(kiln::sum(g).item<float>(), 2.0f);
}

TEST(Bool, FilesKeepBool) {
  const Tensor mask = kiln::tensor({3, 0, -2, 0}) != 0;
  const Tensor npy = kiln::data::parse_npy(kiln::data::serialize_npy(mask));
  EXPECT_EQ(npy.dtype(), DType::boolean);
  EXPECT_EQ(npy.to_vector<bool>(), (std::vector<bool>{true, false, true, false}));
  const std::vector<std::byte> st = kiln::serialize_safetensors({{"mask", mask}});
  const std::string text(reinterpret_cast<const char*>(st.data()), st.size());
  EXPECT_NE(text.find("\"BOOL\""), std::string::npos);
  const kiln::Safetensors loaded = kiln::parse_safetensors(st);
  EXPECT_EQ(loaded.at("mask").dtype(), DType::boolean);
  EXPECT_EQ(loaded.at("mask").to_vector<bool>(), (std::vector<bool>{true, false, true, false}));
}

TEST(Bool, GradientsFlowAroundMasks) {
  // d/dx sum(where(x > 0, x^2, -x) * mask) against central differences.
  const std::vector<double> points = {-1.5, -0.25, 0.3, 0.9, 2.0, -3.0};
  const Tensor keep = Tensor::from(std::vector<bool>{true, true, false, true, true, true});
  kiln_test::expect_gradient_near_differences(
      [&](const Tensor& x) {
        return kiln::sum(kiln::where(x > 0, x * x, -x) * kiln::convert(keep, DType::f64));
      },
      points, 1e-6);
}

TEST(Bool, TheCApiKeepsFlintsInt32Comparisons) {
  const float values[] = {1, -2, 3};
  const size_t shape[] = {3};
  FGraphNode* a = fCreateGraph(values, 3, F_FLOAT32, shape, 1);
  ASSERT_NE(a, nullptr);
  FGraphNode* less = fless_cf(a, 0.5f);
  ASSERT_NE(less, nullptr);
  EXPECT_EQ(less->operation.data_type, F_INT32);
  EXPECT_EQ(less->operation.op_type, FLESS);
  FGraphNode* result = fCalculateResult(less);
  ASSERT_NE(result, nullptr);
  const int* r = static_cast<const int*>(result->result_data->data);
  EXPECT_EQ(std::vector<int>(r, r + 3), (std::vector<int>{0, 1, 0}));
  fFreeGraph(result);
  // A bool tensor cannot reach the C API unconverted.
  try {
    (void)kiln::capi::to_ftype(DType::boolean);
    ADD_FAILURE() << "a bool tensor got an FType";
  } catch (const kiln::capi::CError& e) {
    EXPECT_EQ(e.code(), WRONG_TYPE);
  }
}

}  // namespace
