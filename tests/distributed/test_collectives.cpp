// kiln::distributed's collectives on every dtype, their async forms, and the errors of ranks that
// disagree.
#include <gtest/gtest.h>
#include <kiln/distributed.hpp>
#include <kiln/kiln.hpp>

#include <complex>
#include <numeric>

namespace {

namespace dist = kiln::distributed;
using kiln::DType;
using kiln::Tensor;

int rank() { return dist::rank(); }
int ranks() { return dist::world_size(); }

// Rank r's values: r * 10 + i for element i.
template <class T> std::vector<T> values_of(int r, int n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<T>(r * 10 + i);
  return v;
}

TEST(Collectives, RankAndWorld) {
  EXPECT_GE(ranks(), 1);
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), ranks());
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_TRUE(dist::available());
  dist::barrier();
}

template <class T> void check_reductions(DType dtype) {
  const int n = 5;
  const Tensor x = kiln::convert(Tensor::from(values_of<double>(rank(), n)), dtype);
  const std::vector<double> sum = dist::all_reduce(x).convert(DType::f64).to_vector<double>();
  const std::vector<double> max =
      dist::all_reduce(x, dist::ReduceOp::max).convert(DType::f64).to_vector<double>();
  const std::vector<double> min =
      dist::all_reduce(x, dist::ReduceOp::min).convert(DType::f64).to_vector<double>();
  const double rank_sum = 10.0 * ranks() * (ranks() - 1) / 2;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(sum[i], rank_sum + ranks() * i) << kiln::dtype_name(dtype) << " element " << i;
    EXPECT_EQ(max[i], (ranks() - 1) * 10 + i) << kiln::dtype_name(dtype);
    EXPECT_EQ(min[i], i) << kiln::dtype_name(dtype);
  }
}

TEST(Collectives, AllReduceEveryRealType) {
  check_reductions<float>(DType::f32);
  check_reductions<double>(DType::f64);
  check_reductions<std::int32_t>(DType::i32);
  check_reductions<std::int64_t>(DType::i64);
  check_reductions<float>(DType::f16);  // reduced in f32, exact for these small integers
  check_reductions<float>(DType::bf16);
}

TEST(Collectives, AllReduceKeepsTheDtypeAndShape) {
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::i64, DType::f16, DType::bf16}) {
    const Tensor r = dist::all_reduce(kiln::zeros({2, 3}, d));
    EXPECT_EQ(r.dtype(), d);
    EXPECT_EQ(r.shape(), (kiln::Shape{2, 3}));
  }
}

TEST(Collectives, MeanOfFloatsAndComplex) {
  const Tensor x = Tensor::from(values_of<float>(rank(), 4));
  const std::vector<float> mean = dist::all_reduce(x, dist::ReduceOp::mean).to_vector<float>();
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(mean[i], 10.0f * (ranks() - 1) / 2 + i);
  const Tensor z = kiln::complex(Tensor::from(std::vector<float>{1.0f * rank(), 2.0f}),
                                 Tensor::from(std::vector<float>{3.0f, -1.0f * rank()}));
  const Tensor s = dist::all_reduce(z);
  EXPECT_EQ(s.dtype(), DType::c64);
  const std::vector<float> re = kiln::real(s).to_vector<float>();
  const std::vector<float> im = kiln::imag(s).to_vector<float>();
  const float rank_sum = ranks() * (ranks() - 1) / 2.0f;
  EXPECT_FLOAT_EQ(re[0], rank_sum);
  EXPECT_FLOAT_EQ(re[1], 2.0f * ranks());
  EXPECT_FLOAT_EQ(im[0], 3.0f * ranks());
  EXPECT_FLOAT_EQ(im[1], -rank_sum);
}

TEST(Collectives, BooleansReduceAsOrAndAnd) {
  // Element 0 is true on rank 0 only, element 1 on every rank, element 2 on none.
  const Tensor b = Tensor::from(std::vector<bool>{rank() == 0, true, false});
  const std::vector<bool> any = dist::all_reduce(b).to_vector<bool>();
  const std::vector<bool> all = dist::all_reduce(b, dist::ReduceOp::min).to_vector<bool>();
  EXPECT_EQ(any, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(all, (std::vector<bool>{ranks() == 1, true, false}));
}

TEST(Collectives, RefusedReductionsNameTheOpAndType) {
  try {
    dist::all_reduce(kiln::zeros({3}, DType::i32), dist::ReduceOp::mean);
    FAIL() << "a mean of integers was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), kiln::ErrorCode::wrong_type);
    EXPECT_NE(std::string(e.what()).find("distributed::all_reduce"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("i32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dist::all_reduce(kiln::zeros({2}, DType::c64), dist::ReduceOp::max), kiln::Error);
  EXPECT_THROW(dist::broadcast(kiln::zeros({2}), ranks()), kiln::Error);
  EXPECT_THROW(dist::all_reduce(Tensor()), kiln::Error);
}

TEST(Collectives, LazyOperandsAreEvaluatedFirst) {
  const Tensor x = kiln::exp(kiln::full({4}, 0.0)) * (rank() + 1.0);  // not evaluated yet
  const std::vector<double> s = dist::all_reduce(x).to_vector<double>();
  for (double v : s) EXPECT_DOUBLE_EQ(v, ranks() * (ranks() + 1) / 2.0);
}

TEST(Collectives, BroadcastFromEveryRoot) {
  for (int root = 0; root < ranks(); ++root) {
    for (DType d : {DType::f32, DType::i64, DType::f16, DType::boolean, DType::c128}) {
      const Tensor mine = kiln::convert(Tensor::from(values_of<double>(rank(), 3)), d);
      const Tensor got = dist::broadcast(mine, root);
      const Tensor expected = kiln::convert(Tensor::from(values_of<double>(root, 3)), d);
      EXPECT_EQ(got.dtype(), d);
      EXPECT_TRUE(kiln::equal(got, expected).all().item<bool>()) << kiln::dtype_name(d);
    }
  }
}

TEST(Collectives, AllGatherStacksInRankOrder) {
  const Tensor mine = Tensor::from(values_of<std::int32_t>(rank(), 6), {2, 3});
  const Tensor all = dist::all_gather(mine);
  EXPECT_EQ(all.shape(), (kiln::Shape{ranks(), 2, 3}));
  const std::vector<std::int32_t> v = all.to_vector<std::int32_t>();
  for (int r = 0; r < ranks(); ++r)
    for (int i = 0; i < 6; ++i) EXPECT_EQ(v[static_cast<std::size_t>(r * 6 + i)], r * 10 + i);
}

TEST(Collectives, ReduceScatterGivesEachRankItsBlock) {
  const int rows = 2 * ranks();
  std::vector<float> mine(static_cast<std::size_t>(rows) * 3);
  std::iota(mine.begin(), mine.end(), static_cast<float>(rank()));
  const Tensor block = dist::reduce_scatter(Tensor::from(mine, {rows, 3}));
  EXPECT_EQ(block.shape(), (kiln::Shape{2, 3}));
  const std::vector<float> v = block.to_vector<float>();
  const float rank_sum = ranks() * (ranks() - 1) / 2.0f;
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(v[static_cast<std::size_t>(i)], ranks() * (rank() * 6.0f + i) + rank_sum);
  if (ranks() > 1) {
    EXPECT_THROW(dist::reduce_scatter(kiln::zeros({ranks() * 2 + 1})), kiln::Error);
  }
}

TEST(Collectives, AsyncWorkCompletesInOrderWhateverOrderItIsWaitedFor) {
  std::vector<dist::Work> work;
  for (int k = 0; k < 4; ++k)
    work.push_back(dist::all_reduce_async(kiln::full({1000}, static_cast<double>(k + rank()))));
  const double rank_sum = ranks() * (ranks() - 1) / 2.0;
  for (int k = 3; k >= 0; --k) {
    const Tensor r = work[static_cast<std::size_t>(k)].wait();
    EXPECT_TRUE(work[static_cast<std::size_t>(k)].completed());
    EXPECT_DOUBLE_EQ(r.to_vector<double>()[999], k * ranks() + rank_sum);
  }
  EXPECT_THROW(dist::Work().wait(), kiln::Error);
}

TEST(Collectives, LargeTensors) {
  const std::int64_t n = 3'000'000;
  const Tensor x = kiln::full({n}, 1.0f + rank());
  const Tensor s = dist::all_reduce(x);
  EXPECT_FLOAT_EQ(kiln::max(s).item<float>(), ranks() * (ranks() + 1) / 2.0f);
  EXPECT_FLOAT_EQ(kiln::min(s).item<float>(), ranks() * (ranks() + 1) / 2.0f);
}

TEST(Collectives, RanksThatDisagreeFailOnEveryRankNamingBoth) {
  if (ranks() < 2) GTEST_SKIP() << "needs two ranks";
  // Rank r passes [3, r + 1]: every rank learns of the mismatch before any data moves.
  try {
    dist::all_reduce(kiln::zeros({3, rank() + 1}));
    FAIL() << "shapes that differ between ranks were accepted";
  } catch (const kiln::Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), kiln::ErrorCode::incompatible_shapes);
    EXPECT_NE(m.find("rank " + std::to_string(rank()) + " called all_reduce of f32 [3," +
                     std::to_string(rank() + 1) + "]"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("rank"), m.rfind("rank")) << "names only one rank: " << m;
  }
  // Different collectives, and different dtypes.
  EXPECT_THROW(rank() == 0 ? dist::broadcast(kiln::zeros({2})) : dist::all_reduce(kiln::zeros({2})),
               kiln::Error);
  EXPECT_THROW(dist::all_gather(kiln::zeros({2}, rank() == 0 ? DType::f32 : DType::f64)),
               kiln::Error);
  // The process group still works.
  EXPECT_EQ(dist::all_reduce(kiln::ones({1})).item<float>(), static_cast<float>(ranks()));
}

}  // namespace
