// The C++ API as a libtorch user reaches for it: indexing, operators, sizes, conversions, the
// renamed shape ops, compound assignment, *_like, and one seed with a defined initialisation
// order in nn. (Weak scalars and left alignment are tested in test_elementwise.cpp and
// test_broadcast.cpp, the default float type in test_creation.cpp.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using kiln_test::code_of;
using namespace kiln::indexing;

using I32 = std::vector<std::int32_t>;
using I64 = std::vector<std::int64_t>;
using F64 = std::vector<double>;

// [2,3,4] holding 0..23.
Tensor iota234() {
  return kiln::reshape(kiln::convert(kiln::arange(24), DType::f64), {2, 3, 4});
}
F64 vals(const Tensor& t) { return t.to_vector<double>(); }

// Whether `t` is a view (no op that copies or computes between it and `base`).
bool is_view_of(const Tensor& t, const Tensor& base) {
  Tensor n = t;
  while (!n.same_node(base)) {
    const auto op = n.op_name();
    if (op != "reshape" && op != "permute" && op != "slice" && op != "broadcast") return false;
    n = n.inputs().at(0);
  }
  return true;
}

TEST(CppIndexing, SubscriptDropsTheFirstDimension) {
  const Tensor x = iota234();
  EXPECT_EQ(x[1].shape(), (Shape{3, 4}));
  EXPECT_EQ(vals(x[1][2]), (F64{20, 21, 22, 23}));
  EXPECT_EQ(x[-1][0][3].item<double>(), 15);
  EXPECT_EQ(x[1].rank(), 2);
  EXPECT_TRUE(is_view_of(x[1][2], x));
  EXPECT_EQ(code_of([&] { (void)x[2]; }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)x[-3]; }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)kiln::scalar(1)[0]; }), ErrorCode::illegal_dimensionality);
}

TEST(CppIndexing, IndexVocabulary) {
  const Tensor x = iota234();
  // x[:, 1] -> [2,4]
  EXPECT_EQ(vals(x.index({All, 1})), (F64{4, 5, 6, 7, 16, 17, 18, 19}));
  // x[0, 1:, ::2] -> [2,2]
  EXPECT_EQ(vals(x.index({0, Slice(1, None), Slice(None, None, 2)})), (F64{4, 6, 8, 10}));
  // x[..., -1] -> [2,3]
  EXPECT_EQ(vals(x.index({Ellipsis, -1})), (F64{3, 7, 11, 15, 19, 23}));
  // x[1, ..., 0] -> [3]
  EXPECT_EQ(vals(x.index({1, Ellipsis, 0})), (F64{12, 16, 20}));
  // x[None, 0, :, None, 2] -> [1,3,1]
  const Tensor n = x.index({None, 0, All, None, 2});
  EXPECT_EQ(n.shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(vals(n), (F64{2, 6, 10}));
  // Negative steps walk backwards: x[0, 0, ::-1], x[0, 0, 2:0:-1].
  EXPECT_EQ(vals(x.index({0, 0, Slice(None, None, -1)})), (F64{3, 2, 1, 0}));
  EXPECT_EQ(vals(x.index({0, 0, Slice(2, 0, -1)})), (F64{2, 1}));
  // Out-of-range slice bounds clamp, as in Python.
  EXPECT_EQ(x.index({Slice(-10, 10)}).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(x.index({Slice(5, 10)}).shape(), (Shape{0, 3, 4}));
  // Everything but the index tensor is a view.
  EXPECT_TRUE(is_view_of(x.index({0, Slice(1, None), Slice(None, None, 2)}), x));
  // An index tensor selects along its dimension; its shape takes the dimension's place.
  const Tensor picked = x.index({All, kiln::tensor<std::int64_t>({{2, 0}, {1, 1}}), 3});
  EXPECT_EQ(picked.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals(picked), (F64{11, 3, 7, 7, 23, 15, 19, 19}));
  // Errors name the problem.
  EXPECT_EQ(code_of([&] { (void)x.index({0, 0, 0, 0}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)x.index({Ellipsis, 0, Ellipsis}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)x.index({0, 3}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)x.index({Slice(0, 2, 0)}); }), ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { (void)x.index({kiln::tensor({0.5})}); }), ErrorCode::wrong_type);
}

TEST(CppIndexing, GradientFlowsThroughIndexing) {
  const Tensor x = iota234();
  x.watch();
  Tensor g;
  {
    kiln::GradientContext ctx;
    const Tensor y = x.index({1, Slice(0, 2), Slice(None, None, 3)}) * 2.0;
    g = kiln::gradient(kiln::sum(y), x);
  }
  F64 want(24, 0.0);
  for (int i : {12, 15, 16, 19}) want[i] = 2;
  EXPECT_EQ(vals(g), want);
}

TEST(CppIndexing, IndexPutIsFunctional) {
  const Tensor x = iota234();
  const Tensor y = x.index_put({0, All, 1}, -1.0);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.dtype(), DType::f64);
  F64 want = vals(x);
  for (int i : {1, 5, 9}) want[i] = -1;
  EXPECT_EQ(vals(y), want);
  EXPECT_EQ(vals(x)[1], 1) << "x itself is unchanged";
  // Values broadcast to the indexed shape and take x's type.
  const Tensor z = x.index_put({Ellipsis, 0}, kiln::tensor<std::int32_t>({7, 8, 9}));
  want = vals(x);
  for (int r = 0; r < 6; ++r) want[r * 4] = 7 + r % 3;
  EXPECT_EQ(vals(z), want);
  EXPECT_EQ(code_of([&] { (void)x.index_put({0}, kiln::zeros({4, 3})); }),
            ErrorCode::incompatible_shapes);
  // masked_fill and where are the other functional updates.
  const Tensor m = kiln::masked_fill(x, x > 20.0, 0);
  EXPECT_EQ(vals(m)[23], 0);
  EXPECT_EQ(vals(m)[20], 20);
}

TEST(CppOperators, ComparisonsAndLogic) {
  const Tensor a = kiln::tensor({1, 2, 3, 4});
  const Tensor b = kiln::tensor({4, 2, 2, 4});
  EXPECT_EQ((a < b).to_vector<std::int32_t>(), (I32{1, 0, 0, 0}));
  EXPECT_EQ((a <= b).to_vector<std::int32_t>(), (I32{1, 1, 0, 1}));
  EXPECT_EQ((a > b).to_vector<std::int32_t>(), (I32{0, 0, 1, 0}));
  EXPECT_EQ((a >= 3).to_vector<std::int32_t>(), (I32{0, 0, 1, 1}));
  EXPECT_EQ((a == b).to_vector<std::int32_t>(), (I32{0, 1, 0, 1}));
  EXPECT_EQ((2 != a).to_vector<std::int32_t>(), (I32{1, 0, 1, 1}));
  EXPECT_EQ((a == b).dtype(), DType::boolean);
  EXPECT_EQ(((a > 1) & (a < 4)).to_vector<std::int32_t>(), (I32{0, 1, 1, 0}));
  EXPECT_EQ(((a < 2) | (a > 3)).to_vector<std::int32_t>(), (I32{1, 0, 0, 1}));
  EXPECT_EQ(((a > 1) ^ (b > 2)).to_vector<std::int32_t>(), (I32{1, 1, 1, 0}));
  EXPECT_EQ((!(a > 2)).to_vector<std::int32_t>(), (I32{1, 1, 0, 0}));
  EXPECT_EQ((~(a > 2)).to_vector<std::int32_t>(), (I32{1, 1, 0, 0}));
}

TEST(CppOperators, CompoundAssignmentRebindsTheHandle) {
  Tensor x = kiln::tensor({1.f, 2.f});
  const Tensor before = x;
  x += 1.0;
  EXPECT_EQ(x.dtype(), DType::f32);
  x *= kiln::tensor({2.f, 3.f});
  x -= 0.5;
  x /= 2;
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.75f, 4.25f}));
  EXPECT_FALSE(x.same_node(before));
  EXPECT_EQ(before.to_vector<float>(), (std::vector<float>{1.f, 2.f})) << "other handles see the old value";
}

TEST(CppTensor, SizesAndConversions) {
  const Tensor x = iota234();
  EXPECT_EQ(x.dim(), 3);
  EXPECT_EQ(x.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(x.size(0), 2);
  EXPECT_EQ(x.size(-1), 4);
  EXPECT_EQ(code_of([&] { (void)x.size(3); }), ErrorCode::illegal_dimension);
  EXPECT_EQ(x.numel(), 24);
  EXPECT_EQ(x.to(DType::i32).dtype(), DType::i32);
  EXPECT_EQ(x[0][1][2].item<int>(), 6);
  const Tensor c = x.clone();
  EXPECT_FALSE(c.same_node(x));
  EXPECT_EQ(vals(c), vals(x));
  EXPECT_EQ(x.view({6, 4}).shape(), (Shape{6, 4}));
  EXPECT_EQ(kiln::zeros_like(x).dtype(), DType::f64);
  EXPECT_EQ(vals(kiln::ones_like(x[0][0])), (F64{1, 1, 1, 1}));
  EXPECT_EQ(kiln::full_like(x, 2.5).to_vector<double>(), F64(24, 2.5));
  EXPECT_EQ(kiln::zeros_like(x, DType::i64).dtype(), DType::i64);
  EXPECT_EQ(kiln::uniform_like(x).shape(), x.shape());
  EXPECT_EQ(kiln::uniform_like(x).dtype(), DType::f64);
  EXPECT_EQ(code_of([&] { (void)kiln::uniform_like(kiln::arange(3)); }), ErrorCode::wrong_type);
}

TEST(CppShapeOps, LibtorchMeanings) {
  const Tensor x = iota234();
  EXPECT_EQ(kiln::flatten(x).shape(), (Shape{24}));
  EXPECT_EQ(kiln::flatten(x, 1).shape(), (Shape{2, 12}));
  EXPECT_EQ(kiln::flatten(x, 0, 1).shape(), (Shape{6, 4}));
  EXPECT_EQ(x.flatten(-2).shape(), (Shape{2, 12}));
  EXPECT_EQ(kiln::flatten(kiln::scalar(1)).shape(), (Shape{1}));
  EXPECT_EQ(code_of([&] { (void)kiln::flatten(x, 2, 1); }), ErrorCode::illegal_dimension);
  // Flint's fflatten_dimension keeps its meaning under a name that says it.
  EXPECT_EQ(kiln::flatten_dimension(x, 1).shape(), (Shape{6, 4}));
  // expand: to a shape, -1 keeping a size.
  const Tensor col = kiln::reshape(kiln::arange(3), {3, 1});
  EXPECT_EQ(kiln::expand(col, {2, 3, 4}).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(col.expand({-1, 5}).shape(), (Shape{3, 5}));
  EXPECT_EQ(code_of([&] { (void)kiln::expand(col, {4, 4}); }), ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] { (void)kiln::expand(col, {-1, 3, 1}); }), ErrorCode::illegal_dimension);
  // Flint's fexpand: a new dimension by repetition.
  EXPECT_EQ(kiln::unsqueeze_expand(col, 0, 4).shape(), (Shape{4, 3, 1}));
  // transpose swaps two dimensions; t() is for matrices; reverse_dims reverses them all.
  EXPECT_EQ(kiln::transpose(x, 0, 2).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(x[0].t().shape(), (Shape{4, 3}));
  EXPECT_EQ(kiln::t(kiln::arange(3)).shape(), (Shape{3}));
  EXPECT_EQ(code_of([&] { (void)x.t(); }), ErrorCode::illegal_dimensionality);
  EXPECT_EQ(kiln::reverse_dims(x).shape(), (Shape{4, 3, 2}));
}

// Every random draw of kiln and kiln::nn comes from one generator.
TEST(CppSeed, OneGenerator) {
  EXPECT_EQ(&kiln::nn::manual_seed, &kiln::manual_seed);
  kiln::manual_seed(9);
  const kiln::nn::Linear a(3, 2);
  const F64 u1 = vals(kiln::uniform({4}, DType::f64));
  kiln::manual_seed(9);
  const kiln::nn::Linear b(3, 2);
  const F64 u2 = vals(kiln::uniform({4}, DType::f64));
  EXPECT_EQ(a.weight().value().to_vector<float>(), b.weight().value().to_vector<float>());
  EXPECT_EQ(u1, u2);
}

// Sequential(a, b, c) initialises its modules in their order, whatever order the compiler
// constructed the arguments in: the same values as constructing them and drawing again in order.
TEST(CppSeed, SequentialInitialisesInArgumentOrder) {
  namespace nn = kiln::nn;
  kiln::manual_seed(21);
  nn::Sequential model(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2, false));
  kiln::manual_seed(21);
  nn::Linear first(3, 4);
  nn::Linear second(4, 2, false);
  first.reset_parameters();
  second.reset_parameters();
  const auto params = model.named_parameters();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].second.value().to_vector<float>(), first.weight().value().to_vector<float>());
  EXPECT_EQ(params[1].second.value().to_vector<float>(), first.bias().value().to_vector<float>());
  EXPECT_EQ(params[2].second.value().to_vector<float>(), second.weight().value().to_vector<float>());
  EXPECT_NE(params[0].second.value().to_vector<float>()[0],
            params[2].second.value().to_vector<float>()[0]);
}

TEST(CppConv, Conv1d) {
  // [1, 1, 5] = 1..5 with the kernel [1, -1]: x[i] - x[i + 1].
  const Tensor x = kiln::reshape(kiln::tensor({1.0, 2.0, 4.0, 7.0, 11.0}), {1, 1, 5});
  const Tensor w = kiln::reshape(kiln::tensor({1.0, -1.0}), {1, 1, 2});
  EXPECT_EQ(vals(kiln::conv1d(x, w)), (F64{-1, -2, -3, -4}));
  // Padding 1, stride 2, a bias; and an unbatched [C, W] input.
  const Tensor y = kiln::conv1d(x, w, kiln::tensor({0.5}), {.stride = 2, .padding = 1});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(vals(y), (F64{0 - 1 + 0.5, 2 - 4 + 0.5, 7 - 11 + 0.5}));
  EXPECT_EQ(vals(kiln::conv1d(x[0], w, Tensor(), {.dilation = 2})), (F64{-3, -5, -7}));
  EXPECT_EQ(code_of([&] { (void)kiln::conv1d(x, x[0]); }), ErrorCode::illegal_dimensionality);
  // The gradient is conv2d's.
  x.watch();
  Tensor g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradient(kiln::sum(kiln::conv1d(x, w)), x);
  }
  x.unwatch();
  EXPECT_EQ(vals(g), (F64{1, 0, 0, 0, -1}));
}

TEST(CppInterop, FromBlobReadsTheCallersMemoryAndReleasesIt) {
  int released = 0;
  auto* memory = static_cast<float*>(std::aligned_alloc(64, 64 * sizeof(float)));
  for (int i = 0; i < 64; ++i) memory[i] = static_cast<float>(i);
  {
    const Tensor t = Tensor::from_blob(memory, {8, 8}, DType::f32, [&](void* p) {
      ++released;
      std::free(p);
    });
    EXPECT_EQ(t.data<float>().data(), memory) << "no copy";
    const Tensor y = (t * 2.0f).eval();
    EXPECT_EQ(y.to_vector<float>()[63], 126.f);
    EXPECT_EQ(kiln::sum(t[7]).item<float>(), 56.f + 57 + 58 + 59 + 60 + 61 + 62 + 63);
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(released, 1) << "the deleter runs when the last reference goes";
}

TEST(CppInterop, FromBlobIsNeverWrittenInto) {
  // An optimiser step may write new values into the old values' memory; never into the
  // caller's.
  alignas(64) float memory[16];
  for (int i = 0; i < 16; ++i) memory[i] = 1.f;
  {
    kiln::nn::Parameter p("w", Tensor::from_blob(memory, {16}, DType::f32));
    kiln::nn::SGD sgd({p}, {.lr = 0.5});
    Tensor loss;
    {
      kiln::GradientContext ctx;
      loss = kiln::sum(p.value() * p.value());
    }
    sgd.step(loss);
    EXPECT_EQ(p.value().to_vector<float>()[0], 0.f);  // 1 - 0.5 * 2
  }
  for (float v : memory) EXPECT_EQ(v, 1.f);
}

TEST(CppInterop, UnalignedBlobIsCopiedAtOnce) {
  alignas(64) double memory[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  int released = 0;
  const Tensor t = Tensor::from_blob(memory + 1, {8}, DType::f64, [&](void*) { ++released; });
  EXPECT_EQ(released, 1);
  memory[1] = 100;
  EXPECT_EQ(t.to_vector<double>()[0], 1.0);
  EXPECT_NE(t.data<double>().data(), memory + 1);
}

TEST(CppInterop, DataIsAZeroCopySpan) {
  const Tensor t = kiln::reshape(kiln::arange(6), {2, 3}).t() + 1;  // computed on read
  const std::span<const std::int64_t> d = t.data<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(d.begin(), d.end()), (I64{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(t.data<std::int64_t>().data(), d.data()) << "the same memory each time";
  EXPECT_EQ(code_of([&] { (void)t.data<float>(); }), ErrorCode::wrong_type);
  EXPECT_EQ(code_of([] { (void)Tensor::from_blob(nullptr, {2}, DType::f32); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(Tensor::from_blob(nullptr, {0, 3}, DType::f32).numel(), 0);
}

}  // namespace
