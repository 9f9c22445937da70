// Runs every row of docs/migration.md (libtorch C++ -> kiln) and checks its result, and checks
// that the table's kiln column and the rows here are the same code: a row added to one and not
// the other fails the test. Each row's code is written here exactly as in the table (the
// preprocessor's text of the expression is compared).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using namespace kiln::indexing;
using F64 = std::vector<double>;

struct Row {
  std::string kiln_code;
  std::function<void()> run;
};

void expect_tensor(const Tensor& t, DType dtype, const Shape& shape, const F64& values = {}) {
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.shape(), shape);
  if (values.empty()) return;
  const F64 got = t.to_vector<double>();
  ASSERT_EQ(got.size(), values.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], values[i], 1e-6) << i;
}

F64 iota(int n, double start = 0) {
  F64 v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = start + i;
  return v;
}

// The kiln code of the first table of docs/migration.md, in order.
std::vector<std::string> table_rows() {
  std::ifstream in(std::string(KILN_DOCS_DIR) + "/migration.md");
  EXPECT_TRUE(in.good()) << "cannot read docs/migration.md";
  std::vector<std::string> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_table = line == "## One row per common call";
    if (!in_table || line.rfind("| `", 0) != 0) continue;
    // | `torch code` | `kiln code` | note |
    const std::size_t second = line.find("| `", 2);
    const std::size_t end = line.find("` |", second + 3);
    if (second == std::string::npos || end == std::string::npos) {
      ADD_FAILURE() << "a row without two code cells: " << line;
      continue;
    }
    rows.push_back(line.substr(second + 3, end - second - 3));
  }
  return rows;
}

#define ROW(code, ...) rows.push_back({#code, [&] { __VA_ARGS__ }})

std::vector<Row> migration_rows(const Tensor& x, const Tensor& m, const Tensor& m2,
                                const Tensor& v) {
  std::vector<Row> rows;
  ROW(kiln::zeros({2, 3}), expect_tensor(kiln::zeros({2, 3}), DType::f32, {2, 3}, F64(6, 0)););
  ROW(kiln::ones({2, 3}, kiln::DType::f64),
      expect_tensor(kiln::ones({2, 3}, kiln::DType::f64), DType::f64, {2, 3}, F64(6, 1)););
  ROW(kiln::full({2}, 2.5), expect_tensor(kiln::full({2}, 2.5), DType::f32, {2}, {2.5, 2.5}););
  ROW(kiln::tensor({1.f, 2.f}),
      expect_tensor(kiln::tensor({1.f, 2.f}), DType::f32, {2}, {1, 2}););
  ROW(kiln::arange(5), expect_tensor(kiln::arange(5), DType::i64, {5}, iota(5)););
  ROW(kiln::arange(2, 11, 3), expect_tensor(kiln::arange(2, 11, 3), DType::i64, {3}, {2, 5, 8}););
  ROW(kiln::linspace(0, 1, 5),
      expect_tensor(kiln::linspace(0, 1, 5), DType::f32, {5}, {0, 0.25, 0.5, 0.75, 1}););
  ROW(kiln::eye(3), expect_tensor(kiln::eye(3), DType::f32, {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}););
  ROW(kiln::uniform({2, 2}), {
    const Tensor u = kiln::uniform({2, 2});
    expect_tensor(u, DType::f32, {2, 2});
    for (double e : u.to_vector<double>()) EXPECT_TRUE(e >= 0 && e < 1);
  });
  ROW(kiln::randn({2, 2}), expect_tensor(kiln::randn({2, 2}), DType::f32, {2, 2}););
  ROW(kiln::randint(0, 10, {3}), {
    const Tensor r = kiln::randint(0, 10, {3});
    expect_tensor(r, DType::i64, {3});
    for (double e : r.to_vector<double>()) EXPECT_TRUE(e >= 0 && e < 10);
  });
  ROW(kiln::zeros_like(x), expect_tensor(kiln::zeros_like(x), DType::f64, {2, 3, 4}, F64(24, 0)););
  ROW(kiln::manual_seed(1), {
    kiln::manual_seed(1);
    const F64 a = kiln::uniform({3}).to_vector<double>();
    kiln::manual_seed(1);
    EXPECT_EQ(kiln::uniform({3}).to_vector<double>(), a);
  });
  ROW(x.sizes(), EXPECT_EQ(x.sizes(), (Shape{2, 3, 4})););
  ROW(x.size(0), EXPECT_EQ(x.size(0), 2););
  ROW(x.dim(), EXPECT_EQ(x.dim(), 3););
  ROW(x.numel(), EXPECT_EQ(x.numel(), 24););
  ROW(x.view({6, 4}), expect_tensor(x.view({6, 4}), DType::f64, {6, 4}, iota(24)););
  ROW(x.flatten(1), expect_tensor(x.flatten(1), DType::f64, {2, 12}, iota(24)););
  ROW(x.transpose(0, 2), {
    const Tensor t = x.transpose(0, 2);
    expect_tensor(t, DType::f64, {4, 3, 2});
    EXPECT_EQ(t.at<double>({3, 1, 0}), 7);
  });
  ROW(m.t(), expect_tensor(m.t(), DType::f64, {3, 2}, {0, 3, 1, 4, 2, 5}););
  ROW(x.permute({2, 0, 1}), {
    const Tensor p = x.permute({2, 0, 1});
    expect_tensor(p, DType::f64, {4, 2, 3});
    EXPECT_EQ(p.at<double>({1, 1, 2}), 21);
  });
  ROW(x.unsqueeze(0), expect_tensor(x.unsqueeze(0), DType::f64, {1, 2, 3, 4}););
  ROW(v.expand({3, 4}),
      expect_tensor(v.expand({3, 4}), DType::f64, {3, 4}, {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}););
  ROW(kiln::cat({x, x}, 0), expect_tensor(kiln::cat({x, x}, 0), DType::f64, {4, 3, 4}););
  ROW(kiln::stack({v, v}),
      expect_tensor(kiln::stack({v, v}), DType::f64, {2, 4}, {0, 1, 2, 3, 0, 1, 2, 3}););
  ROW(kiln::chunk(x, 2, 2), {
    const std::vector<Tensor> parts = kiln::chunk(x, 2, 2);
    ASSERT_EQ(parts.size(), 2u);
    expect_tensor(parts[1], DType::f64, {2, 3, 2});
    EXPECT_EQ(parts[1].at<double>({0, 0, 0}), 2);
  });
  ROW(kiln::flip(x, {0}), EXPECT_EQ(kiln::flip(x, {0}).at<double>({0, 0, 0}), 12););
  ROW(x[1], expect_tensor(x[1], DType::f64, {3, 4}, iota(12, 12)););
  ROW(x.index({Slice(), 1}),
      expect_tensor(x.index({Slice(), 1}), DType::f64, {2, 4}, {4, 5, 6, 7, 16, 17, 18, 19}););
  ROW(x.index({Ellipsis, 0}),
      expect_tensor(x.index({Ellipsis, 0}), DType::f64, {2, 3}, {0, 4, 8, 12, 16, 20}););
  ROW(x.index_put({0}, 0), {
    F64 want = iota(24);
    for (int i = 0; i < 12; ++i) want[static_cast<std::size_t>(i)] = 0;
    expect_tensor(x.index_put({0}, 0), DType::f64, {2, 3, 4}, want);
  });
  ROW(kiln::masked_fill(x, x > 5, 0), {
    F64 want = iota(24);
    for (double& e : want)
      if (e > 5) e = 0;
    expect_tensor(kiln::masked_fill(x, x > 5, 0), DType::f64, {2, 3, 4}, want);
  });
  ROW(kiln::where(x > 5, x, 0.), {
    F64 want = iota(24);
    for (double& e : want)
      if (!(e > 5)) e = 0;
    expect_tensor(kiln::where(x > 5, x, 0.), DType::f64, {2, 3, 4}, want);
  });
  ROW(kiln::clamp(x, 0, 1), {
    F64 want = iota(24);
    for (double& e : want) e = std::min(e, 1.0);
    expect_tensor(kiln::clamp(x, 0, 1), DType::f64, {2, 3, 4}, want);
  });
  ROW((x > 1) & (x < 5), {
    F64 want(24, 0);
    for (int i : {2, 3, 4}) want[static_cast<std::size_t>(i)] = 1;
    expect_tensor((x > 1) & (x < 5), DType::boolean, {2, 3, 4}, want);
  });
  ROW(x * 0.5 + 1, {
    F64 want = iota(24);
    for (double& e : want) e = e * 0.5 + 1;
    expect_tensor(x * 0.5 + 1, DType::f64, {2, 3, 4}, want);
    EXPECT_EQ((x.to(DType::f32) * 0.5 + 1).dtype(), DType::f32);
  });
  ROW(kiln::pow(x, 2), EXPECT_EQ(kiln::pow(x, 2).at<double>({1, 2, 3}), 23.0 * 23.0););
  ROW((x / 3).floor(), EXPECT_EQ((x / 3).floor().at<double>({1, 2, 3}), 7.0););
  ROW(kiln::remainder(x, 5), EXPECT_EQ(kiln::remainder(x, 5).at<double>({1, 2, 3}), 3.0););
  ROW(kiln::atan2(x, -x), {
    EXPECT_DOUBLE_EQ(kiln::atan2(x, -x).at<double>({0, 0, 1}), 3 * std::atan(1.0));
  });
  ROW(kiln::matmul(m, m.t()),
      expect_tensor(kiln::matmul(m, m.t()), DType::f64, {2, 2}, {5, 14, 14, 50}););
  ROW(x.sum({1}), {
    const Tensor s = x.sum({1});
    expect_tensor(s, DType::f64, {2, 4});
    EXPECT_EQ(s.at<double>({0, 0}), 0 + 4 + 8);
  });
  ROW(x.mean(), EXPECT_EQ(x.mean().item<double>(), 11.5););
  ROW(kiln::var(x), EXPECT_NEAR(kiln::var(x).item<double>(), 50.0, 1e-12););
  ROW(kiln::max(x, {-1}),
      expect_tensor(kiln::max(x, {-1}), DType::f64, {2, 3}, {3, 7, 11, 15, 19, 23}););
  ROW(kiln::argmax(x, -1), expect_tensor(kiln::argmax(x, -1), DType::i64, {2, 3}, F64(6, 3)););
  ROW(kiln::cumsum(x, 2), {
    const Tensor c = kiln::cumsum(x, 2);
    expect_tensor(c, DType::f64, {2, 3, 4});
    EXPECT_EQ(c.at<double>({1, 2, 3}), 20 + 21 + 22 + 23);
  });
  ROW(kiln::sort(x, -1, true).values, {
    const kiln::ValuesIndices s = kiln::sort(x, -1, true);
    EXPECT_EQ(kiln::sort(x, -1, true).values.at<double>({0, 0, 0}), 3);
    EXPECT_EQ(s.indices.dtype(), DType::i64);
    EXPECT_EQ(s.indices.at<std::int64_t>({1, 1, 3}), 0);
  });
  ROW(kiln::topk(x, 2).indices,
      expect_tensor(kiln::topk(x, 2).indices, DType::i64, {2, 3, 2},
                    {3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2}););
  ROW(kiln::max(m, 1).indices, {
    auto [values, indices] = kiln::max(m, 1);
    expect_tensor(values, DType::f64, {2}, {2, 5});
    expect_tensor(kiln::max(m, 1).indices, DType::i64, {2}, {2, 2});
  });
  ROW(kiln::scatter(m, 1, i, 9.0), {
    const Tensor i = kiln::Tensor::from<std::int64_t>({0, 2}, {2, 1});
    expect_tensor(kiln::scatter(m, 1, i, 9.0), DType::f64, {2, 3}, {9, 1, 2, 3, 4, 9});
  });
  ROW(kiln::multinomial(p, 2), {
    const Tensor p = kiln::Tensor::from<double>({0, 1, 0, 1});
    const std::vector<std::int64_t> drawn = kiln::multinomial(p, 2).to_vector<std::int64_t>();
    EXPECT_TRUE((drawn == std::vector<std::int64_t>{1, 3} ||
                 drawn == std::vector<std::int64_t>{3, 1}));
  });
  ROW(kiln::unique(m).counts, {
    expect_tensor(kiln::unique(m * 0.0).counts, DType::i64, {1}, {6});
    expect_tensor(kiln::unique(m).counts, DType::i64, {6}, {1, 1, 1, 1, 1, 1});
  });
  ROW(kiln::solve(m2, m), {
    // m2 = [[2, 1], [1, 3]]: m2 * solve(m2, m) == m.
    expect_tensor(kiln::matmul(m2, kiln::solve(m2, m)), DType::f64, {2, 3}, {0, 1, 2, 3, 4, 5});
  });
  ROW(kiln::det(m2), EXPECT_NEAR(kiln::det(m2).item<double>(), 5.0, 1e-12););
  ROW(kiln::conv_transpose2d(x, kiln::ones({2, 1, 2, 2}, kiln::DType::f64), {}, {.stride = {2, 2}}), {
    // x as [C = 2, H = 3, W = 4]: every position fills a 2x2 block with the sum of its channels.
    const Tensor y =
        kiln::conv_transpose2d(x, kiln::ones({2, 1, 2, 2}, kiln::DType::f64), {}, {.stride = {2, 2}});
    expect_tensor(y, DType::f64, {1, 6, 8});
    EXPECT_EQ(y.at<double>({0, 5, 7}), 11 + 23);
    EXPECT_EQ(kiln::sum(y).item<double>(), 4 * 276);
  });
  ROW(kiln::conv3d(x.view({1, 1, 2, 3, 4}), kiln::ones({1, 1, 2, 1, 1}, kiln::DType::f64)), {
    // Two depth planes summed: x[0] + x[1] = 2 j + 12.
    F64 want;
    for (int j = 0; j < 12; ++j) want.push_back(2 * j + 12);
    expect_tensor(kiln::conv3d(x.view({1, 1, 2, 3, 4}), kiln::ones({1, 1, 2, 1, 1}, kiln::DType::f64)),
                  DType::f64, {1, 1, 1, 3, 4}, want);
  });
  ROW(kiln::softmax(x, -1), {
    const Tensor s = kiln::softmax(x, -1);
    expect_tensor(s, DType::f64, {2, 3, 4});
    EXPECT_NEAR(kiln::sum(s, {-1}).to_vector<double>()[4], 1.0, 1e-12);
  });
  ROW(kiln::logsumexp(x, {1, 2}), {
    const Tensor l = kiln::logsumexp(x, {1, 2});
    double s = 0;
    for (int i = 0; i < 12; ++i) s += std::exp(i - 11.0);
    expect_tensor(l, DType::f64, {2}, {11 + std::log(s), 23 + std::log(s)});
  });
  ROW(x.to(kiln::DType::f32), EXPECT_EQ(x.to(kiln::DType::f32).dtype(), DType::f32););
  ROW(x.to(kiln::DType::bf16), {
    // 0..23 are exact in bf16 (8 significant bits).
    expect_tensor(x.to(kiln::DType::bf16), DType::bf16, {2, 3, 4}, iota(24));
  });
  ROW(x.to(kiln::DType::u8), {
    const Tensor b = x.to(kiln::DType::u8);
    expect_tensor(b, DType::u8, {2, 3, 4}, iota(24));
    expect_tensor(kiln::sum(b), DType::i64, {}, {276});
  });
  ROW(x.to(kiln::DType::c64), {
    const Tensor z = x.to(kiln::DType::c64);
    EXPECT_EQ(z.dtype(), DType::c64);
    EXPECT_EQ(z.to_vector<std::complex<float>>()[5], std::complex<float>(5, 0));
  });
  ROW(kiln::complex(m, m), {
    const Tensor z = kiln::complex(m, m);
    EXPECT_EQ(z.dtype(), DType::c128);
    EXPECT_EQ(z.to_vector<std::complex<double>>()[4], std::complex<double>(4, 4));
  });
  ROW(kiln::fft(v), {
    // The transform of 0, 1, 2, 3.
    EXPECT_EQ(kiln::fft(v).to_vector<std::complex<double>>(),
              (std::vector<std::complex<double>>{{6, 0}, {-2, 2}, {-2, 0}, {-2, -2}}));
  });
  ROW(x.to("cpu"), {
    const Tensor placed = x.to("cpu");
    EXPECT_EQ(placed.device(), kiln::Device("cpu"));
    EXPECT_EQ((placed + 1.0).device(), kiln::Device("cpu"));
    EXPECT_TRUE(placed.is_on(*kiln::cpu_executor()));
  });
  ROW(x.device(), EXPECT_EQ(x.device(), kiln::Device(kiln::current_executor())););
  ROW(kiln::DeviceGuard g("reference"), {
    kiln::DeviceGuard g("reference");
    EXPECT_EQ(x.device(), kiln::Device("reference"));
  });
  ROW(x.sum().item<double>(), EXPECT_EQ(x.sum().item<double>(), 276););
  ROW(x.clone(), expect_tensor(x.clone(), DType::f64, {2, 3, 4}, iota(24)););
  ROW(x.watch(), {
    const Tensor w = kiln::Tensor::from(F64{1, 2});
    EXPECT_TRUE(w.watch().is_watched());
    EXPECT_TRUE(x.watch().is_watched());
    x.unwatch();
  });
  ROW(kiln::gradients(kiln::sum(x * x), {x}), {
    x.watch();
    std::vector<Tensor> g;
    {
      kiln::GradientContext context;
      g = kiln::gradients(kiln::sum(x * x), {x});
    }
    x.unwatch();
    F64 want = iota(24);
    for (double& e : want) e *= 2;
    expect_tensor(g.at(0), DType::f64, {2, 3, 4}, want);
  });
  ROW(kiln::nn::Linear(3, 2), {
    kiln::nn::Linear fc = kiln::nn::Linear(3, 2);
    EXPECT_EQ(fc.weight().shape(), (Shape{2, 3}));
  });
  ROW(kiln::nn::Conv2d(1, 8, 3, 1, 1), {
    kiln::nn::Conv2d conv = kiln::nn::Conv2d(1, 8, 3, 1, 1);
    EXPECT_EQ(conv(kiln::zeros({1, 1, 5, 5})).shape(), (Shape{1, 8, 5, 5}));
  });
  ROW(kiln::cross_entropy(m, kiln::tensor({0L, 2L})), {
    // m's rows [0 1 2] and [3 4 5]: labels 0 and 2 of each row's softmax.
    const double lse = std::log(std::exp(0.0) + std::exp(1.0) + std::exp(2.0));
    const Tensor ce = kiln::cross_entropy(m, kiln::tensor({0L, 2L}));
    EXPECT_NEAR(ce.item<double>(), ((lse - 0) + (lse - 2)) / 2, 1e-12);
    EXPECT_THROW((void)kiln::cross_entropy(m, kiln::tensor({0L, 3L})).item<double>(),
                 kiln::Error) << "a label outside the classes";
  });
  ROW(kiln::nn::cross_entropy(m, kiln::tensor({0L, 2L}), {.label_smoothing = 0.1}), {
    // (1 - 0.1) nll + 0.1 / 3 * mean(-sum of each row's log-probabilities).
    const double lse = std::log(std::exp(0.0) + std::exp(1.0) + std::exp(2.0));
    const double nll = ((lse - 0) + (lse - 2)) / 2, smooth = 3 * lse - 3;
    EXPECT_NEAR(kiln::nn::cross_entropy(m, kiln::tensor({0L, 2L}), {.label_smoothing = 0.1})
                    .item<double>(),
                0.9 * nll + 0.1 / 3 * smooth, 1e-12);
  });
  ROW(kiln::nn::mse_loss(m, kiln::zeros_like(m), kiln::nn::Reduction::sum), {
    EXPECT_EQ(kiln::nn::mse_loss(m, kiln::zeros_like(m), kiln::nn::Reduction::sum).item<double>(),
              0 + 1 + 4 + 9 + 16 + 25);
  });
  ROW(kiln::nn::binary_cross_entropy_with_logits(m, kiln::ones_like(m)), {
    // -log(sigmoid(x)) = log(1 + exp(-x)), averaged over 0..5.
    double want = 0;
    for (int i = 0; i < 6; ++i) want += std::log1p(std::exp(-i));
    EXPECT_NEAR(kiln::nn::binary_cross_entropy_with_logits(m, kiln::ones_like(m)).item<double>(),
                want / 6, 1e-12);
  });
  return rows;
}

TEST(Migration, EveryRowRunsAndMatchesTheTable) {
  const Tensor x =
      kiln::reshape(kiln::convert(kiln::arange(24), DType::f64), {2, 3, 4});  // [2,3,4] 0..23
  const Tensor m = kiln::reshape(kiln::convert(kiln::arange(6), DType::f64), {2, 3});
  const Tensor v = kiln::convert(kiln::arange(4), DType::f64);
  const Tensor m2 = kiln::tensor({{2.0, 1.0}, {1.0, 3.0}});
  const std::vector<Row> rows = migration_rows(x, m, m2, v);
  std::set<std::string> here;
  for (const Row& r : rows) {
    SCOPED_TRACE(r.kiln_code);
    here.insert(r.kiln_code);
    r.run();
  }
  const std::vector<std::string> table = table_rows();
  EXPECT_EQ(table.size(), rows.size());
  std::set<std::string> documented(table.begin(), table.end());
  for (const std::string& code : documented)
    EXPECT_TRUE(here.count(code)) << "a row of docs/migration.md has no test: " << code;
  for (const std::string& code : here)
    EXPECT_TRUE(documented.count(code)) << "a tested row is missing from docs/migration.md: "
                                        << code;
}

}  // namespace
