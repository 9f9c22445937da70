// Data-dependent selection: index (Flint's findex, decision 17), index_set (findex_set,
// decision 9), the PyTorch-style gather / scatter_add / index_select, and one_hot. Spec examples,
// hand values, the decision-17 formula against a nested-loop model over random shapes, range
// errors (found when built, or for lazily computed indices when evaluated), float indices and
// empty selections.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using Vd = std::vector<double>;
using I32 = std::vector<std::int32_t>;
using I64 = std::vector<std::int64_t>;

using kiln_test::code_of;

using kiln_test::numel_of;

std::vector<std::int64_t> unravel(std::int64_t pos, const Shape& s) {
  std::vector<std::int64_t> idx(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    idx[d] = pos % s[d];
    pos /= s[d];
  }
  return idx;
}

std::int64_t ravel(const std::vector<std::int64_t>& idx, const Shape& s) {
  std::int64_t pos = 0;
  for (std::size_t d = 0; d < s.size(); ++d) pos = pos * s[d] + idx[d];
  return pos;
}

Tensor iota(const Shape& s) {
  Vd v(static_cast<std::size_t>(numel_of(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from(v, s);
}

// The spec's a = [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10, 11]]] (i32 [3,2,2]).
Tensor spec_a() {
  return kiln::tensor<std::int32_t>({{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {{8, 9}, {10, 11}}});
}

Tensor i32(I32 v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor i64(I64 v, Shape s) { return Tensor::from(v, std::move(s)); }

// Decision 17: result[i_0..i_{d-1}][j][rest] = a[i_0..i_{d-1}][indices[i_0..i_{d-1}][j]][rest].
Vd ref_index(const Vd& a, const Shape& ashape, const I64& idx, const Shape& ishape,
             Shape* out_shape) {
  const std::size_t d = ishape.size() - 1;
  Shape rshape = ashape;
  rshape[d] = ishape[d];
  Vd out(static_cast<std::size_t>(numel_of(rshape)));
  for (std::int64_t i = 0; i < numel_of(rshape); ++i) {
    auto m = unravel(i, rshape);
    std::vector<std::int64_t> im(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(d + 1));
    m[d] = idx[static_cast<std::size_t>(ravel(im, ishape))];
    out[static_cast<std::size_t>(i)] = a[static_cast<std::size_t>(ravel(m, ashape))];
  }
  *out_shape = rshape;
  return out;
}

// Decision 9: places that receive elements of b get their sum, others keep a; negatives drop.
Vd ref_index_set(const Vd& a, const Shape& ashape, const Vd& b, const Shape& bshape,
                 const I64& idx, const Shape& ishape) {
  const std::size_t d = ishape.size() - 1;
  Vd sums(a.size(), 0.0);
  std::vector<bool> hit(a.size(), false);
  for (std::int64_t i = 0; i < numel_of(bshape); ++i) {
    auto m = unravel(i, bshape);
    std::vector<std::int64_t> im(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(d + 1));
    const std::int64_t k = idx[static_cast<std::size_t>(ravel(im, ishape))];
    if (k < 0) continue;
    m[d] = k;
    const auto to = static_cast<std::size_t>(ravel(m, ashape));
    sums[to] += b[static_cast<std::size_t>(i)];
    hit[to] = true;
  }
  Vd out = a;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (hit[i]) out[i] = sums[i];
  return out;
}

// ---- index (findex) ---------------------------------------------------------------------------

TEST(Index, SpecExample1) {
  const Tensor r = kiln::index(spec_a(), i32({1, 0}, {2}));
  EXPECT_EQ(r.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_vector<std::int32_t>(), (I32{4, 5, 6, 7, 0, 1, 2, 3}));
}

TEST(Index, Decision17OneIndexPerRow) {
  // indices [[0],[1],[0]]: d = 1, result[i][0][:] = a[i][indices[i][0]][:]. (The values printed
  // in the spec for this call come from an older version; decision 17 supersedes them.)
  const Tensor r = kiln::index(spec_a(), i32({0, 1, 0}, {3, 1}));
  EXPECT_EQ(r.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(r.to_vector<std::int32_t>(), (I32{0, 1, 6, 7, 8, 9}));
}

TEST(Index, Decision17TwoIndicesPerRow) {
  // indices [[0,0],[1,0],[0,1]] (the spec's fourth call, decided by the formula).
  const Tensor r = kiln::index(spec_a(), i64({0, 0, 1, 0, 0, 1}, {3, 2}));
  EXPECT_EQ(r.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(r.to_vector<std::int32_t>(), (I32{0, 1, 0, 1, 6, 7, 4, 5, 8, 9, 10, 11}));
}

TEST(Index, Decision17LastDimension) {
  // indices [3,2,3]: d = 2, result[i][j][k] = a[i][j][indices[i][j][k]].
  const Tensor idx = i32({1, 1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 0, 1}, {3, 2, 3});
  const Tensor r = kiln::index(spec_a(), idx);
  EXPECT_EQ(r.shape(), (Shape{3, 2, 3}));
  EXPECT_EQ(r.to_vector<std::int32_t>(),
            (I32{1, 1, 0, 2, 3, 2, 4, 4, 4, 7, 7, 7, 9, 8, 9, 10, 10, 11}));
}

TEST(Index, RepeatsAndFewerOrMoreSelections) {
  // Along dimension 0 with more indices than rows: [2,2,0,1,2] -> [5,2,2].
  const Tensor r = kiln::index(spec_a(), i32({2, 2, 0, 1, 2}, {5}));
  EXPECT_EQ(r.shape(), (Shape{5, 2, 2}));
  EXPECT_EQ(r.to_vector<std::int32_t>(),
            (I32{8, 9, 10, 11, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(Index, FormulaAgainstNestedLoops) {
  std::mt19937 rng(17);
  for (int t = 0; t < 20; ++t) {
    const std::size_t rank = 1 + rng() % 4;
    Shape ashape(rank);
    for (auto& s : ashape) s = 1 + static_cast<std::int64_t>(rng() % 4);
    const std::size_t d = rng() % rank;
    Shape ishape(ashape.begin(), ashape.begin() + static_cast<std::ptrdiff_t>(d));
    ishape.push_back(static_cast<std::int64_t>(rng() % 5));  // J, possibly 0
    I64 idx(static_cast<std::size_t>(numel_of(ishape)));
    for (auto& k : idx) k = static_cast<std::int64_t>(rng() % static_cast<unsigned>(ashape[d]));
    const Tensor a = iota(ashape) * 1.5;
    Shape want_shape;
    const Vd want = ref_index(a.to_vector<double>(), ashape, idx, ishape, &want_shape);
    SCOPED_TRACE("case " + std::to_string(t) + " a " + kiln::shape_to_string(ashape) +
                 " indices " + kiln::shape_to_string(ishape));
    const Tensor r = kiln::index(a, i64(idx, ishape));
    EXPECT_EQ(r.shape(), want_shape);
    EXPECT_EQ(r.dtype(), DType::f64);
    EXPECT_EQ(r.to_vector<double>(), want);
  }
}

// Builds with f() and then evaluates the result: the error code from whichever step fails.
template <class F> kiln::ErrorCode code_of_build_or_eval(F f) {
  return code_of([&] { f().eval(); });
}

TEST(Index, OutOfRangeIsInvalidSelect) {
  const Tensor a = spec_a();
  EXPECT_EQ(code_of_build_or_eval([&] { return kiln::index(a, i32({0, 3}, {2})); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of_build_or_eval([&] { return kiln::index(a, i32({0, -1}, {2})); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of_build_or_eval([&] { return kiln::index(a, i32({0, 2, 0}, {3, 1})); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of_build_or_eval([&] {
              return kiln::index(a, i64({0, 1, 0, 1, 0, 1, 0, 1, 2, 0, 0, 0}, {3, 2, 2}));
            }),
            ErrorCode::invalid_select);
}

// indexing.hpp: the error is "raised when the node is built if the indices are known then".
// Indices made with Tensor::from are known, so building must already throw.
TEST(Index, OutOfRangeKnownIndicesFailWhenBuilt) {
  const Tensor a = spec_a();
  EXPECT_EQ(code_of([&] { kiln::index(a, i32({0, 3}, {2})); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::index(a, i32({0, -1}, {2})); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::index(a, i32({0, 2, 0}, {3, 1})); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::index(a, i64({0, 1, 0, 1, 0, 1, 0, 1, 2, 0, 0, 0}, {3, 2, 2})); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::index_select(iota({3, 4}), 0, i32({3}, {1})); }),
            ErrorCode::invalid_select);
  // index_set with indices [2] spread over b [2,2].
  EXPECT_EQ(code_of([&] { kiln::index_set(iota({3, 2}), iota({2, 2}), i32({0, 3}, {2})); }),
            ErrorCode::invalid_select);
}

TEST(Index, LazilyComputedOutOfRangeIndicesFailWhenEvaluated) {
  const Tensor a = spec_a();
  const Tensor lazy = i32({1, 0}, {2}) + 2;  // [3, 2]: 3 is outside dimension 0 (size 3)
  Tensor r;
  // The indices are not known when the node is built, so building succeeds ...
  EXPECT_EQ(code_of([&] { r = kiln::index(a, lazy); }), ErrorCode::none);
  ASSERT_TRUE(r.defined());
  // ... and evaluating reports the bad index, as a kiln::Error with invalid_select.
  EXPECT_EQ(code_of([&] { r.eval(); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)r.to_vector<std::int32_t>(); }), ErrorCode::invalid_select);
  // Through a consumer as well.
  const Tensor s = kiln::sum(kiln::index(a, i32({0, 1}, {2}) - 1));
  EXPECT_EQ(code_of([&] { (void)s.item<std::int32_t>(); }), ErrorCode::invalid_select);
  // Lazily computed indices that are in range work.
  const Tensor ok = kiln::index(a, i32({1, 0}, {2}) + 1);
  EXPECT_EQ(ok.to_vector<std::int32_t>(), (I32{8, 9, 10, 11, 4, 5, 6, 7}));
}

TEST(Index, ShapeMismatchIsAnError) {
  // indices [2,1]: the prefix [2] is not a prefix of [3,2,2].
  EXPECT_NE(code_of([&] { kiln::index(spec_a(), i32({0, 0}, {2, 1})); }), ErrorCode::none);
  // indices of rank 4 on a rank-3 tensor.
  EXPECT_NE(code_of([&] { kiln::index(spec_a(), kiln::zeros({3, 2, 2, 1}, DType::i32)); }),
            ErrorCode::none);
}

TEST(Index, EmptySelections) {
  const Tensor r0 = kiln::index(spec_a(), i32({}, {0}));
  EXPECT_EQ(r0.shape(), (Shape{0, 2, 2}));
  EXPECT_TRUE(r0.to_vector<std::int32_t>().empty());
  const Tensor r1 = kiln::index(spec_a(), i32({}, {3, 0}));
  EXPECT_EQ(r1.shape(), (Shape{3, 0, 2}));
  EXPECT_EQ(r1.numel(), 0);
  EXPECT_TRUE(r1.to_vector<double>().empty());
}

// ---- index_set (findex_set) -------------------------------------------------------------------

TEST(IndexSet, SpecExample1) {
  const Tensor a = kiln::tensor<std::int32_t>({{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  const Tensor b = kiln::tensor<std::int32_t>({{4, 5}, {6, 7}, {8, 9}});
  const Tensor r = kiln::index_set(a, b, i32({0, 0, 2}, {3}));
  EXPECT_EQ(r.shape(), (Shape{4, 2}));
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_vector<std::int32_t>(), (I32{10, 12, 2, 3, 8, 9, 6, 7}));
}

TEST(IndexSet, SpecExample2) {
  const Tensor a = kiln::tensor<std::int32_t>({{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  const Tensor b = kiln::tensor<std::int32_t>({{4, 5}, {6, 7}, {8, 9}, {10, 11}});
  const Tensor idx = kiln::tensor<std::int32_t>({{-1, 0}, {1, 1}, {1, 0}, {1, -1}});
  const Tensor r = kiln::index_set(a, b, idx);
  EXPECT_EQ(r.shape(), (Shape{4, 2}));
  EXPECT_EQ(r.to_vector<std::int32_t>(), (I32{5, 1, 2, 13, 9, 8, 6, 10}));
}

TEST(IndexSet, NegativeIndexDrops) {
  const Tensor a = kiln::tensor<double>({1, 2, 3}, kiln::DType::f64);
  const Tensor b = kiln::tensor<double>({10, 20}, kiln::DType::f64);
  EXPECT_EQ(kiln::index_set(a, b, i64({-1, 2}, {2})).to_vector<double>(), (Vd{1, 2, 20}));
  EXPECT_EQ(kiln::index_set(a, b, i64({-5, -1}, {2})).to_vector<double>(), (Vd{1, 2, 3}));
  // Both to the same place: their sum replaces the old value.
  EXPECT_EQ(kiln::index_set(a, b, i64({1, 1}, {2})).to_vector<double>(), (Vd{1, 30, 3}));
}

TEST(IndexSet, NothingSentLeavesAUnchanged) {
  const Tensor a = kiln::tensor<double>({{1.5, -2}, {3, 4}}, kiln::DType::f64);
  // Every index negative.
  const Tensor b = kiln::tensor<double>({{7, 8}, {9, 10}}, kiln::DType::f64);
  EXPECT_EQ(kiln::index_set(a, b, i32({-1, -1}, {2})).to_vector<double>(), (Vd{1.5, -2, 3, 4}));
  // No elements at all: b [0,2], indices [0].
  const Tensor empty_b = Tensor::from(Vd{}, Shape{0, 2});
  const Tensor r = kiln::index_set(a, empty_b, i32({}, {0}));
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(r.to_vector<double>(), (Vd{1.5, -2, 3, 4}));
}

TEST(IndexSet, ReplacesNotAdds) {
  // A place that receives an element loses its old value even when the sum is 0.
  const Tensor a = kiln::tensor<double>({5, 5, 5}, kiln::DType::f64);
  const Tensor b = kiln::tensor<double>({2, -2, 0}, kiln::DType::f64);
  EXPECT_EQ(kiln::index_set(a, b, i32({0, 0, 2}, {3})).to_vector<double>(), (Vd{0, 5, 0}));
}

TEST(IndexSet, AgainstNestedLoops) {
  std::mt19937 rng(9);
  for (int t = 0; t < 20; ++t) {
    const std::size_t rank = 1 + rng() % 3;
    Shape ashape(rank);
    for (auto& s : ashape) s = 1 + static_cast<std::int64_t>(rng() % 4);
    const std::size_t d = rng() % rank;
    Shape bshape = ashape;
    bshape[d] = static_cast<std::int64_t>(rng() % 5);
    Shape ishape(bshape.begin(), bshape.begin() + static_cast<std::ptrdiff_t>(d + 1));
    I64 idx(static_cast<std::size_t>(numel_of(ishape)));
    for (auto& k : idx)
      k = static_cast<std::int64_t>(rng() % static_cast<unsigned>(ashape[d] + 1)) - 1;  // -1..n-1
    const Tensor a = iota(ashape) + 100.0;
    const Tensor b = iota(bshape) * 0.5 + 1.0;
    const Vd want = ref_index_set(a.to_vector<double>(), ashape, b.to_vector<double>(), bshape,
                                  idx, ishape);
    SCOPED_TRACE("case " + std::to_string(t) + " a " + kiln::shape_to_string(ashape) + " b " +
                 kiln::shape_to_string(bshape) + " indices " + kiln::shape_to_string(ishape));
    const Tensor r = kiln::index_set(a, b, i64(idx, ishape));
    EXPECT_EQ(r.shape(), ashape);
    EXPECT_EQ(r.to_vector<double>(), want);
  }
}

TEST(IndexSet, OutOfRangeIsInvalidSelect) {
  const Tensor a = kiln::tensor<double>({1, 2, 3}, kiln::DType::f64);
  const Tensor b = kiln::tensor<double>({10, 20}, kiln::DType::f64);
  EXPECT_EQ(code_of([&] { kiln::index_set(a, b, i32({0, 3}, {2})); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of_build_or_eval(
                [&] { return kiln::index_set(iota({3, 2}), iota({2, 2}), i32({0, 3}, {2})); }),
            ErrorCode::invalid_select);
  const Tensor lazy = i32({0, 1}, {2}) * 3;  // [0, 3]
  Tensor r;
  EXPECT_EQ(code_of([&] { r = kiln::index_set(a, b, lazy); }), ErrorCode::none);
  EXPECT_EQ(code_of([&] { (void)r.to_vector<double>(); }), ErrorCode::invalid_select);
}

// ---- gather / scatter_add ---------------------------------------------------------------------

TEST(Gather, HandValues) {
  const Tensor t = kiln::tensor<double>({{1, 2}, {3, 4}}, kiln::DType::f64);
  EXPECT_EQ(kiln::gather(t, 1, i64({0, 0, 1, 0}, {2, 2})).to_vector<double>(), (Vd{1, 1, 4, 3}));
  EXPECT_EQ(kiln::gather(t, 0, i64({1, 0, 0, 0}, {2, 2})).to_vector<double>(), (Vd{3, 2, 1, 2}));
  EXPECT_EQ(kiln::gather(t, -1, i32({1, 1, 0, 0}, {2, 2})).to_vector<double>(), (Vd{2, 2, 3, 3}));
  // Indices smaller than a outside the axis, and longer along it.
  const Tensor a = iota({3, 3});
  const Tensor g = kiln::gather(a, 1, i32({0, 2, 2, 1, 1, 0}, {2, 3}));
  EXPECT_EQ(g.shape(), (Shape{2, 3}));
  EXPECT_EQ(g.to_vector<double>(), (Vd{0, 2, 2, 4, 4, 3}));
  const Tensor g2 = kiln::gather(a, 0, i32({2, 0, 1, 2}, {4, 1}));
  EXPECT_EQ(g2.shape(), (Shape{4, 1}));
  EXPECT_EQ(g2.to_vector<double>(), (Vd{6, 0, 3, 6}));
}

TEST(Gather, ErrorsAndEmpty) {
  const Tensor a = iota({2, 3});
  EXPECT_EQ(code_of([&] { kiln::gather(a, 1, i32({3}, {1, 1})); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { kiln::gather(a, 1, i32({-1}, {1, 1})); }), ErrorCode::invalid_select);
  EXPECT_NE(code_of([&] { kiln::gather(a, 1, i32({0, 1}, {2})); }), ErrorCode::none);  // rank
  const Tensor e = kiln::gather(a, 1, i32({}, {2, 0}));
  EXPECT_EQ(e.shape(), (Shape{2, 0}));
  EXPECT_TRUE(e.to_vector<double>().empty());
}

TEST(ScatterAdd, HandValues) {
  // PyTorch's documented example: zeros(3,5).scatter_add_(0, index, ones(2,5)).
  const Tensor z = kiln::zeros({3, 5}, DType::f64);
  const Tensor idx = i64({0, 1, 2, 0, 0, 2, 0, 0, 1, 2}, {2, 5});
  const Tensor r = kiln::scatter_add(z, 0, idx, kiln::ones({2, 5}, DType::f64));
  EXPECT_EQ(r.shape(), (Shape{3, 5}));
  EXPECT_EQ(r.to_vector<double>(), (Vd{1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
  // Only the first row of index: src's second row is not used.
  const Tensor r1 = kiln::scatter_add(z, 0, i64({0, 1, 2, 0, 0}, {1, 5}),
                                      kiln::ones({2, 5}, DType::f64));
  EXPECT_EQ(r1.to_vector<double>(), (Vd{1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0}));
  // Onto a non-zero base along axis 1, with repeats adding up.
  const Tensor base = kiln::tensor<double>({{1, 2, 3}, {4, 5, 6}}, kiln::DType::f64);
  const Tensor src = kiln::tensor<double>({{10, 20, 30}, {40, 50, 60}}, kiln::DType::f64);
  const Tensor r2 = kiln::scatter_add(base, 1, i32({2, 2, 0, 1, 1, 1}, {2, 3}), src);
  EXPECT_EQ(r2.to_vector<double>(), (Vd{31, 2, 33, 4, 155, 6}));
}

TEST(ScatterAdd, ErrorsAndEmpty) {
  const Tensor a = kiln::zeros({2, 3}, DType::f64);
  const Tensor src = kiln::ones({2, 3}, DType::f64);
  EXPECT_EQ(code_of([&] { kiln::scatter_add(a, 1, i32({3}, {1, 1}), src); }),
            ErrorCode::invalid_select);
  // scatter_add does not drop negative indices: they are out of range.
  EXPECT_EQ(code_of([&] { kiln::scatter_add(a, 1, i32({-1}, {1, 1}), src); }),
            ErrorCode::invalid_select);
  const Tensor r = kiln::scatter_add(a + 2.0, 0, i32({}, {0, 3}), src);
  EXPECT_EQ(r.to_vector<double>(), (Vd{2, 2, 2, 2, 2, 2}));
}

// ---- index_select -----------------------------------------------------------------------------

TEST(IndexSelect, HandValues) {
  const Tensor a = iota({3, 4});
  const Tensor r0 = kiln::index_select(a, 0, i32({2, 0, 2}, {3}));
  EXPECT_EQ(r0.shape(), (Shape{3, 4}));
  EXPECT_EQ(r0.to_vector<double>(), (Vd{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  const Tensor r1 = kiln::index_select(a, -1, i64({3, 1}, {2}));
  EXPECT_EQ(r1.shape(), (Shape{3, 2}));
  EXPECT_EQ(r1.to_vector<double>(), (Vd{3, 1, 7, 5, 11, 9}));
  // The middle axis of a 3-D tensor.
  const Tensor r2 = kiln::index_select(spec_a(), 1, i32({1}, {1}));
  EXPECT_EQ(r2.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(r2.to_vector<std::int32_t>(), (I32{2, 3, 6, 7, 10, 11}));
}

TEST(IndexSelect, ErrorsAndEmpty) {
  const Tensor a = iota({3, 4});
  EXPECT_EQ(code_of_build_or_eval([&] { return kiln::index_select(a, 0, i32({3}, {1})); }),
            ErrorCode::invalid_select);
  EXPECT_NE(code_of([&] { kiln::index_select(a, 0, i32({0, 1}, {1, 2})); }), ErrorCode::none);
  const Tensor e = kiln::index_select(a, 1, i32({}, {0}));
  EXPECT_EQ(e.shape(), (Shape{3, 0}));
  EXPECT_TRUE(e.to_vector<double>().empty());
}

// ---- one_hot ----------------------------------------------------------------------------------

TEST(OneHot, HandValues) {
  const Tensor r = kiln::one_hot(i32({0, 2, 1}, {3}), 3);
  EXPECT_EQ(r.shape(), (Shape{3, 3}));
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 1, 0}));
  const Tensor r64 = kiln::one_hot(i64({1, 0, 3, 3}, {2, 2}), 4, DType::i64);
  EXPECT_EQ(r64.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(r64.dtype(), DType::i64);
  EXPECT_EQ(r64.to_vector<std::int64_t>(),
            (I64{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1}));
}

TEST(OneHot, LabelsOutsideTheClassesGiveZeroRows) {
  const Tensor r = kiln::one_hot(i32({-1, 3, 1, 100}, {4}), 3, DType::f64);
  EXPECT_EQ(r.to_vector<double>(), (Vd{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}));
  const Tensor e = kiln::one_hot(i32({}, {0}), 3);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
}

// ---- float indices ----------------------------------------------------------------------------

TEST(IndexErrors, FloatIndicesAreWrongType) {
  const Tensor a = iota({3, 2});
  const Tensor fidx = kiln::tensor<double>({1, 0}, kiln::DType::f64);
  const Tensor fidx2 = kiln::tensor<float>({{1.f}, {0.f}, {1.f}});
  EXPECT_EQ(code_of([&] { kiln::index(a, fidx); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { kiln::index(a, fidx2); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { kiln::index_set(a, iota({2, 2}), fidx); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { kiln::gather(a, 1, fidx2); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { kiln::scatter_add(a, 1, fidx2, a); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { kiln::index_select(a, 0, fidx); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([&] { kiln::one_hot(fidx, 3); }), ErrorCode::wrong_type);
}

}  // namespace
