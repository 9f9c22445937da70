// Broadcasting, spec decision 2: normal (aligned at the right), inverse (aligned at the left),
// NumPy's size-1 rule, normal winning where both fit unless the operand handle is marked, the
// mark never leaking into results, and no copy of the broadcast operand.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;

using kiln_test::code_of;

using kiln_test::numel_of;

// Values start, start + 1, ... as f64 (exact, so sums and products compare exactly).
std::vector<double> iota_values(const Shape& s, double start) {
  std::vector<double> v(static_cast<std::size_t>(numel_of(s)));
  std::iota(v.begin(), v.end(), start);
  return v;
}

Tensor iota(const Shape& s, double start = 1.0) { return Tensor::from(iota_values(s, start), s); }

// ============================================ normal ===========================================

TEST(Broadcast, NormalSuffix) {
  // [4,6,8] with [2,4,6,8]: the smaller repeats along the leading dimension.
  const Shape big{2, 4, 6, 8};
  const Shape small{4, 6, 8};
  auto b = iota(big, 0.0);
  auto a = iota(small, 1000.0);
  const auto bv = iota_values(big, 0.0);
  const auto av = iota_values(small, 1000.0);
  for (const auto& r : {kiln::add(b, a), kiln::add(a, b)}) {
    ASSERT_EQ(r.shape(), big);
    const auto rv = r.to_vector<double>();
    for (std::size_t i = 0; i < rv.size(); ++i) {
      ASSERT_EQ(rv[i], bv[i] + av[i % av.size()]) << "at " << i;
    }
  }
}

TEST(Broadcast, NormalRowVector) {
  // The example at the top of the Flint document (printed there for an addition).
  auto a = Tensor::from(std::vector<float>{0, 1, 2, 3, 4, 5}, Shape{2, 3});
  auto b = Tensor::from(std::vector<float>{2, 4, 6});
  auto r = a + b;
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{2, 5, 8, 5, 8, 11}));
  auto m = a * b;
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{0, 4, 12, 6, 16, 30}));
  auto s = b - a;
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{2, 3, 4, -1, 0, 1}));
}

// ============================================ inverse ==========================================

TEST(Broadcast, LeftAlignmentNeedsTheMark) {
  // NumPy and libtorch raise an error for these: so does the C++ API unless an operand is
  // marked (a shape bug must not give numbers).
  const auto a = iota({2, 3}), b = iota({2}), c = iota({2, 1}), d = iota({2, 3, 4});
  for (auto f : {+[](const Tensor&x, const Tensor&y) { return x + y; },
                 +[](const Tensor&x, const Tensor&y) { return x * y; },
                 +[](const Tensor&x, const Tensor&y) { return kiln::maximum(x, y); }}) {
    try {
      (void)f(a, b);
      ADD_FAILURE() << "[2,3] with [2] was accepted";
    } catch (const kiln::Error& e) {
      EXPECT_EQ(e.code(), kiln::ErrorCode::incompatible_shapes);
      EXPECT_NE(std::string(e.what()).find("[2,3] and [2]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("inverse_broadcast()"), std::string::npos) << e.what();
    }
    EXPECT_EQ(kiln_test::code_of([&] { (void)f(c, d); }), kiln::ErrorCode::incompatible_shapes);
    EXPECT_EQ(kiln_test::code_of([&] { (void)f(b, a); }), kiln::ErrorCode::incompatible_shapes);
    EXPECT_EQ(f(a, b.inverse_broadcast()).shape(), (Shape{2, 3}));
  }
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::where(b, a, a); }),
            kiln::ErrorCode::incompatible_shapes);
  EXPECT_EQ(kiln::where(b.inverse_broadcast(), a, a).shape(), (Shape{2, 3}));
}

TEST(Broadcast, InversePrefix) {
  // [2,4,6] with [2,4,6,8], the smaller marked: it repeats along the last dimension.
  const Shape big{2, 4, 6, 8};
  const Shape small{2, 4, 6};
  auto b = iota(big, 0.0);
  auto a = iota(small, 1000.0);
  const auto bv = iota_values(big, 0.0);
  const auto av = iota_values(small, 1000.0);
  for (const auto& r : {kiln::add(b, a.inverse_broadcast()), kiln::add(a.inverse_broadcast(), b)}) {
    ASSERT_EQ(r.shape(), big);
    const auto rv = r.to_vector<double>();
    for (std::size_t i = 0; i < rv.size(); ++i) {
      ASSERT_EQ(rv[i], bv[i] + av[i / 8]) << "at " << i;
    }
  }
}

TEST(Broadcast, InverseMatrixTimesVector) {
  // A[2,3] * B[2] = [[a00*b0, a01*b0, a02*b0], [a10*b1, a11*b1, a12*b1]].
  auto a = Tensor::from(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto b = Tensor::from(std::vector<double>{10, -1}).inverse_broadcast();
  auto r = a * b;
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{10, 20, 30, -4, -5, -6}));
  auto r2 = b * a;
  EXPECT_EQ(r2.shape(), (Shape{2, 3}));
  EXPECT_EQ(r2.to_vector<double>(), (std::vector<double>{10, 20, 30, -4, -5, -6}));
  auto r3 = a - b;
  EXPECT_EQ(r3.to_vector<double>(), (std::vector<double>{-9, -8, -7, 5, 6, 7}));
}

TEST(Broadcast, InverseWithSizeOneDimension) {
  // [2,1] with [2,3,4]: aligned at the right 1 vs 4 fits but 2 vs 3 does not; aligned at the
  // left 2 vs 2 and 1 vs 3 fit and the missing trailing dimension repeats.
  auto a = Tensor::from(std::vector<double>{100, 200}, Shape{2, 1}).inverse_broadcast();
  auto b = iota({2, 3, 4}, 0.0);
  auto r = a + b;
  ASSERT_EQ(r.shape(), (Shape{2, 3, 4}));
  const auto rv = r.to_vector<double>();
  for (std::size_t i = 0; i < rv.size(); ++i) {
    EXPECT_EQ(rv[i], static_cast<double>(i) + (i < 12 ? 100.0 : 200.0)) << "at " << i;
  }
}

// ============================================ NumPy size-1 rule ================================

TEST(Broadcast, SizeOneSameRank) {
  auto a = Tensor::from(std::vector<std::int32_t>{1, 2, 3}, Shape{1, 3});
  auto b = Tensor::from(std::vector<std::int32_t>{10, 20, 30, 40, 50, 60}, Shape{2, 3});
  auto r = a + b;
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_vector<std::int32_t>(), (std::vector<std::int32_t>{11, 22, 33, 41, 52, 63}));
  auto r2 = b - a;
  EXPECT_EQ(r2.to_vector<std::int32_t>(), (std::vector<std::int32_t>{9, 18, 27, 39, 48, 57}));
}

TEST(Broadcast, SizeOneOnBothSides) {
  // [2,1] + [1,3] -> [2,3]: each side repeats along its size-1 dimension.
  auto a = Tensor::from(std::vector<std::int64_t>{10, 20}, Shape{2, 1});
  auto b = Tensor::from(std::vector<std::int64_t>{1, 2, 3}, Shape{1, 3});
  auto r = a + b;
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_vector<std::int64_t>(), (std::vector<std::int64_t>{11, 12, 13, 21, 22, 23}));
  auto r2 = b + a;
  EXPECT_EQ(r2.shape(), (Shape{2, 3}));
  EXPECT_EQ(r2.to_vector<std::int64_t>(), (std::vector<std::int64_t>{11, 12, 13, 21, 22, 23}));
  // [2,1] with [3]: missing leading dimension and size-1 dimension at once.
  auto c = Tensor::from(std::vector<std::int64_t>{1, 2, 3});
  auto r3 = a * c;
  EXPECT_EQ(r3.shape(), (Shape{2, 3}));
  EXPECT_EQ(r3.to_vector<std::int64_t>(), (std::vector<std::int64_t>{10, 20, 30, 20, 40, 60}));
}

TEST(Broadcast, SizeOneInMiddle) {
  auto a = iota({2, 1, 3}, 0.0);
  auto b = iota({2, 4, 3}, 0.0);
  auto r = a + b;
  ASSERT_EQ(r.shape(), (Shape{2, 4, 3}));
  const auto rv = r.to_vector<double>();
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      for (std::size_t k = 0; k < 3; ++k) {
        const std::size_t idx = (i * 4 + j) * 3 + k;
        EXPECT_EQ(rv[idx], static_cast<double>(idx) + static_cast<double>(i * 3 + k));
      }
}

// ============================================ ambiguity and the mark ===========================

class Ambiguous : public ::testing::Test {
 protected:
  // A[3,5,3,5] * B[3,5]: both alignments fit.
  Tensor a = iota({3, 5, 3, 5}, 1.0);
  Tensor b = iota({3, 5}, 1.0);
  std::vector<double> av = iota_values({3, 5, 3, 5}, 1.0);
  std::vector<double> bv = iota_values({3, 5}, 1.0);

  void expect_normal(const Tensor& r) {
    ASSERT_EQ(r.shape(), (Shape{3, 5, 3, 5}));
    const auto rv = r.to_vector<double>();
    for (std::size_t i = 0; i < rv.size(); ++i) {
      ASSERT_EQ(rv[i], av[i] * bv[i % 15]) << "at " << i;
    }
  }
  void expect_inverse(const Tensor& r) {
    ASSERT_EQ(r.shape(), (Shape{3, 5, 3, 5}));
    const auto rv = r.to_vector<double>();
    for (std::size_t i = 0; i < rv.size(); ++i) {
      ASSERT_EQ(rv[i], av[i] * bv[i / 15]) << "at " << i;
    }
  }
};

TEST_F(Ambiguous, NormalByDefault) {
  expect_normal(a * b);
  expect_normal(b * a);
}

TEST_F(Ambiguous, InverseWhenMarked) {
  auto bi = b.inverse_broadcast();
  EXPECT_TRUE(bi.is_inverse_broadcast());
  EXPECT_TRUE(bi.same_node(b));
  EXPECT_EQ(bi.shape(), b.shape());
  expect_inverse(a * bi);
  expect_inverse(bi * a);
  expect_inverse(kiln::mul(a, bi));
}

TEST_F(Ambiguous, MarkBelongsToTheHandle) {
  auto bi = b.inverse_broadcast();
  // The original handle is not marked and still broadcasts normally.
  EXPECT_FALSE(b.is_inverse_broadcast());
  expect_normal(a * b);
  // Unmarking gives normal broadcasting again.
  auto bn = bi.normal_broadcast();
  EXPECT_FALSE(bn.is_inverse_broadcast());
  EXPECT_TRUE(bn.same_node(b));
  expect_normal(a * bn);
  // A copy of a marked handle is marked.
  Tensor copy = bi;
  EXPECT_TRUE(copy.is_inverse_broadcast());
  expect_inverse(a * copy);
}

TEST_F(Ambiguous, MarkDoesNotLeakIntoResults) {
  auto bi = b.inverse_broadcast();
  // An op between same-shaped operands, one of them marked: the result is [3,5] and unmarked.
  auto c = bi * kiln::ones({3, 5}, DType::f64);
  EXPECT_FALSE(c.is_inverse_broadcast());
  EXPECT_EQ(c.shape(), (Shape{3, 5}));
  // Used in another op, it broadcasts normally.
  expect_normal(a * c);
  expect_normal(c * a);
  // Results of ops that broadcast the marked operand are unmarked too.
  auto r = a * bi;
  EXPECT_FALSE(r.is_inverse_broadcast());
  // A unary op of a marked handle is unmarked.
  auto u = kiln::neg(bi);
  EXPECT_FALSE(u.is_inverse_broadcast());
  auto rv = (a * kiln::neg(u)).to_vector<double>();
  for (std::size_t i = 0; i < rv.size(); ++i) ASSERT_EQ(rv[i], av[i] * bv[i % 15]) << "at " << i;
}

TEST(Broadcast, MarkedOperandWhereOnlyNormalFitsThrows) {
  auto a = iota({2, 3, 4});
  auto b = iota({3, 4});
  EXPECT_NO_THROW(a + b);
  EXPECT_EQ(code_of([&] { a + b.inverse_broadcast(); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { b.inverse_broadcast() * a; }), ErrorCode::incompatible_shapes);
}

TEST(Broadcast, MarkedOperandWhereInverseFits) {
  // Marking an operand that only fits inversely anyway changes nothing.
  auto a = iota({2, 3});
  auto b = Tensor::from(std::vector<double>{10, 20});
  auto r = a + b.inverse_broadcast();
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{11, 12, 13, 24, 25, 26}));
}

// ============================================ errors ===========================================

TEST(Broadcast, IncompatibleShapes) {
  auto a = iota({2, 3});
  auto b = iota({4});
  try {
    kiln::add(a, b);
    FAIL() << "add of [2,3] and [4] did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::incompatible_shapes);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("add"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
  }
  EXPECT_EQ(code_of([&] { b* a; }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { kiln::less(a, b); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { kiln::where(a, a, b); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([] { iota({2, 3}) + iota({3, 2}); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([] { iota({2, 3, 4}) + iota({3, 5}); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([] { iota({2, 3}) + iota({2, 2}); }), ErrorCode::incompatible_shapes);
}

TEST(Broadcast, ErrorMessageNamesTheOp) {
  try {
    kiln::sub(iota({2, 3}), iota({5}));
    FAIL() << "did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::incompatible_shapes);
    EXPECT_NE(std::string(e.what()).find("sub"), std::string::npos) << e.what();
  }
}

// ============================================ 0-d and empty ====================================

TEST(Broadcast, ZeroDimScalarsBroadcastWithEverything) {
  auto s = kiln::scalar(2.0);
  EXPECT_EQ(s.rank(), 0);
  auto m = iota({2, 3});
  auto r = s * m;
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{2, 4, 6, 8, 10, 12}));
  auto r2 = m - s;
  EXPECT_EQ(r2.to_vector<double>(), (std::vector<double>{-1, 0, 1, 2, 3, 4}));
  auto r3 = s + kiln::scalar(3.0);
  EXPECT_EQ(r3.rank(), 0);
  EXPECT_EQ(r3.item<double>(), 5.0);
  auto r4 = s + iota({1});
  EXPECT_EQ(r4.shape(), (Shape{1}));
  auto r5 = s + iota({2, 1, 2});
  EXPECT_EQ(r5.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(r5.to_vector<double>(), (std::vector<double>{3, 4, 5, 6}));
  // A marked 0-d operand broadcasts as well.
  auto r6 = m + s.inverse_broadcast();
  EXPECT_EQ(r6.to_vector<double>(), (std::vector<double>{3, 4, 5, 6, 7, 8}));
}

TEST(Broadcast, EmptyDimensions) {
  auto e = Tensor::from(std::vector<double>{}, Shape{0, 3});
  auto r = e + iota({3});
  EXPECT_EQ(r.shape(), (Shape{0, 3}));
  EXPECT_EQ(r.numel(), 0);
  EXPECT_TRUE(r.to_vector<double>().empty());
  auto r2 = iota({1, 3}) * e;
  EXPECT_EQ(r2.shape(), (Shape{0, 3}));
  auto r3 = e + kiln::scalar(1.0);
  EXPECT_EQ(r3.shape(), (Shape{0, 3}));
  auto r4 = Tensor::from(std::vector<double>{}, Shape{3, 0}) + iota({3, 1});
  EXPECT_EQ(r4.shape(), (Shape{3, 0}));
  EXPECT_EQ(code_of([&] { e + iota({2, 3}); }), ErrorCode::incompatible_shapes);
}

// ============================================ broadcast_to =====================================

TEST(Broadcast, BroadcastToNormal) {
  auto t = Tensor::from(std::vector<std::int32_t>{1, 2, 3});
  auto r = kiln::broadcast_to(t, {2, 3});
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 3, 1, 2, 3}));
  auto r2 = kiln::broadcast_to(Tensor::from(std::vector<std::int32_t>{7, 8}, Shape{2, 1}), {2, 3});
  EXPECT_EQ(r2.to_vector<std::int32_t>(), (std::vector<std::int32_t>{7, 7, 7, 8, 8, 8}));
  auto r3 = kiln::broadcast_to(kiln::scalar(5), {2, 2});
  EXPECT_EQ(r3.to_vector<std::int32_t>(), (std::vector<std::int32_t>{5, 5, 5, 5}));
}

TEST(Broadcast, BroadcastToInverse) {
  auto t = Tensor::from(std::vector<std::int32_t>{1, 2});
  auto r = kiln::broadcast_to(t, {2, 3}, true);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 1, 1, 2, 2, 2}));
  // The ambiguous case follows the flag.
  auto sq = Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(kiln::broadcast_to(sq, {2, 2, 2}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_EQ(kiln::broadcast_to(sq, {2, 2, 2}, true).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 1, 2, 2, 3, 3, 4, 4}));
}

TEST(Broadcast, BroadcastToIncompatible) {
  auto t = Tensor::from(std::vector<std::int32_t>{1, 2});
  EXPECT_EQ(code_of([&] { kiln::broadcast_to(t, {2, 3}); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { kiln::broadcast_to(t, {3, 2}, true); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] {
              kiln::broadcast_to(iota({2, 3}), {3});
            }),
            ErrorCode::incompatible_shapes);
}

// ============================================ no copy ==========================================

TEST(Broadcast, OperandIsNotCopied) {
  auto a = iota({2, 3});
  auto b = iota({3});
  auto r = a + b;
  const auto in = r.inputs();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_TRUE(in[0].same_node(a));
  EXPECT_EQ(in[1].op_name(), "broadcast");
  EXPECT_EQ(in[1].shape(), (Shape{2, 3}));
  const auto inner = in[1].inputs();
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_TRUE(inner[0].same_node(b));
}

TEST(Broadcast, InverseOperandIsNotCopied) {
  auto a = iota({2, 3});
  auto b = iota({2});
  auto r = a * b.inverse_broadcast();
  const auto in = r.inputs();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_TRUE(in[0].same_node(a));
  EXPECT_EQ(in[1].op_name(), "broadcast");
  const auto inner = in[1].inputs();
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_TRUE(inner[0].same_node(b));
}

TEST(Broadcast, BroadcastToIsAView) {
  auto t = iota({3});
  auto r = kiln::broadcast_to(t, {4, 3});
  EXPECT_EQ(r.op_name(), "broadcast");
  const auto in = r.inputs();
  ASSERT_EQ(in.size(), 1u);
  EXPECT_TRUE(in[0].same_node(t));
}

}  // namespace
