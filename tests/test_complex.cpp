// The complex types c64 and c128: promotion, creation and reading back, the elementwise functions
// against <complex>'s principal branches, parts and polar form, reductions and matrix products,
// views and shape ops, the orderings refused at build time, printing, files, every executor
// against the reference, and gradients (PyTorch's convention) against central differences. The
// registry-driven op test covers every op of the complex types on every executor as well.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
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
using c64 = std::complex<float>;
using c128 = std::complex<double>;

const std::vector<c128> kPoints = {{0.5, 0.25}, {-1.25, 0.75}, {0.3, -0.9}, {-0.4, -0.2},
                                   {2.0, 0.0},  {0.0, 1.5},    {-2.0, 0.0}, {0.7, 0.1}};
// Points off the branch cuts (the negative real axis, the imaginary axis beyond +-i), where the
// functions are differentiable.
const std::vector<c128> kSmoothPoints = {{0.5, 0.25}, {-1.25, 0.75}, {0.3, -0.9}, {-0.4, -0.2},
                                         {2.0, 0.3},  {0.2, 1.5},    {-2.0, 0.4}, {0.7, 0.1}};

void expect_near(const std::vector<c128>& got, const std::vector<c128>& want, double tolerance,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::abs(got[i] - want[i]), tolerance * (1 + std::abs(want[i])))
        << what << ", element " << i << ": " << got[i] << ", want " << want[i];
}

TEST(Complex, TypesAndPromotion) {
  EXPECT_EQ(kiln::size_of(DType::c64), 8u);
  EXPECT_EQ(kiln::size_of(DType::c128), 16u);
  EXPECT_STREQ(kiln::dtype_name(DType::c64), "c64");
  EXPECT_EQ(kiln::promote(DType::f64, DType::c64), DType::c128);  // Cog's and NumPy's rule
  EXPECT_EQ(kiln::promote(DType::c64, DType::f32), DType::c64);
  EXPECT_EQ(kiln::promote(DType::i64, DType::c64), DType::c64);
  EXPECT_EQ(kiln::promote(DType::bf16, DType::c64), DType::c64);
  EXPECT_EQ(kiln::promote(DType::c64, DType::c128), DType::c128);
  EXPECT_EQ(kiln::promote(DType::boolean, DType::c128), DType::c128);
  EXPECT_EQ(kiln::Scalar(c64(1, 2)).to_string(), "1+2i");
  EXPECT_EQ(kiln::Scalar(c128(1.5, -2)).to_string(), "1.5-2i");

  const Tensor z = Tensor::from(std::vector<c64>{{1, 2}, {3, -4}});
  const Tensor x = kiln::tensor({1.0, 2.0}, kiln::DType::f64);  // f64
  EXPECT_EQ(z.dtype(), DType::c64);
  EXPECT_EQ((z + x).dtype(), DType::c128);
  EXPECT_EQ((z * kiln::tensor({1.0f, 2.0f})).dtype(), DType::c64);
  EXPECT_EQ((z + kiln::tensor({1, 2})).dtype(), DType::c64);
  // Weak scalars: a real scalar keeps a complex tensor's type, a complex scalar makes a real
  // tensor complex of its precision.
  EXPECT_EQ((z * 2.0).dtype(), DType::c64);
  EXPECT_EQ((x * c64(0, 1)).dtype(), DType::c128);
  EXPECT_EQ((kiln::tensor({1.0f}) * c128(0, 1)).dtype(), DType::c64);
  expect_near((x * c64(0, 1)).to_vector<c128>(), {{0, 1}, {0, 2}}, 0, "x * i");
}

TEST(Complex, CreationReadingAndConversions) {
  const std::vector<c128> values = {{1, 2}, {-3.5, 0.25}, {0, -1}};
  const Tensor z = Tensor::from(values);
  EXPECT_EQ(z.dtype(), DType::c128);
  EXPECT_EQ(z.to_vector<c128>(), values);
  EXPECT_EQ(z.at<c128>({1}), values[1]);
  EXPECT_EQ(kiln::sum(z).item<c128>(), c128(-2.5, 1.25));
  const auto data = z.data<c128>();
  EXPECT_EQ(data[2], values[2]);
  // To a real type: the real part (NumPy's astype); from a real type: imaginary part 0.
  EXPECT_EQ(kiln::convert(z, DType::f32).to_vector<float>(), (std::vector<float>{1, -3.5f, 0}));
  EXPECT_EQ(kiln::convert(z, DType::i32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, -3, 0}));
  EXPECT_EQ(kiln::convert(z, DType::boolean).to_vector<bool>(),
            (std::vector<bool>{true, true, true}));  // 0-1i is non-zero
  EXPECT_EQ(kiln::convert(kiln::tensor({2.5f, -1.0f}), DType::c64).to_vector<c64>(),
            (std::vector<c64>{{2.5f, 0}, {-1, 0}}));
  EXPECT_EQ(kiln::convert(z, DType::c64).to_vector<c64>(),
            (std::vector<c64>{{1, 2}, {-3.5f, 0.25f}, {0, -1}}));
  EXPECT_EQ(kiln::convert(z, DType::f16).to_vector<float>(), (std::vector<float>{1, -3.5f, 0}));
  EXPECT_EQ(kiln::full({2}, c64(1, -1)).to_vector<c64>(), (std::vector<c64>{{1, -1}, {1, -1}}));
}

TEST(Complex, ElementwiseFunctionsFollowComplexPrincipalBranches) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<c128(c128)> want;
  };
  const std::vector<Case> cases = {
      {"neg", [](const Tensor& z) { return -z; }, [](c128 z) { return -z; }},
      {"square", [](const Tensor& z) { return kiln::square(z); }, [](c128 z) { return z * z; }},
      {"sqrt", [](const Tensor& z) { return kiln::sqrt(z); }, [](c128 z) { return std::sqrt(z); }},
      {"exp", [](const Tensor& z) { return kiln::exp(z); }, [](c128 z) { return std::exp(z); }},
      {"log", [](const Tensor& z) { return kiln::log(z); }, [](c128 z) { return std::log(z); }},
      {"log10", [](const Tensor& z) { return kiln::log10(z); },
       [](c128 z) { return std::log10(z); }},
      {"sin", [](const Tensor& z) { return kiln::sin(z); }, [](c128 z) { return std::sin(z); }},
      {"cos", [](const Tensor& z) { return kiln::cos(z); }, [](c128 z) { return std::cos(z); }},
      {"tan", [](const Tensor& z) { return kiln::tan(z); }, [](c128 z) { return std::tan(z); }},
      {"asin", [](const Tensor& z) { return kiln::asin(z); }, [](c128 z) { return std::asin(z); }},
      {"acos", [](const Tensor& z) { return kiln::acos(z); }, [](c128 z) { return std::acos(z); }},
      {"atan", [](const Tensor& z) { return kiln::atan(z); }, [](c128 z) { return std::atan(z); }},
      {"sinh", [](const Tensor& z) { return kiln::sinh(z); }, [](c128 z) { return std::sinh(z); }},
      {"cosh", [](const Tensor& z) { return kiln::cosh(z); }, [](c128 z) { return std::cosh(z); }},
      {"tanh", [](const Tensor& z) { return kiln::tanh(z); }, [](c128 z) { return std::tanh(z); }},
      {"asinh", [](const Tensor& z) { return kiln::asinh(z); },
       [](c128 z) { return std::asinh(z); }},
      {"acosh", [](const Tensor& z) { return kiln::acosh(z); },
       [](c128 z) { return std::acosh(z); }},
      {"atanh", [](const Tensor& z) { return kiln::atanh(z); },
       [](c128 z) { return std::atanh(z); }},
      {"reciprocal", [](const Tensor& z) { return kiln::reciprocal(z); },
       [](c128 z) { return 1.0 / z; }},
      {"sigmoid", [](const Tensor& z) { return kiln::sigmoid(z); },
       [](c128 z) { return 1.0 / (1.0 + std::exp(-z)); }},
      {"conj", [](const Tensor& z) { return kiln::conj(z); }, [](c128 z) { return std::conj(z); }},
  };
  const Tensor z128 = Tensor::from(kPoints);
  const Tensor z64 = kiln::convert(z128, DType::c64);
  for (const Case& c : cases) {
    std::vector<c128> want;
    for (c128 z : kPoints) want.push_back(c.want(z));
    const Tensor r128 = c.op(z128), r64 = c.op(z64);
    EXPECT_EQ(r128.dtype(), DType::c128) << c.name;
    EXPECT_EQ(r64.dtype(), DType::c64) << c.name;
    expect_near(r128.to_vector<c128>(), want, 1e-14, std::string(c.name) + " c128");
    expect_near(r64.to_vector<c128>(), want, 1e-5, std::string(c.name) + " c64");
  }
  // The binary ops, with broadcasting and scalars.
  const Tensor w = Tensor::from(std::vector<c128>{{0.5, -1}, {2, 0.5}});
  const Tensor a = kiln::reshape(z128, {4, 2});
  std::vector<c128> sum, product, quotient, power;
  for (std::size_t i = 0; i < kPoints.size(); ++i) {
    const c128 v = i % 2 == 0 ? c128(0.5, -1) : c128(2, 0.5);
    sum.push_back(kPoints[i] + v);
    product.push_back(kPoints[i] * v);
    quotient.push_back(kPoints[i] / v);
    power.push_back(std::pow(kPoints[i], v));
  }
  expect_near(kiln::flatten(a + w).to_vector<c128>(), sum, 1e-15, "add");
  expect_near(kiln::flatten(a * w).to_vector<c128>(), product, 1e-15, "mul");
  expect_near(kiln::flatten(a / w).to_vector<c128>(), quotient, 1e-15, "div");
  expect_near(kiln::flatten(kiln::pow(a, w)).to_vector<c128>(), power, 1e-14, "pow");
  expect_near((a - a).to_vector<c128>(), std::vector<c128>(8), 0, "sub");
  EXPECT_EQ((z128 == z128).to_vector<bool>(), std::vector<bool>(8, true));
  EXPECT_EQ(kiln::sum(z128 != kiln::conj(z128)).item<std::int64_t>(), 6);  // the non-real ones
}

TEST(Complex, PartsMagnitudeAngleAndPolarForm) {
  const Tensor z = Tensor::from(std::vector<c64>{{3, 4}, {-1, 0}, {0, -2}, {0, 0}});
  for (const Tensor& t : {kiln::real(z), kiln::imag(z), kiln::abs(z), kiln::angle(z)})
    EXPECT_EQ(t.dtype(), DType::f32) << t.op_name();
  EXPECT_EQ(kiln::real(z).to_vector<float>(), (std::vector<float>{3, -1, 0, 0}));
  EXPECT_EQ(kiln::imag(z).to_vector<float>(), (std::vector<float>{4, 0, -2, 0}));
  EXPECT_EQ(kiln::abs(z).to_vector<float>(), (std::vector<float>{5, 1, 2, 0}));
  const auto angles = kiln::angle(z).to_vector<float>();
  EXPECT_FLOAT_EQ(angles[0], std::atan2(4.0f, 3.0f));
  EXPECT_FLOAT_EQ(angles[1], std::numbers::pi_v<float>);
  EXPECT_FLOAT_EQ(angles[2], -std::numbers::pi_v<float> / 2);
  EXPECT_EQ(angles[3], 0.0f);
  EXPECT_EQ(kiln::abs(kiln::convert(z, DType::c128)).dtype(), DType::f64);
  // Of real tensors: real is the tensor, imag zeros, conj the tensor, angle pi for negatives.
  const Tensor x = kiln::tensor({-2.0f, 0.0f, 3.0f});
  EXPECT_EQ(kiln::real(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(kiln::imag(x).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(kiln::conj(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(kiln::angle(x).to_vector<float>(),
            (std::vector<float>{std::numbers::pi_v<float>, 0, 0}));
  EXPECT_EQ(kiln::angle(kiln::tensor({-1, 1})).dtype(), kiln::default_dtype());
  // complex(re, im) broadcasts; polar(abs, angle) is its inverse.
  const Tensor built = kiln::complex(kiln::tensor({{1.0f}, {2.0f}}), kiln::tensor({3.0f, -4.0f}));
  EXPECT_EQ(built.dtype(), DType::c64);
  EXPECT_EQ(built.shape(), (Shape{2, 2}));
  EXPECT_EQ(kiln::flatten(built).to_vector<c64>(),
            (std::vector<c64>{{1, 3}, {1, -4}, {2, 3}, {2, -4}}));
  EXPECT_EQ(kiln::complex(kiln::tensor({1.0}, kiln::DType::f64), 2.0).dtype(), DType::c128);
  const Tensor back = kiln::polar(kiln::abs(z), kiln::angle(z));
  expect_near(back.to_vector<c128>(), z.to_vector<c128>(), 1e-6, "polar");
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::complex(kiln::tensor({1}), kiln::tensor({2})); }),
            kiln::ErrorCode::wrong_type);
}

TEST(Complex, ReductionsAndMatrixProducts) {
  const Tensor z = kiln::reshape(Tensor::from(kPoints), {2, 4});
  c128 total = 0, product = 1;
  for (c128 v : kPoints) total += v, product *= v;
  expect_near({kiln::sum(z).item<c128>()}, {total}, 1e-15, "sum");
  expect_near({kiln::prod(z).item<c128>()}, {product}, 1e-15, "prod");
  expect_near({kiln::mean(z).item<c128>()}, {total / 8.0}, 1e-15, "mean");
  EXPECT_EQ(kiln::mean(z).dtype(), DType::c128);
  // var, std and norm are real: of |z - mean|^2 and |z|^2.
  double squares = 0, deviations = 0;
  for (c128 v : kPoints) squares += std::norm(v), deviations += std::norm(v - total / 8.0);
  EXPECT_EQ(kiln::var(z).dtype(), DType::f64);
  EXPECT_NEAR(kiln::var(z).item<double>(), deviations / 7, 1e-14);
  EXPECT_NEAR(kiln::std(z).item<double>(), std::sqrt(deviations / 7), 1e-14);
  EXPECT_NEAR(kiln::norm(z).item<double>(), std::sqrt(squares), 1e-14);
  EXPECT_NEAR(
      kiln::norm(z, 1.0).item<double>(),
      [&] {
        double s = 0;
        for (c128 v : kPoints) s += std::abs(v);
        return s;
      }(),
      1e-14);
  expect_near(kiln::sum(z, {0}).to_vector<c128>(),
              {kPoints[0] + kPoints[4], kPoints[1] + kPoints[5], kPoints[2] + kPoints[6],
               kPoints[3] + kPoints[7]},
              1e-15, "sum over dim 0");
  expect_near({kiln::cumsum(z, 1).to_vector<c128>()[3]},
              {kPoints[0] + kPoints[1] + kPoints[2] + kPoints[3]}, 1e-15, "cumsum");
  // matmul of a [2,4] and a [4,3] against the sums of products.
  std::vector<c128> bv;
  for (int i = 0; i < 12; ++i) bv.push_back(c128(0.1 * i, 1.0 - 0.2 * i));
  const Tensor b = kiln::reshape(Tensor::from(bv), {4, 3});
  std::vector<c128> want(6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want[i * 3 + j] += kPoints[i * 4 + k] * bv[k * 3 + j];
  for (DType t : {DType::c128, DType::c64}) {
    const Tensor p = kiln::matmul(kiln::convert(z, t), kiln::convert(b, t));
    EXPECT_EQ(p.dtype(), t);
    expect_near(kiln::flatten(p).to_vector<c128>(), want, t == DType::c64 ? 1e-6 : 1e-15, "matmul");
  }
  // dot of two vectors: no conjugation (as libtorch's dot; vdot conjugates the first).
  const Tensor u = Tensor::from(std::vector<c64>{{1, 1}, {0, 2}});
  const Tensor v = Tensor::from(std::vector<c64>{{2, 0}, {1, -1}});
  EXPECT_EQ(kiln::dot(u, v).item<c64>(), c64(4, 4));
  // A real matrix times a complex one is complex.
  EXPECT_EQ(kiln::matmul(kiln::ones({2, 2}, DType::f64), kiln::reshape(u, {2, 1})).dtype(),
            DType::c128);
}

TEST(Complex, ViewsAndShapeOps) {
  const Tensor z = kiln::reshape(Tensor::from(kPoints), {2, 4});
  const auto at = [&](int i, int j) { return kPoints[i * 4 + j]; };
  EXPECT_EQ(kiln::flatten(kiln::transpose(z, 0, 1)).to_vector<c128>(),
            (std::vector<c128>{at(0, 0), at(1, 0), at(0, 1), at(1, 1), at(0, 2), at(1, 2), at(0, 3),
                               at(1, 3)}));
  EXPECT_EQ(kiln::flatten(z.index({kiln::indexing::Slice(), kiln::indexing::Slice(1, 4, 2)}))
                .to_vector<c128>(),
            (std::vector<c128>{at(0, 1), at(0, 3), at(1, 1), at(1, 3)}));
  EXPECT_EQ(kiln::concat({z, z}, 0).shape(), (Shape{4, 4}));
  EXPECT_EQ(kiln::concat({z, z}, 0).to_vector<c128>()[9], at(0, 1));
  EXPECT_EQ(kiln::broadcast_to(kiln::reshape(z, {2, 1, 4}), {2, 3, 4}).to_vector<c128>()[5],
            at(0, 1));
  const Tensor padded = kiln::pad(z, {0, 1}, {0, 0}, 0.0);
  EXPECT_EQ(padded.to_vector<c128>()[0], c128(0, 0));
  EXPECT_EQ(padded.to_vector<c128>()[1], at(0, 0));
  const Tensor picked = kiln::gather(z, 1, kiln::tensor({{3L, 0L}, {1L, 1L}}));
  EXPECT_EQ(picked.to_vector<c128>(), (std::vector<c128>{at(0, 3), at(0, 0), at(1, 1), at(1, 1)}));
  EXPECT_EQ(kiln::where(kiln::abs(z) > 1, z, 0.0).to_vector<c128>()[1], at(0, 1));
  EXPECT_EQ(kiln::where(kiln::abs(z) > 1, z, 0.0).to_vector<c128>()[0], c128(0, 0));
  const Tensor mask = kiln::real(z) > 0;
  EXPECT_EQ(z.index({mask}).numel(), 4);
}

TEST(Complex, OrderingsAreWrongTypeErrorsAtBuildTime) {
  const Tensor z = Tensor::from(std::vector<c64>{{1, 2}, {3, -4}});
  const std::vector<std::pair<const char*, std::function<void()>>> refused = {
      {"less", [&] { (void)(z < z); }},
      {"greater", [&] { (void)(z > 0.0); }},
      {"max", [&] { (void)kiln::max(z); }},
      {"min", [&] { (void)kiln::min(z); }},
      {"argmax", [&] { (void)kiln::argmax(z); }},
      {"argsort", [&] { (void)kiln::argsort(z); }},
      {"relu", [&] { (void)kiln::relu(z); }},
      {"maximum", [&] { (void)kiln::maximum(z, z); }},
      {"sign", [&] { (void)kiln::sign(z); }},
      {"erf", [&] { (void)kiln::erf(z); }},
      {"softmax", [&] { (void)kiln::softmax(z, 0); }},
  };
  for (const auto& [op, build] : refused) {
    try {
      build();
      ADD_FAILURE() << op << " of c64 was built";
    } catch (const kiln::Error& e) {
      EXPECT_EQ(e.code(), kiln::ErrorCode::wrong_type) << op;
      EXPECT_NE(std::string(e.what()).find("c64"), std::string::npos) << e.what();
    }
  }
}

TEST(Complex, PrintsAsRealPlusImaginary) {
  const Tensor z = Tensor::from(std::vector<c64>{{1, 2}, {1.5f, -0.5f}});
  std::ostringstream os;
  os << z;
  EXPECT_NE(os.str().find("1+2i"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("1.5-0.5i"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("c64"), std::string::npos) << os.str();
}

TEST(Complex, FilesKeepComplexValues) {
  const Tensor z = Tensor::from(std::vector<c64>{{1, 2}, {3, -4}});
  const Tensor npy = kiln::data::parse_npy(kiln::data::serialize_npy(z));
  EXPECT_EQ(npy.dtype(), DType::c64);
  EXPECT_EQ(npy.to_vector<c64>(), z.to_vector<c64>());
  const Tensor z128 = kiln::convert(z, DType::c128);
  EXPECT_EQ(kiln::data::parse_npy(kiln::data::serialize_npy(z128)).to_vector<c128>(),
            z128.to_vector<c128>());
  const std::vector<std::byte> st = kiln::serialize_safetensors({{"z", z}});
  const std::string text(reinterpret_cast<const char*>(st.data()), st.size());
  EXPECT_NE(text.find("\"C64\""), std::string::npos);
  EXPECT_EQ(kiln::parse_safetensors(st).at("z").to_vector<c64>(), z.to_vector<c64>());
  // safetensors has no complex128: a clear error, no file.
  EXPECT_EQ(kiln_test::code_of([&] {
              (void)kiln::serialize_safetensors({{"z", z128}});
            }),
            kiln::ErrorCode::wrong_type);
}

TEST(Complex, EveryExecutorMatchesTheReference) {
  kiln_test::ExecutorGuard guard;
  const auto all = kiln::executors();
  const Tensor x = kiln::tensor({0.5f, -1.5f, 2.0f, 0.25f});
  auto build = [&] {
    const Tensor z = kiln::complex(x, x * 0.5f + 1.0f);  // real ops fused before
    const Tensor w = kiln::exp(z) * kiln::conj(z) + kiln::sqrt(z) / (z + 1.0f);
    // Real ops of complex results after, and a reduction.
    return std::vector<Tensor>{w, kiln::abs(w) * x + 1.0f, kiln::sum(w * w),
                               kiln::matmul(kiln::reshape(w, {2, 2}), kiln::reshape(z, {2, 2}))};
  };
  kiln::set_executor(all.front());
  std::vector<std::vector<c128>> want;
  for (const Tensor& t : build()) want.push_back(t.to_vector<c128>());
  for (std::size_t e = 1; e < all.size(); ++e) {
    kiln::set_executor(all[e]);
    const auto got = build();
    for (std::size_t i = 0; i < got.size(); ++i)
      expect_near(got[i].to_vector<c128>(), want[i], 1e-6,
                  std::string(all[e]->name()) + " result " + std::to_string(i));
  }
}

TEST(Complex, CompiledFunctionsKeepImaginaryConstants) {
  // The rewrite passes take a constant as 1 or 0 only when its imaginary part is 0 too.
  const Tensor z = kiln::placeholder({2}, DType::c64, "z");
  const kiln::Function f =
      kiln::compile({z}, {z * c64(1, 5), z + c64(0, 2), z * c64(1, 0), z - c64(0, 0)});
  const Tensor arg = Tensor::from(std::vector<c64>{{1, 1}, {2, -1}});
  const auto out = f(arg);
  EXPECT_EQ(out[0].to_vector<c64>(), (std::vector<c64>{{-4, 6}, {7, 9}}));
  EXPECT_EQ(out[1].to_vector<c64>(), (std::vector<c64>{{1, 3}, {2, 1}}));
  EXPECT_EQ(out[2].to_vector<c64>(), arg.to_vector<c64>());
  EXPECT_EQ(out[3].to_vector<c64>(), arg.to_vector<c64>());
}

TEST(Complex, PredicatesAndNanToNumTakeEachPart) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor z = Tensor::from(std::vector<c64>{{1, 2}, {inf, 0}, {0, -inf}, {nan, 1}, {2, nan}});
  EXPECT_EQ(kiln::isnan(z).to_vector<bool>(), (std::vector<bool>{false, false, false, true, true}));
  EXPECT_EQ(kiln::isinf(z).to_vector<bool>(), (std::vector<bool>{false, true, true, false, false}));
  EXPECT_EQ(kiln::isfinite(z).to_vector<bool>(),
            (std::vector<bool>{true, false, false, false, false}));
  const float big = std::numeric_limits<float>::max();
  EXPECT_EQ(kiln::nan_to_num(z).to_vector<c64>(),
            (std::vector<c64>{{1, 2}, {big, 0}, {0, -big}, {0, 1}, {2, 0}}));
}

TEST(Complex, OnnxExportRefusesComplexValues) {
  const Tensor x = kiln::placeholder({4}, DType::f32, "x");
  for (const Tensor& out : {kiln::abs(kiln::fft(x)), kiln::real(kiln::complex(x, x) * c64(0, 1))}) {
    try {
      (void)kiln::serialize_onnx({x}, {out});
      ADD_FAILURE() << "a graph of complex values was exported";
    } catch (const kiln::Error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("c64") != std::string::npos || what.find("fft") != std::string::npos)
          << what;
    }
  }
}

TEST(Complex, TheCApiRefusesComplexTensors) {
  try {
    (void)kiln::capi::to_ftype(DType::c64);
    ADD_FAILURE() << "a c64 tensor got an FType";
  } catch (const kiln::capi::CError& e) {
    EXPECT_EQ(e.code(), WRONG_TYPE);
  }
}

// The gradient of a real function of complex (and real) inputs, as PyTorch defines it:
// dL/dx + i dL/dy for z = x + iy, against central differences in each part.
void check_gradient(const std::string& what, const std::function<Tensor(const Tensor&)>& f,
                    const std::vector<c128>& points) {
  const Tensor z = Tensor::from(points).watch();
  Tensor g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradient(f(z), z);
  }
  ASSERT_EQ(g.dtype(), DType::c128) << what;
  const auto got = g.to_vector<c128>();
  constexpr double h = 1e-6;
  auto value = [&](std::vector<c128> p, std::size_t i, c128 step) {
    p[i] += step;
    return f(Tensor::from(p)).item<double>();
  };
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double d_re = (value(points, i, {h, 0}) - value(points, i, {-h, 0})) / (2 * h);
    const double d_im = (value(points, i, {0, h}) - value(points, i, {0, -h})) / (2 * h);
    EXPECT_NEAR(got[i].real(), d_re, 1e-6 * (1 + std::abs(d_re))) << what << ", element " << i;
    EXPECT_NEAR(got[i].imag(), d_im, 1e-6 * (1 + std::abs(d_im))) << what << ", element " << i;
  }
}

TEST(Complex, GradientsFollowPyTorchsConventionAgainstFiniteDifferences) {
  const Tensor w = Tensor::from(std::vector<c128>{{0.3, -0.7},
                                                  {1.1, 0.4},
                                                  {-0.5, 0.2},
                                                  {0.9, 0.9},
                                                  {0.2, -1.3},
                                                  {-0.6, -0.1},
                                                  {1.4, 0.0},
                                                  {0.1, 0.6}});
  const Tensor r = kiln::tensor({0.5, -1.0, 2.0, 0.25, 1.5, -0.75, 0.3, 0.8}, kiln::DType::f64);
  using F = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, F>> cases = {
      {"|z|^2", [](const Tensor& z) { return kiln::sum(kiln::real(z * kiln::conj(z))); }},
      {"abs", [](const Tensor& z) { return kiln::sum(kiln::abs(z)); }},
      {"real and imag",
       [&](const Tensor& z) {
         return kiln::sum(kiln::real(z) * r + kiln::imag(z) * kiln::imag(z));
       }},
      {"angle", [](const Tensor& z) { return kiln::sum(kiln::angle(z)); }},
      {"mul, add and a real factor",
       [&](const Tensor& z) { return kiln::sum(kiln::abs(z * w + r * z)); }},
      {"div and reciprocal",
       [&](const Tensor& z) { return kiln::sum(kiln::real(w / z + kiln::reciprocal(z + w))); }},
      {"exp, log, sqrt",
       [](const Tensor& z) {
         return kiln::sum(kiln::imag(kiln::exp(z) + kiln::log(z) * kiln::sqrt(z)));
       }},
      {"trig and hyperbolic",
       [](const Tensor& z) {
         return kiln::sum(kiln::real(kiln::sin(z) * kiln::cosh(z) + kiln::tanh(z) - kiln::atan(z) +
                                     kiln::asinh(z)));
       }},
      {"pow in both operands",
       [&](const Tensor& z) { return kiln::sum(kiln::abs(kiln::pow(z, w) + kiln::pow(w, z))); }},
      {"square and sigmoid",
       [](const Tensor& z) { return kiln::sum(kiln::angle(kiln::square(z) + kiln::sigmoid(z))); }},
      {"sum, mean, prod and cumsum over views",
       [&](const Tensor& z) {
         const Tensor m = kiln::reshape(z, {2, 4});
         return kiln::abs(kiln::sum(kiln::transpose(m, 0, 1) * 2.0) + kiln::mean(m)) +
                kiln::real(kiln::prod(kiln::slice(kiln::flatten(m), {0}, {4}))) +
                kiln::sum(kiln::imag(kiln::cumsum(m, 1)));
       }},
      {"matmul",
       [&](const Tensor& z) {
         const Tensor p = kiln::matmul(kiln::reshape(z, {2, 4}), kiln::reshape(w, {4, 2}));
         return kiln::sum(kiln::abs(p) + kiln::real(kiln::matmul(kiln::reshape(w, {2, 4}),
                                                                 kiln::reshape(z, {4, 2}))));
       }},
      {"complex and polar",
       [&](const Tensor& z) {
         const Tensor a = kiln::complex(kiln::imag(z), kiln::real(z) * r);
         return kiln::sum(kiln::real(a * w) + kiln::imag(kiln::polar(kiln::abs(z), r)));
       }},
      {"conversions",
       [&](const Tensor& z) {
         return kiln::sum(kiln::convert(z * w, DType::f64) +
                          kiln::abs(z + kiln::convert(r, DType::c128)));
       }},
  };
  for (const auto& [what, f] : cases) check_gradient(what, f, kSmoothPoints);
  // A real input of a complex expression gets a real gradient: the real part of its
  // complex one.
  const Tensor x = r.watch();
  Tensor g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradient(kiln::sum(kiln::abs(x * w)), x);
  }
  EXPECT_EQ(g.dtype(), DType::f64);
  const auto wv = w.to_vector<c128>();
  const auto rv = r.to_vector<double>();
  for (std::size_t i = 0; i < rv.size(); ++i)
    EXPECT_NEAR(g.to_vector<double>()[i], std::abs(wv[i]) * (rv[i] > 0 ? 1 : -1), 1e-12);
  // A c64 input of an f32 loss gets a c64 gradient: |z|^2's is 2z.
  const Tensor z64 = Tensor::from(std::vector<c64>{{1, 2}, {-0.5f, 0.25f}}).watch();
  {
    kiln::GradientContext ctx;
    g = kiln::gradient(kiln::sum(kiln::real(z64 * kiln::conj(z64))), z64);
  }
  EXPECT_EQ(g.dtype(), DType::c64);
  EXPECT_EQ(g.to_vector<c64>(), (std::vector<c64>{{2, 4}, {-1, 0.5f}}));
  // The output of a gradient must be real.
  EXPECT_EQ(kiln_test::code_of([&] {
              kiln::GradientContext ctx;
              (void)kiln::gradient(kiln::sum(z64 * z64), z64);
            }),
            kiln::ErrorCode::illegal_derive);
}

// The transform by its definition, in long double: X[k] = sum_j x[j] exp(sign 2 pi i jk / n).
std::vector<c128> direct_dft(const std::vector<c128>& x, bool inverse) {
  const auto n = static_cast<long double>(x.size());
  std::vector<c128> out;
  for (std::size_t k = 0; k < x.size(); ++k) {
    std::complex<long double> total = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      const long double turn = static_cast<long double>((j * k) % x.size()) / n;
      const long double angle = (inverse ? 2 : -2) * std::numbers::pi_v<long double> * turn;
      total += std::complex<long double>(x[j]) * std::polar(1.0L, angle);
    }
    out.push_back(c128(inverse ? total / n : total));
  }
  return out;
}

std::vector<c128> signal(std::size_t n, double phase) {
  std::vector<c128> x;
  for (std::size_t j = 0; j < n; ++j)
    x.push_back({std::sin(0.7 * j + phase) + 0.1 * j, std::cos(1.3 * j - phase) - 0.05 * j});
  return x;
}

TEST(Complex, FftMatchesTheDefinitionForEveryLength) {
  for (std::size_t n : {1u, 2u, 3u, 5u, 7u, 8u, 12u, 13u, 16u, 30u, 97u}) {
    const std::vector<c128> x = signal(n, 0.3);
    const Tensor t = Tensor::from(x);
    expect_near(kiln::fft(t).to_vector<c128>(), direct_dft(x, false), 1e-13,
                "fft of length " + std::to_string(n));
    expect_near(kiln::ifft(t).to_vector<c128>(), direct_dft(x, true), 1e-13,
                "ifft of length " + std::to_string(n));
    // c64 in float: an FFT's error is a few ulp of the signal's size (sum |x|), not of each
    // output.
    const Tensor t64 = kiln::convert(t, DType::c64);
    EXPECT_EQ(kiln::fft(t64).dtype(), DType::c64);
    const std::vector<c128> got = kiln::fft(t64).to_vector<c128>();
    const std::vector<c128> want = direct_dft(t64.to_vector<c128>(), false);
    double size = 0;
    for (c128 v : x) size += std::abs(v);
    for (std::size_t k = 0; k < n; ++k)
      EXPECT_LE(std::abs(got[k] - want[k]), 1e-6 * size)
          << "c64 fft of length " << n << ", element " << k;
    expect_near(kiln::ifft(kiln::fft(t)).to_vector<c128>(), x, 1e-13, "round trip");
  }
  // Along the first dimension of a [5, 3] tensor: each column on its own.
  std::vector<c128> m;
  for (int i = 0; i < 15; ++i) m.push_back({0.1 * i * i, 1.0 - 0.3 * i});
  const Tensor columns = kiln::fft(kiln::reshape(Tensor::from(m), {5, 3}), std::nullopt, 0);
  for (int c = 0; c < 3; ++c) {
    std::vector<c128> column, got;
    for (int r = 0; r < 5; ++r) {
      column.push_back(m[r * 3 + c]);
      got.push_back(columns.at<c128>({r, c}));
    }
    expect_near(got, direct_dft(column, false), 1e-13, "column " + std::to_string(c));
  }
}

TEST(Complex, FftLengthsNormsAndRealTransforms) {
  const std::vector<c128> x = signal(6, 1.1);
  const Tensor t = Tensor::from(x);
  // n pads with zeros or cuts.
  std::vector<c128> padded = x;
  padded.resize(9);
  expect_near(kiln::fft(t, 9).to_vector<c128>(), direct_dft(padded, false), 1e-13, "n = 9");
  expect_near(kiln::fft(t, 4).to_vector<c128>(),
              direct_dft(std::vector<c128>(x.begin(), x.begin() + 4), false), 1e-13, "n = 4");
  // The three norms.
  const std::vector<c128> plain = direct_dft(x, false);
  std::vector<c128> forward, ortho;
  for (c128 v : plain) forward.push_back(v / 6.0), ortho.push_back(v / std::sqrt(6.0));
  expect_near(kiln::fft(t, std::nullopt, -1, "forward").to_vector<c128>(), forward, 1e-13,
              "forward");
  expect_near(kiln::fft(t, std::nullopt, -1, "ortho").to_vector<c128>(), ortho, 1e-13, "ortho");
  for (const char* norm : {"backward", "forward", "ortho"})
    expect_near(
        kiln::ifft(kiln::fft(t, std::nullopt, -1, norm), std::nullopt, -1, norm).to_vector<c128>(),
        x, 1e-14, norm);
  // Real signals: fft gives c64 from f32, c128 from f64; rfft the n/2 + 1 first outputs.
  const Tensor r = kiln::tensor({1.0, -2.0, 0.5, 3.0, 0.25, -1.0, 2.0}, kiln::DType::f64);  // odd length
  EXPECT_EQ(kiln::fft(kiln::convert(r, DType::f32)).dtype(), DType::c64);
  EXPECT_EQ(kiln::fft(r).dtype(), DType::c128);
  EXPECT_EQ(kiln::fft(kiln::tensor({1, 2, 3})).dtype(), DType::c64);
  const Tensor half = kiln::rfft(r);
  EXPECT_EQ(half.shape(), (Shape{4}));
  const std::vector<c128> full = kiln::fft(r).to_vector<c128>();
  expect_near(half.to_vector<c128>(), std::vector<c128>(full.begin(), full.begin() + 4), 1e-15,
              "rfft");
  // irfft inverts rfft: n = 2 (m - 1) by default (even lengths); odd ones name n.
  const Tensor even = kiln::tensor({1.0, -2.0, 0.5, 3.0, 0.25, -1.0}, kiln::DType::f64);
  EXPECT_EQ(kiln::irfft(kiln::rfft(even)).dtype(), DType::f64);
  expect_near(kiln::convert(kiln::irfft(kiln::rfft(even)), DType::c128).to_vector<c128>(),
              kiln::convert(even, DType::c128).to_vector<c128>(), 1e-14, "irfft, even");
  expect_near(kiln::convert(kiln::irfft(kiln::rfft(r), 7), DType::c128).to_vector<c128>(),
              kiln::convert(r, DType::c128).to_vector<c128>(), 1e-14, "irfft, odd");
  // Bad input: clear errors.
  using kiln::ErrorCode;
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::rfft(t); }), ErrorCode::wrong_type);
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::fft(t, 0); }), ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::fft(t, std::nullopt, -1, "unitary"); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::fft(kiln::sum(t)); }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::fft(t, std::nullopt, 1); }),
            ErrorCode::illegal_dimension);
}

TEST(Complex, FftGradientsAgainstFiniteDifferences) {
  const Tensor w = Tensor::from(signal(8, 2.0));
  check_gradient(
      "fft", [&](const Tensor& z) { return kiln::sum(kiln::abs(kiln::fft(z) * w)); },
      kSmoothPoints);
  check_gradient(
      "ifft with n and ortho",
      [&](const Tensor& z) {
        return kiln::sum(kiln::real(kiln::ifft(z, 11, -1, "ortho"))) +
               kiln::sum(kiln::imag(kiln::ifft(z, 5)));
      },
      kSmoothPoints);
  // Real inputs: rfft and irfft.
  const std::vector<double> points = {0.5, -1.2, 2.0, 0.3, -0.7, 1.1, 0.9, -2.2};
  const Tensor weights = kiln::tensor({1.0, -0.5, 2.0, 0.25, 1.5}, kiln::DType::f64);
  kiln_test::expect_gradient_near_differences(
      [&](const Tensor& x) {
        return kiln::sum(kiln::abs(kiln::rfft(x) * weights)) +
               kiln::sum(kiln::irfft(kiln::fft(x), 8) * kiln::irfft(kiln::rfft(x * x)));
      },
      points, 1e-6);
}

TEST(Complex, SecondDerivatives) {
  // d/dz of the gradient of |z|^4 / 4 summed: the gradient is z |z|^2; its real part's gradient
  // is d(x^3 + x y^2)/dx + i d(x^3 + x y^2)/dy = (3x^2 + y^2) + 2xy i.
  const Tensor z = Tensor::from(kPoints).watch();
  Tensor second;
  {
    kiln::GradientContext ctx;
    const Tensor m = kiln::real(z * kiln::conj(z));
    const Tensor g = kiln::gradient(kiln::sum(m * m) / 4.0, z);
    second = kiln::gradient(kiln::sum(kiln::real(g)), z);
  }
  std::vector<c128> want;
  for (c128 p : kPoints)
    want.push_back({3 * p.real() * p.real() + p.imag() * p.imag(), 2 * p.real() * p.imag()});
  expect_near(second.to_vector<c128>(), want, 1e-12, "second derivative");
}

}  // namespace
