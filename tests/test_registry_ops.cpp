// The registry-driven op test (in the manner of ggml's test-backend-ops): for every elementwise
// row of the op registry and every dtype the row accepts, inputs full of edge values (0, -0, ±1,
// NaN, ±inf, the extremes of the type, the smallest subnormal) are run on every executor that
// kiln::executors() lists and compared with the reference executor: read in place, through a
// transposing view and a strided slice, broadcast both ways (normal and inverse), as 0-d and as
// empty tensors, and for binary rows with operands of every pair of accepted types. A row the
// registry refuses for a dtype must be refused when the node is built (wrong_type, naming the op
// and the operand). Every differentiable elementwise row is checked against central differences
// in f64, and the gradient table against the registry's gradient column.
//
// Nothing in that part names an op: a new elementwise row, or a new executor, is covered without
// being told. Rows of other kinds (views, reductions, matmul, indexing, window ops, ...) have
// signatures of their own and so one case each at the end of this file, run the same way; a row
// without a case fails RegistryOps.EveryRowHasACase.
//
// Tolerance: integers, bools and comparison results bit for bit; floats where both are NaN, or equal
// (infinities of the same sign, and zeros), or within rtol * max(|reference|, 1) with rtol 1e-5
// for f32 and 1e-12 for f64 (SLEEF's functions are within 3.5 ulp of libm's). Complex values are
// compared part by part, with the tolerance of their parts' type taken of their modulus, and the
// signs of a value infinite in both parts left free (see `difference`). Their inputs pair the edge
// values of the parts' type, so that every edge value meets others in the other part; their
// gradients are checked against central differences in both parts (PyTorch's convention).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/op_registry.hpp"
#include "kiln/kiln.hpp"
#include "registry_rows.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using kiln::detail::Op;
using kiln::detail::OpKind;
using kiln_test::elementwise_rows;
using kiln_test::Row;

constexpr DType kAllTypes[] = {DType::i32,  DType::i64,     DType::f32, DType::f64,
                               DType::f16,  DType::bf16,    DType::boolean, DType::c64,
                               DType::c128, DType::u8,      DType::i8,  DType::i16};

// ---- inputs ---------------------------------------------------------------------------------

// The edge values of a type, then a few random ones (the same on every run).
template <class T> std::vector<T> edge_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v;
  if constexpr (std::is_floating_point_v<T>) {
    v = {T(0), -T(0), T(1), T(-1), T(0.5), T(-2.5), T(3), L::quiet_NaN(), L::infinity(),
         -L::infinity(), L::max(), L::lowest(), L::denorm_min(), T(1e-3)};
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> d(-4, 4);
    for (int i = 0; i < 6; ++i) v.push_back(static_cast<T>(d(rng)));
  } else {
    v = {T(0), T(1), T(-1), T(2), T(-3), T(7), L::max(), L::min(), T(L::max() - 1),
         T(L::min() + 1), T(63), T(-64)};
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> d(-100, 100);
    for (int i = 0; i < 6; ++i) v.push_back(static_cast<T>(d(rng)));
  }
  return v;
}

std::int64_t edge_count(DType t) {
  return kiln::is_inexact(t) ? 20 : 18;
}

// `count` values of type t: the edge values repeated from position `offset` on.
Tensor values_of(DType t, Shape shape, std::int64_t offset = 0) {
  const std::int64_t n = kiln_test::numel_of(shape);
  auto make = [&]<class T>(T) {
    const std::vector<T> edges = edge_values<T>();
    std::vector<T> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      v[static_cast<std::size_t>(i)] =
          edges[static_cast<std::size_t>((i + offset) % static_cast<std::int64_t>(edges.size()))];
    return Tensor::from(v, shape);
  };
  switch (t) {
    case DType::i32: return make(std::int32_t{});
    case DType::i64: return make(std::int64_t{});
    case DType::f32: return make(float{});
    case DType::f64: return make(double{});
    case DType::u8: return make(std::uint8_t{});
    case DType::i8: return make(std::int8_t{});
    case DType::i16: return make(std::int16_t{});
    case DType::boolean: {  // false and true in an irregular pattern
      std::vector<bool> v(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = (i + offset) % 3 != 1;
      return Tensor::from(v, shape);
    }
    case DType::c64:
    case DType::c128:  // the parts' edge values, the imaginary ones 7 positions further on
      return kiln::complex(values_of(kiln::real_type(t), shape, offset),
                           values_of(kiln::real_type(t), shape, offset + 7))
          .eval();
    case DType::f16:
    case DType::bf16: break;
  }
  // The f32 edge values rounded: the largest and smallest f32 become infinity and zero in f16.
  return kiln::convert(make(float{}), t).eval();
}

// ---- comparing results ----------------------------------------------------------------------

struct Result {
  DType dtype;
  Shape shape;
  std::vector<double> floats;
  std::vector<std::int64_t> ints;
};

Result read(const Tensor& t) {
  Result r{t.dtype(), t.shape(), {}, {}};
  if (kiln::is_complex(t.dtype())) {
    for (const auto& z : t.to_vector<std::complex<double>>()) {
      r.floats.push_back(z.real());
      r.floats.push_back(z.imag());
    }
  } else if (kiln::is_float(t.dtype())) {
    r.floats = t.to_vector<double>();
  } else {
    r.ints = t.to_vector<std::int64_t>();
  }
  return r;
}

// Empty when they agree, else the first difference.
std::string difference(const Result& want, const Result& got) {
  if (want.dtype != got.dtype) return "dtype differs";
  if (want.shape != got.shape) return "shape differs";
  if (want.ints != got.ints) {
    for (std::size_t i = 0; i < want.ints.size(); ++i)
      if (want.ints[i] != got.ints[i])
        return "element " + std::to_string(i) + ": " + std::to_string(got.ints[i]) +
               ", reference " + std::to_string(want.ints[i]);
  }
  // f32: a few ulp (SLEEF's functions against the C library's); the 16-bit floats: one ulp of
  // the type (a few f32 ulp before the rounding may end on the other side of a tie).
  const DType part = kiln::real_type(want.dtype);
  const double rtol = part == DType::f32          ? 1e-5
                      : part == DType::f16        ? 0x1p-10
                      : part == DType::bf16       ? 0x1p-7
                                                  : 1e-12;
  const bool complex = kiln::is_complex(want.dtype);
  for (std::size_t i = 0; i < want.floats.size(); ++i) {
    const double w = want.floats[i], g = got.floats[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (w == g) continue;
    // A complex value is a point of the plane: its parts are within rtol of its modulus (as
    // numpy's isclose has it), so a part that is the small side of a large value, cos or sin of
    // a phase near a multiple of pi/2, may differ in its last digits or its sign. The same for
    // the direction of a value that overflowed in both parts: the signs of (inf cos t, inf sin t)
    // hold only the quadrant of t, and where t is huge (a power with an exponent near the largest
    // value) no two libms agree on it.
    const std::size_t other = i % 2 == 0 ? i + 1 : i - 1;  // the value's other part
    const double scale = complex && !std::isnan(want.floats[other])
                             ? std::hypot(w, want.floats[other])
                             : std::abs(w);
    if (complex && std::isinf(w) && std::isinf(g) && std::isinf(want.floats[other]) &&
        std::isinf(got.floats[other]))
      continue;
    if (std::isfinite(w) && std::isfinite(g) && std::abs(w - g) <= rtol * std::max(scale, 1.0))
      continue;
    return "element " + std::to_string(i) + ": " + std::to_string(g) + ", reference " +
           std::to_string(w);
  }
  return "";
}

// kiln::executors(), the reference first; KILN_TEST_EXECUTORS (names with commas) keeps only the
// executors it names after the reference: the runs under a forced instruction set (ctest's
// cpu_avx2, cpu_generic) compare the CPU executor, the only one the instruction set changes.
std::vector<std::shared_ptr<kiln::Executor>> compared_executors() {
  std::vector<std::shared_ptr<kiln::Executor>> all = kiln::executors();
  const char* only = std::getenv("KILN_TEST_EXECUTORS");
  if (only == nullptr || *only == '\0') return all;
  const std::string names = std::string(",") + only + ",";
  std::vector<std::shared_ptr<kiln::Executor>> kept{all.front()};
  for (std::size_t e = 1; e < all.size(); ++e)
    if (names.find("," + std::string(all[e]->name()) + ",") != std::string::npos)
      kept.push_back(all[e]);
  return kept;
}

// Builds the graph afresh for each executor (an evaluated node keeps its result) and compares
// every executor's values with the reference's. Returns the number of comparisons.
int compare_executors(const std::string& what, const std::function<Tensor()>& build) {
  kiln_test::ExecutorGuard guard;
  const auto all = compared_executors();
  kiln::set_executor(all.front());
  const Result want = read(build());
  int compared = 0;
  for (std::size_t e = 1; e < all.size(); ++e) {
    kiln::set_executor(all[e]);
    const std::string diff = difference(want, read(build()));
    EXPECT_EQ(diff, "") << what << " on the " << all[e]->name() << " executor";
    ++compared;
  }
  return compared;
}

std::string type_name(DType t) { return std::string(kiln::dtype_name(t)); }

// ---- the tests ------------------------------------------------------------------------------

TEST(RegistryOps, ReferenceExecutorIsFirstAndNamesAreUnique) {
  const auto all = kiln::executors();
  ASSERT_GE(all.size(), 2u) << "the reference executor and at least one other";
  EXPECT_EQ(all.front()->name(), "reference");
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(all[i]->name(), all[j]->name());
}

TEST(RegistryOps, EveryElementwiseRowIsEnumerated) {
  std::size_t elementwise = 0;
  for (std::size_t i = 0; i < kiln::detail::kOpCount; ++i) {
    const auto& info = kiln::detail::op_info(static_cast<Op>(i));
    if (info.kind == OpKind::unary || info.kind == OpKind::binary) {
      ++elementwise;
      EXPECT_FALSE(info.c_template.empty()) << info.name << " has no C expression template";
    }
  }
  EXPECT_EQ(elementwise_rows().size(), elementwise);
  EXPECT_GE(elementwise, 43u);  // 30 unary and 13 binary rows when this test was written
}

TEST(RegistryOps, UnaryRowsAgreeWithTheReferenceOnEveryExecutor) {
  int compared = 0;
  for (const Row& row : elementwise_rows()) {
    if (!row.unary) continue;
    for (DType t : kAllTypes) {
      const std::string what = std::string(row.name) + "(" + type_name(t) + ")";
      if (!kiln::detail::accepts(row.op, t)) {
        const Tensor x = values_of(t, {3});
        try {
          (void)row.unary(x);
          ADD_FAILURE() << what << " was built although the registry refuses " << type_name(t);
        } catch (const kiln::Error& e) {
          EXPECT_EQ(e.code(), kiln::ErrorCode::wrong_type) << what;
          EXPECT_NE(std::string(e.what()).find(row.name), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find(type_name(t)), std::string::npos) << e.what();
        }
        continue;
      }
      const std::int64_t n = edge_count(t);
      compared += compare_executors(what + " contiguous [3," + std::to_string(n) + "]",
                                    [&] { return row.unary(values_of(t, {3, n})); });
      compared += compare_executors(what + " through a transposing view", [&] {
        return row.unary(kiln::transpose(values_of(t, {n, 3}, 5), 0, 1));
      });
      compared += compare_executors(what + " through a strided slice", [&] {
        return row.unary(kiln::slice(values_of(t, {3, 2 * n}, 1), {0, 1}, {3, 2 * n}, {1, 2}));
      });
      compared += compare_executors(what + " broadcast", [&] {
        return row.unary(kiln::broadcast_to(values_of(t, {n}), {4, n}));
      });
      for (std::int64_t k = 0; k < n; ++k)
        compared += compare_executors(what + " 0-d, edge value " + std::to_string(k),
                                      [&] { return row.unary(values_of(t, {}, k)); });
      compared += compare_executors(what + " empty",
                                    [&] { return row.unary(values_of(t, {0, 5})); });
      // Fused behind another op of the same row, so the fast executors run it inside a chain.
      compared += compare_executors(what + " fused twice", [&] {
        const Tensor once = row.unary(values_of(t, {2, n}));
        return once.dtype() == t ? row.unary(once) : once;
      });
    }
  }
  EXPECT_GT(compared, 0);
}

// The pairs of types whose kernels are compared: every pair of the wider types, and the 8- and
// 16-bit integers with each other, with themselves and with bool, i32 and f32 (with the other
// types they are converted to those types first, as i32 is, and each pair is a kernel more to
// compile on every device).
bool compiled_pair(DType ta, DType tb) {
  using kiln::is_narrow_integer;
  if (!is_narrow_integer(ta) && !is_narrow_integer(tb)) return true;
  if (is_narrow_integer(ta) && is_narrow_integer(tb)) return true;
  const DType other = is_narrow_integer(ta) ? tb : ta;
  return other == DType::boolean || other == DType::i32 || other == DType::f32;
}

TEST(RegistryOps, BinaryRowsAgreeWithTheReferenceOnEveryExecutor) {
  int compared = 0;
  for (const Row& row : elementwise_rows()) {
    if (!row.binary) continue;
    for (DType ta : kAllTypes)
      for (DType tb : kAllTypes) {
        const std::string what =
            std::string(row.name) + "(" + type_name(ta) + ", " + type_name(tb) + ")";
        if (!kiln::detail::accepts(row.op, ta) || !kiln::detail::accepts(row.op, tb)) {
          EXPECT_EQ(kiln_test::code_of([&] { (void)row.binary(values_of(ta, {2}), values_of(tb, {2})); }),
                    kiln::ErrorCode::wrong_type)
              << what;
          continue;
        }
        if (!compiled_pair(ta, tb)) continue;
        const std::int64_t na = edge_count(ta), nb = edge_count(tb);
        // Every pair of edge values: [na, 1] against [nb], broadcast normally.
        compared += compare_executors(what + " all pairs", [&] {
          return row.binary(values_of(ta, {na, 1}), values_of(tb, {nb}));
        });
        if (ta != tb && !(ta == DType::f64 || tb == DType::f64)) continue;
        compared += compare_executors(what + " inverse broadcast", [&] {
          return row.binary(values_of(ta, {nb, na}, 3), values_of(tb, {nb}).inverse_broadcast());
        });
        compared += compare_executors(what + " through views", [&] {
          return row.binary(kiln::transpose(values_of(ta, {na, nb}, 2), 0, 1),
                            kiln::slice(values_of(tb, {nb, 2 * na}, 4), {0, 0}, {nb, 2 * na},
                                        {1, 2}));
        });
        compared += compare_executors(what + " 0-d", [&] {
          return row.binary(values_of(ta, {}, 4), values_of(tb, {}, 6));
        });
        compared += compare_executors(what + " empty", [&] {
          return row.binary(values_of(ta, {0, 3}), values_of(tb, {3}));
        });
      }
  }
  EXPECT_GT(compared, 0);
}

// ---- gradients ------------------------------------------------------------------------------

// Points in (-3, 3) that avoid 0, ±1 and each other's ties, so that kinks (abs, relu) and
// domain edges (log, acosh, atanh) are not met exactly.
std::vector<double> grid(int count, double phase) {
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(-2.95 + 5.9 * (i + phase) / count + 0.0123);
  return v;
}

// The central difference (up - down) / 2h at a point, where it is usable: f finite at x and
// x +- h, not steep, and no kink between x - h and x + h (a min/max crossing, a branch cut),
// which shows as one-sided differences that disagree.
std::optional<double> usable_difference(double center, double up, double down, double h) {
  const double numeric = (up - down) / (2 * h);
  if (!std::isfinite(center) || !std::isfinite(up) || !std::isfinite(down) ||
      std::abs(numeric) > 1e4)
    return std::nullopt;
  const double left = (center - down) / h, right = (up - center) / h;
  if (std::abs(left - right) > 1e-3 * (1 + std::abs(numeric))) return std::nullopt;
  return numeric;
}

// Checks d sum(f(x...)) / dx_k elementwise against central differences, at the points where f
// is finite and smooth enough for a difference quotient; at least `min_points` must qualify.
void gradcheck(const std::string& what, int arity,
               const std::function<Tensor(const std::vector<Tensor>&)>& f) {
  constexpr int kPoints = 64;
  constexpr double h = 1e-6;
  std::vector<std::vector<double>> x;
  for (int k = 0; k < arity; ++k) x.push_back(grid(kPoints, 0.37 * (k + 1)));
  if (arity == 2) std::reverse(x[1].begin(), x[1].end());
  auto value = [&](const std::vector<std::vector<double>>& at) {
    std::vector<Tensor> in;
    for (const auto& v : at) in.push_back(Tensor::from(v));
    return f(in).to_vector<double>();
  };
  std::vector<Tensor> vars;
  for (const auto& v : x) vars.push_back(Tensor::from(v).watch());
  std::vector<Tensor> grads;
  {
    kiln::GradientContext ctx;
    const Tensor y = kiln::sum(f(vars));
    grads = kiln::gradients(y, vars);
  }
  const std::vector<double> center = value(x);
  for (int k = 0; k < arity; ++k) {
    ASSERT_EQ(grads[static_cast<std::size_t>(k)].dtype(), DType::f64) << what;
    const std::vector<double> analytic = grads[static_cast<std::size_t>(k)].to_vector<double>();
    auto up = x, down = x;
    for (auto& v : up[static_cast<std::size_t>(k)]) v += h;
    for (auto& v : down[static_cast<std::size_t>(k)]) v -= h;
    const std::vector<double> fu = value(up), fd = value(down);
    int checked = 0;
    for (int i = 0; i < kPoints; ++i) {
      const std::optional<double> difference = usable_difference(center[i], fu[i], fd[i], h);
      if (!difference) continue;
      const double numeric = *difference;
      ++checked;
      EXPECT_NEAR(analytic[static_cast<std::size_t>(i)], numeric, 1e-5 * (1 + std::abs(numeric)))
          << what << ", input " << k << " at point " << i << " (x = " << x[k][i] << ")";
    }
    EXPECT_GE(checked, 8) << what << ": too few points where the difference quotient is usable";
  }
}

TEST(RegistryOps, EveryDifferentiableElementwiseRowMatchesCentralDifferences) {
  int rows = 0;
  for (const Row& row : elementwise_rows()) {
    const auto& info = kiln::detail::op_info(row.op);
    if (info.gradient != kiln::detail::Gradient::rule) continue;
    if (!kiln::detail::accepts(row.op, DType::f64)) continue;
    ++rows;
    // A complex result (complex(re, im)) is read through its parts.
    auto real_valued = [](const Tensor& out) {
      return kiln::is_complex(out.dtype()) ? kiln::real(out) + kiln::imag(out) * 0.5 : out;
    };
    if (row.unary)
      gradcheck(std::string(row.name), 1,
                [&](const std::vector<Tensor>& in) { return real_valued(row.unary(in[0])); });
    else
      gradcheck(std::string(row.name), 2, [&](const std::vector<Tensor>& in) {
        return real_valued(row.binary(in[0], in[1]));
      });
  }
  EXPECT_GT(rows, 30);
}

// The same for complex inputs: the gradient of sum(real(f) + imag(f) / 2) with respect to
// z = x + iy is d/dx + i d/dy, each part against central differences, at points off the branch
// cuts (where the one-sided differences agree).
void complex_gradcheck(const std::string& what, int arity,
                       const std::function<Tensor(const std::vector<Tensor>&)>& f) {
  using c128 = std::complex<double>;
  constexpr int kPoints = 64;
  constexpr double h = 1e-6;
  std::vector<std::vector<c128>> z(static_cast<std::size_t>(arity));
  for (int k = 0; k < arity; ++k) {
    const std::vector<double> re = grid(kPoints, 0.37 * (k + 1)), im = grid(kPoints, 0.61 * (k + 1));
    for (int i = 0; i < kPoints; ++i) z[k].push_back({re[i], 0.5 * im[(i * 5) % kPoints]});
  }
  auto loss = [&](const std::vector<Tensor>& in) {
    const Tensor out = f(in);
    return kiln::is_complex(out.dtype()) ? kiln::real(out) + kiln::imag(out) * 0.5 : out;
  };
  auto value = [&](const std::vector<std::vector<c128>>& at) {
    std::vector<Tensor> in;
    for (const auto& v : at) in.push_back(Tensor::from(v));
    return loss(in).to_vector<double>();
  };
  std::vector<Tensor> vars;
  for (const auto& v : z) vars.push_back(Tensor::from(v).watch());
  std::vector<Tensor> grads;
  {
    kiln::GradientContext ctx;
    grads = kiln::gradients(kiln::sum(loss(vars)), vars);
  }
  const std::vector<double> center = value(z);
  for (int k = 0; k < arity; ++k) {
    ASSERT_EQ(grads[k].dtype(), DType::c128) << what;
    const auto analytic = grads[k].to_vector<c128>();
    int checked = 0;
    for (const c128 direction : {c128(1, 0), c128(0, 1)}) {
      auto up = z, down = z;
      for (auto& v : up[k]) v += h * direction;
      for (auto& v : down[k]) v -= h * direction;
      const std::vector<double> fu = value(up), fd = value(down);
      for (int i = 0; i < kPoints; ++i) {
        const std::optional<double> difference = usable_difference(center[i], fu[i], fd[i], h);
        if (!difference) continue;
        const double numeric = *difference;
        ++checked;
        const double part = direction.real() != 0 ? analytic[i].real() : analytic[i].imag();
        EXPECT_NEAR(part, numeric, 1e-5 * (1 + std::abs(numeric)))
            << what << ", input " << k << " at point " << i << " (z = " << z[k][i] << "), "
            << (direction.real() != 0 ? "real" : "imaginary") << " part";
      }
    }
    EXPECT_GE(checked, 16) << what << ": too few points where the difference quotient is usable";
  }
}

TEST(RegistryOps, EveryDifferentiableComplexElementwiseRowMatchesCentralDifferences) {
  int rows = 0;
  for (const Row& row : elementwise_rows()) {
    const auto& info = kiln::detail::op_info(row.op);
    if (info.gradient != kiln::detail::Gradient::rule) continue;
    if (!kiln::detail::accepts(row.op, DType::c128)) continue;
    ++rows;
    if (row.unary)
      complex_gradcheck(std::string(row.name), 1,
                        [&](const std::vector<Tensor>& in) { return row.unary(in[0]); });
    else
      complex_gradcheck(std::string(row.name), 2, [&](const std::vector<Tensor>& in) {
        return row.binary(in[0], in[1]);
      });
  }
  EXPECT_GT(rows, 20);
}

// A zero-gradient row passes no gradient (a differentiable graph through it gives zeros, not an
// error); a row without a derivative is an illegal_derive error.
TEST(RegistryOps, RowsWithoutGradientGiveZerosOrAnError) {
  for (const Row& row : elementwise_rows()) {
    const auto& info = kiln::detail::op_info(row.op);
    if (info.gradient == kiln::detail::Gradient::rule) continue;
    const DType t = kiln::detail::accepts(row.op, DType::f64) ? DType::f64 : DType::i64;
    const Tensor x = Tensor::from(std::vector<double>{0.5, -1.5, 2.0}).watch();
    Tensor y;
    {
      kiln::GradientContext ctx;
      const Tensor in = kiln::convert(x, t);
      const Tensor out = row.unary ? row.unary(in) : row.binary(in, in);
      y = kiln::sum(kiln::convert(out, DType::f64) * x);
    }
    if (info.gradient == kiln::detail::Gradient::zero) {
      // y = sum(out * x): only the product passes a gradient, out itself passes none.
      const Tensor g = kiln::gradient(y, x);
      const Tensor expected = kiln::convert(
          row.unary ? row.unary(kiln::convert(x, t)) : row.binary(kiln::convert(x, t),
                                                                  kiln::convert(x, t)),
          DType::f64);
      EXPECT_EQ(g.to_vector<double>(), expected.to_vector<double>()) << row.name;
    } else {
      EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::gradient(y, x); }),
                kiln::ErrorCode::illegal_derive)
          << row.name;
    }
  }
}

// ---- the other rows -------------------------------------------------------------------------
// Rows that are not elementwise have signatures of their own, so each has a case here: a graph
// whose ops include the row, built from one tensor x of shape [2, 3, 4, 5]. A test fails when a
// row has no case (RegistryOps.EveryRowHasACase), so a new row of another kind cannot go
// untested.

namespace other {

const Shape kShape{2, 3, 4, 5};

// Values of type t for x: the edge values without the extremes of the type, whose sums depend
// on the order of the additions (max + max - max), which is each executor's own.
Tensor moderate_values(DType t, Shape shape, std::int64_t offset = 0) {
  if (kiln::is_complex(t))  // the parts' values, the imaginary ones 5 positions further on
    return kiln::complex(moderate_values(kiln::real_type(t), shape, offset),
                         moderate_values(kiln::real_type(t), shape, offset + 5))
        .eval();
  const std::int64_t n = kiln_test::numel_of(shape);
  std::vector<double> pool = {0, -0.0, 1, -1, 0.5, -2.5, 3, 1e-3, 2, -3.5, 1.25, 0.75};
  if (kiln::is_float(t)) {
    pool.push_back(std::numeric_limits<double>::quiet_NaN());
    pool.push_back(std::numeric_limits<double>::infinity());
    pool.push_back(-std::numeric_limits<double>::infinity());
  }
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = pool[static_cast<std::size_t>((i * 7 + offset) % pool.size())];
  return kiln::convert(Tensor::from(v, shape), t).eval();
}

// Finite, distinct values (no ties, no NaN): for products and convolutions computed in another
// order by the libraries, and for gradient checks at points where every op is smooth.
Tensor smooth_values(DType t, Shape shape, std::uint64_t seed = 3) {
  if (kiln::is_complex(t))
    return kiln::complex(smooth_values(kiln::real_type(t), shape, seed),
                         smooth_values(kiln::real_type(t), shape, seed + 100))
        .eval();
  const std::int64_t n = kiln_test::numel_of(shape);
  std::vector<double> v(static_cast<std::size_t>(n));
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_real_distribution<double> d(-2, 2);
  for (auto& x : v) x = d(rng);
  if (kiln::is_integer(t) || kiln::is_bool(t))
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = double(i % 7) - 3;
  return kiln::convert(Tensor::from(v, shape), t).eval();
}

Tensor flat_part(const Tensor& x, Shape shape) {  // the first elements of x, reshaped
  return kiln::reshape(kiln::slice_axis(kiln::reshape(x, {-1}), 0, 0, kiln_test::numel_of(shape)),
                       shape);
}

Tensor indices_for(Shape shape, std::int64_t bound) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(kiln_test::numel_of(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>((i * 5 + 1) % bound);
  return Tensor::from(v, shape);
}

// The gradient of sum(f(leaf) * weights) with respect to the leaf, built inside a context.
Tensor gradient_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& leaf,
                   const Tensor& weights) {
  leaf.watch();
  kiln::GradientContext ctx;
  return kiln::gradient(kiln::sum(f(leaf) * weights), leaf);
}

// [2, 3, 4, 4] matrices of x with 6 I added: diagonally dominant for x's values in [-2, 2].
Tensor well_conditioned(const Tensor& x) {
  return flat_part(x, {2, 3, 4, 4}) + kiln::eye(4, 4, x.dtype()) * 6;
}
// [2, 3, 4, 4] symmetric positive definite matrices M M^T / 4 + I, M from x.
Tensor positive_definite(const Tensor& x) {
  const Tensor m = kiln::slice_axis(x, 3, 0, 4);
  const Tensor square = kiln::matmul(m, kiln::transpose(m, -1, -2));
  // An integer x stays integer (/ would give floats), for the cases of the types rows refuse.
  const Tensor scaled = kiln::is_inexact(x.dtype()) ? square / 4 : kiln::div(square, 4, "trunc");
  return scaled + kiln::eye(4, 4, x.dtype());
}

struct Case {
  std::string_view op;    // the registry row it covers
  bool smooth_only;       // inputs without NaN, infinities and ties (library kernels)
  std::function<Tensor(const Tensor&)> build;
  bool sorts = false;     // it also sorts x, so complex x is refused whatever the row takes
};

// A value of x's type computed from x: |x|, or the conjugate of a complex x (whose |x| is real).
Tensor other_values(const Tensor& x) {
  return kiln::is_complex(x.dtype()) ? kiln::conj(x) : kiln::abs(x);
}

const std::vector<Case>& cases() {
  using kiln::Tensor;
  static const std::vector<Case> all = {
      {"store", false, [](const Tensor& x) { return x; }},
      {"random_uniform", false,
       [](const Tensor& x) { return kiln::uniform({3, 7}, 5, x.dtype()); }},
      {"reshape", false, [](const Tensor& x) { return kiln::reshape(x, {4, 30}); }},
      {"permute", false, [](const Tensor& x) { return kiln::permute(x, {3, 1, 0, 2}); }},
      {"slice", false,
       [](const Tensor& x) { return kiln::slice(x, {0, 1, 0, 4}, {2, 3, 4, 0}, {1, 1, 2, -2}); }},
      {"pad", false, [](const Tensor& x) { return kiln::pad(x, {0, 1, 0, 2}, {1, 0, 2, 0}, 5); }},
      {"broadcast", false, [](const Tensor& x) { return kiln::broadcast_to(x, {2, 2, 3, 4, 5}); }},
      {"windows", false,
       [](const Tensor& x) { return kiln::sliding_window(x, {1, 2, 2, 3}, {1, 1, 2, 1}); }},
      {"where", false,
       [](const Tensor& x) {
         return kiln::where(kiln::greater(kiln::real(x), 0), x, other_values(x));
       }},
      {"sum", false, [](const Tensor& x) { return kiln::sum(x, {1, 2}); }},
      {"sum", false, [](const Tensor& x) { return kiln::sum(x, {0, 3}); }},
      {"prod", false, [](const Tensor& x) { return kiln::prod(x, {2}); }},
      {"min", false, [](const Tensor& x) { return kiln::min(x, {1, 2}); }},
      {"max", false, [](const Tensor& x) { return kiln::max(x, {3}); }},
      {"mean", false, [](const Tensor& x) { return kiln::mean(x, {0, 1}); }},
      {"argmax", false, [](const Tensor& x) { return kiln::argmax(x, 1); }},
      {"argmin", false, [](const Tensor& x) { return kiln::argmin(x, 3); }},
      {"matmul", true,
       [](const Tensor& x) {
         return kiln::matmul(kiln::reshape(x, {2, 12, 5}), kiln::reshape(x, {2, 5, 12}));
       }},
      {"concat", false,
       [](const Tensor& x) {
         return kiln::concat({x, kiln::slice(x, {0, 0, 1, 0}, {2, 3, 3, 5})}, 2);
       }},
      {"contiguous", false,
       [](const Tensor& x) { return kiln::contiguous(kiln::permute(x, {2, 0, 3, 1})); }},
      {"gather", false,
       [](const Tensor& x) { return kiln::gather(x, 1, indices_for({2, 2, 4, 5}, 3)); }},
      {"scatter_add", false,
       [](const Tensor& x) {
         return kiln::scatter_add(x, 1, indices_for({2, 2, 4, 5}, 3),
                                  flat_part(other_values(x), {2, 2, 4, 5}));
       }},
      {"unwindow", false,
       [](const Tensor& x) {
         return kiln::unslide_window(kiln::sliding_window(x, {1, 2, 2, 3}, {1, 1, 2, 1}),
                                     x.shape(), {1, 1, 2, 1});
       }},
      {"custom_map", false,
       [](const Tensor& x) {
         return kiln::map_elements(
             x, [](double v) { return v * v - 1; }, [](double v) { return 2 * v; });
       }},
      {"custom_reduce", false,
       [](const Tensor& x) {
         return kiln::reduce_rows(x, 2, [](std::span<const double> row, std::span<double> out) {
           out[0] = row[0] - row[row.size() - 1];
           out[1] = row[1] * 2;
         });
       }},
      {"conv2d", true,
       [](const Tensor& x) {
         return kiln::conv2d(x, smooth_values(x.dtype(), {2, 3, 2, 2}, 9), Tensor(),
                             {.stride = {1, 1}, .padding = {1, 0}, .dilation = {1, 1}});
       }},
      {"conv2d_grad_input", true,
       [](const Tensor& x) {  // linear in x through the output gradient
         const Tensor w = smooth_values(x.dtype(), {2, 3, 2, 2}, 9);
         return gradient_of([&](const Tensor& a) { return kiln::conv2d(a, w); },
                            smooth_values(x.dtype(), {2, 3, 4, 5}, 11), flat_part(x, {2, 2, 3, 4}));
       }},
      {"conv2d_grad_weight", true,
       [](const Tensor& x) {  // linear in x, the convolution's input
         const Tensor u = smooth_values(x.dtype(), {2, 2, 3, 4}, 13);
         return gradient_of([&](const Tensor& w) { return kiln::conv2d(x, w); },
                            smooth_values(x.dtype(), {2, 3, 2, 2}, 9), u);
       }},
      {"max_pool2d", false, [](const Tensor& x) { return kiln::max_pool2d(x, {2, 2}); }},
      {"max_pool2d_grad", true,
       [](const Tensor& x) {  // linear in x through the pooled gradient
         return gradient_of([](const Tensor& a) { return kiln::max_pool2d(a, {2, 2}); },
                            smooth_values(x.dtype(), {2, 3, 4, 5}, 17), flat_part(x, {2, 3, 2, 2}));
       }},
      {"softmax", false, [](const Tensor& x) { return kiln::softmax(x, -1); }},
      {"softmax", false, [](const Tensor& x) { return kiln::softmax(x, 1); }},
      {"log_softmax", false, [](const Tensor& x) { return kiln::log_softmax(x, 2); }},
      {"cumsum", false, [](const Tensor& x) { return kiln::cumsum(x, 1); }},
      {"cumsum", false, [](const Tensor& x) { return kiln::cumsum(x, -1); }},
      {"cumprod", false, [](const Tensor& x) { return kiln::cumprod(x, 2); }},
      {"cumprod", false, [](const Tensor& x) { return kiln::cumprod(kiln::permute(x, {3, 1, 0, 2}), 0); }},
      {"argsort", false, [](const Tensor& x) { return kiln::argsort(x, 1); }},
      {"argsort", false, [](const Tensor& x) { return kiln::argsort(x, -1, true); }},
      {"argsort", false,
       [](const Tensor& x) { return kiln::argsort(kiln::permute(x, {0, 3, 2, 1}), 2, true); }},
      // sort and topk are argsort and gather: gradient-checked as gather's cases.
      {"gather", false, [](const Tensor& x) { return kiln::sort(x, 2).values; }, true},
      {"gather", false, [](const Tensor& x) { return kiln::topk(x, 3, -1).values; }, true},
      {"gather", false, [](const Tensor& x) { return kiln::topk(x, 2, 0, false).values; }, true},
      // The linalg rows on well-conditioned matrices built from x (4 x 4 blocks plus a multiple
      // of I, symmetric positive definite ones for cholesky and eigh); the decompositions are
      // read through functions that do not depend on the signs LAPACK chose for the vectors.
      {"solve", true,
       [](const Tensor& x) { return kiln::solve(well_conditioned(x), flat_part(x, {2, 3, 4, 2})); }},
      {"det", true, [](const Tensor& x) { return kiln::det(well_conditioned(x)); }},
      {"cholesky", true, [](const Tensor& x) { return kiln::cholesky(positive_definite(x)); }},
      {"qr", true,
       [](const Tensor& x) {  // Q R and the projector Q Q^T of a tall [2, 3, 5, 4]
         const kiln::QR f = kiln::qr(kiln::transpose(x, -1, -2));
         return kiln::concat({kiln::matmul(f.q, f.r),
                              kiln::slice_axis(kiln::matmul(f.q, kiln::transpose(f.q, -1, -2)),
                                               3, 0, 4)}, 3);
       }},
      {"svd", true,
       [](const Tensor& x) {  // U diag(S) Vh, S, and U U^T of a wide [2, 3, 4, 5]
         const kiln::SVD f = kiln::svd(x);
         const Tensor usv = kiln::matmul(f.u * kiln::unsqueeze(f.s, -2), f.vh);
         return kiln::concat({usv, kiln::unsqueeze(f.s, -1),
                              kiln::matmul(f.u, kiln::transpose(f.u, -1, -2))}, 3);
       }},
      {"eigh", true,
       [](const Tensor& x) {  // w and V diag(w^2) V^T
         const kiln::Eigh f = kiln::eigh(positive_definite(x));
         const Tensor& v = f.eigenvectors;
         const Tensor w2 = kiln::unsqueeze(f.eigenvalues * f.eigenvalues, -2);
         return kiln::concat({kiln::unsqueeze(f.eigenvalues, -1),
                              kiln::matmul(v * w2, kiln::transpose(v, -1, -2))}, 3);
       }},
      // The transform along two dimensions, forward and inverse, read through its parts.
      {"fft", true,
       [](const Tensor& x) {
         return kiln::concat({kiln::real(kiln::fft(x, std::nullopt, 2)),
                              kiln::imag(kiln::ifft(x, std::nullopt, 1))},
                             0);
       }},
      {"lstsq", true,
       [](const Tensor& x) {  // a tall [2, 3, 5, 4] A
         return kiln::lstsq(kiln::transpose(x, -1, -2), flat_part(x * 0.5, {2, 3, 5, 2}));
       }},
  };
  return all;
}

Op op_named(std::string_view name) {
  for (std::size_t i = 0; i < kiln::detail::kOpCount; ++i)
    if (kiln::detail::op_info(static_cast<Op>(i)).name == name) return static_cast<Op>(i);
  throw std::logic_error("no op " + std::string(name));
}

}  // namespace other

TEST(RegistryOps, EveryRowHasACase) {
  std::vector<std::string_view> seen;
  for (const other::Case& c : other::cases()) {
    const Tensor x = other::smooth_values(DType::f64, other::kShape);
    for (const Tensor& t : kiln::topological_order(c.build(x))) seen.push_back(t.op_name());
  }
  for (std::size_t i = 0; i < kiln::detail::kOpCount; ++i) {
    const auto& info = kiln::detail::op_info(static_cast<Op>(i));
    if (info.kind == OpKind::unary || info.kind == OpKind::binary) continue;  // the rows above
    EXPECT_NE(std::find(seen.begin(), seen.end(), info.name), seen.end())
        << info.name << " has no case in tests/test_registry_ops.cpp";
  }
}

TEST(RegistryOps, OtherRowsAgreeWithTheReferenceOnEveryExecutor) {
  int compared = 0;
  for (const other::Case& c : other::cases()) {
    const Op op = other::op_named(c.op);
    for (DType t : kAllTypes) {
      const std::string what = std::string(c.op) + " case (" + type_name(t) + ")";
      if (!kiln::detail::accepts(op, t) || (c.sorts && kiln::is_complex(t))) {
        EXPECT_EQ(kiln_test::code_of([&] { (void)c.build(other::smooth_values(t, other::kShape)); }),
                  kiln::ErrorCode::wrong_type)
            << what << ": the registry refuses " << type_name(t);
        continue;
      }
      compared += compare_executors(what + ", smooth values", [&] {
        return c.build(other::smooth_values(t, other::kShape));
      });
      if (!c.smooth_only)
        compared += compare_executors(what + ", edge values", [&] {
          return c.build(other::moderate_values(t, other::kShape));
        });
    }
  }
  EXPECT_GT(compared, 0);
}

// Directional central differences in f64: d/de sum(f(x + e v) * w) against <gradient, v>.
TEST(RegistryOps, EveryDifferentiableOtherRowMatchesCentralDifferences) {
  for (const other::Case& c : other::cases()) {
    const Op op = other::op_named(c.op);
    const auto& info = kiln::detail::op_info(op);
    if (info.gradient != kiln::detail::Gradient::rule || op == Op::store) continue;
    const Tensor x0 = other::smooth_values(DType::f64, other::kShape, 21);
    const Tensor v = other::smooth_values(DType::f64, other::kShape, 22);
    const Shape out_shape = c.build(x0).shape();
    const Tensor w = other::smooth_values(DType::f64, out_shape, 23);
    auto y = [&](double e) {
      return kiln::sum(c.build(x0 + v * e) * w).item<double>();
    };
    const Tensor x = Tensor::from(x0.to_vector<double>(), other::kShape).watch();
    Tensor g;
    {
      kiln::GradientContext ctx;
      g = kiln::gradient(kiln::sum(c.build(x) * w), x);
    }
    const double analytic = kiln::sum(g * v).item<double>();
    constexpr double h = 1e-6;
    const double numeric = (y(h) - y(-h)) / (2 * h);
    EXPECT_NEAR(analytic, numeric, 1e-5 * (1 + std::abs(numeric))) << c.op << " case";
  }
}

}  // namespace
