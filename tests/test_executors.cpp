// Differential tests of the executors. The reference executor (plain per-op code) is the oracle;
// the CPU executor (fused elementwise chains, producers fused into reductions, SLEEF loops,
// oneDNN/OpenBLAS matmul, threads) must compute the same values:
// - 300 random graphs (elementwise ops, views, broadcasting, reductions, matmul, concat over all
//   four dtypes) are built twice from the same seed and evaluated once with each executor
//   (KILN_RANDOM_GRAPHS and KILN_RANDOM_SEED set another count and seed for a longer sweep);
// - the gradients of 300 random float graphs with respect to all their leaves;
// - float matmul operands of many layouts (strided operands go to BLAS without a copy), and
//   regression tests for the bugs the random graphs found;
// - multi-consumer nodes, eval_all, reuse of evaluated intermediates, thread counts;
// - a graph built by `x = x + y` a million times.
// Each test restores the executor and thread count it found (ExecutorGuard).
//
// Tolerance. Integer results must be bit-identical. Float results may differ slightly: the CPU
// executor uses SLEEF for transcendental functions where the reference uses libm (both within
// about 1 ulp), oneDNN/OpenBLAS for float matmul, and float reductions may sum in a different
// order (the CPU executor sums f32 rows in f32 lanes and splits long rows over threads; the
// reference accumulates each output in one double). A float element passes when
//     |cpu - ref| <= rtol * (|ref| + scale),   rtol = 1e-5 for f32, 1e-12 for f64,
// where `scale` is the largest magnitude of any value in the graph (computed with the reference
// executor), so that rounding differences in large intermediates that later cancel are allowed
// for; an f64 result that depends on an inexactly computed f32 value gets f32's rtol. NaN must
// meet NaN.
// To keep the random graphs well conditioned the generator keeps values bounded (clamps after
// products and powers, exp of clamped values, log/sqrt of abs()+1, pow of positive bases,
// divisors away from 0). Ops that are discontinuous in their operands (comparisons, where's
// condition, float to integer conversion, argmax/argmin) only get operands that both executors
// compute bit-identically: integers, and floats computed only with correctly rounded ops
// (+ - * / sqrt, min, max, abs, neg, relu, min/max reductions, views, concat, conversions).
// Results built only from such ops ("exact" graphs) must also match bit for bit.
//
// On a mismatch the failure message shows the graph (kiln::graph_to_string) and its seed.
#include <gtest/gtest.h>

#include "exec/fusion.hpp"
#include "registry_rows.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Scalar;
using kiln::Shape;
using kiln::Tensor;
using I64s = std::vector<std::int64_t>;
using kiln::detail::OpKind;
using kiln::detail::TypeRule;
using kiln::detail::VectorLoop;

constexpr DType kDTypes[] = {DType::i32, DType::i64, DType::f32, DType::f64};

std::int64_t count_of(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// The elements `s` would hold with its empty dimensions of size 1: what an operand derived from
// an empty tensor (its source through a view, a broadcast batch) may hold.
std::int64_t extent_of(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= std::max<std::int64_t>(d, 1);
  return n;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << "]";
  return os.str();
}

// `v` as a scalar of type t (so that it does not promote a tensor of type t).
Scalar typed(double v, DType t) {
  switch (t) {
    case DType::i32: return Scalar(static_cast<std::int32_t>(v));
    case DType::i64: return Scalar(static_cast<std::int64_t>(v));
    case DType::f32: return Scalar(static_cast<float>(v));
    case DType::f64: return Scalar(v);
    case DType::f16:
    case DType::bf16:
    case DType::boolean: return Scalar(v).cast(t);
  }
  return Scalar(v);
}

Tensor clamp(const Tensor& t, double lo, double hi) {
  return kiln::minimum(kiln::maximum(t, typed(lo, t.dtype())), typed(hi, t.dtype()));
}
Tensor clamp(const Tensor& t, double bound) { return clamp(t, -bound, bound); }

// Restores the executor and the thread count a test found.
class ExecutorGuard {
 public:
  ExecutorGuard() : executor_(kiln::current_executor()), threads_(kiln::num_threads()) {}
  ~ExecutorGuard() {
    kiln::set_executor(executor_);
    if (kiln::num_threads() != threads_) kiln::set_num_threads(threads_);
  }
  ExecutorGuard(const ExecutorGuard&) = delete;
  ExecutorGuard& operator=(const ExecutorGuard&) = delete;

 private:
  std::shared_ptr<kiln::Executor> executor_;
  int threads_;
};

// The two executors, named.
std::vector<std::pair<const char*, std::shared_ptr<kiln::Executor>>> executors() {
  return {{"reference", kiln::reference_executor()}, {"cpu", kiln::cpu_executor()}};
}

// ---------------------------------------------------------------------------------------------
// Reading and comparing results
// ---------------------------------------------------------------------------------------------

struct Values {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::int64_t> ints;  // integer dtypes
  std::vector<double> floats;      // float dtypes (f32 converts to double exactly)
};

Values read(const Tensor& t) {
  Values v{t.dtype(), t.shape(), {}, {}};
  if (kiln::is_integer(t.dtype()))
    v.ints = t.to_vector<std::int64_t>();
  else
    v.floats = t.to_vector<double>();
  return v;
}

// The largest finite magnitude among `values`.
double magnitude(const Values& v) {
  double m = 0;
  for (auto x : v.ints) m = std::max(m, std::abs(static_cast<double>(x)));
  for (auto x : v.floats)
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  return m;
}

double rtol_of(DType t) { return t == DType::f32 ? 1e-5 : 1e-12; }

// Whether the graph of `nodes` computes an f32 value with rounding differences (a function, a
// power, a float reduction or matmul in f32): f64 results that depend on one carry f32's error.
// Asked before evaluating: an evaluated node becomes a leaf and no longer names its op.
bool has_inexact_f32(const std::vector<Tensor>& nodes) {
  static const std::string_view kInexact[] = {"sum", "prod", "mean", "matmul"};
  for (const Tensor& n : nodes) {
    if (n.dtype() != DType::f32) continue;
    const auto& info = n.node()->info();
    const bool elementwise = info.kind == OpKind::unary || info.kind == OpKind::binary;
    if ((elementwise && info.vector != VectorLoop::plain && info.vector != VectorLoop::scalar) ||
        std::find(std::begin(kInexact), std::end(kInexact), n.op_name()) != std::end(kInexact))
      return true;
  }
  return false;
}

// The tolerance for a result of type `result` (see has_inexact_f32).
double rtol_for(DType result, bool inexact_f32) {
  return inexact_f32 ? rtol_of(DType::f32) : rtol_of(result);
}

// Empty when `got` matches `ref` (see the tolerance at the top of the file); otherwise a
// description of the first mismatches. `exact`: float values must match bit for bit as well.
std::string compare(const Values& ref, const Values& got, bool exact, double scale, double rtol,
                    const char* ref_name = "reference", const char* got_name = "cpu") {
  std::ostringstream os;
  if (ref.dtype != got.dtype || ref.shape != got.shape) {
    os << "type/shape differ: " << ref_name << " " << kiln::dtype_name(ref.dtype)
       << shape_str(ref.shape) << ", " << got_name << " " << kiln::dtype_name(got.dtype)
       << shape_str(got.shape);
    return os.str();
  }
  int bad = 0;
  if (kiln::is_integer(ref.dtype)) {
    for (std::size_t i = 0; i < ref.ints.size(); ++i)
      if (ref.ints[i] != got.ints[i] && bad++ < 8)
        os << "  [" << i << "] " << ref_name << " " << ref.ints[i] << ", " << got_name << " "
           << got.ints[i] << "\n";
  } else {
    if (exact) rtol = 0;
    for (std::size_t i = 0; i < ref.floats.size(); ++i) {
      const double r = ref.floats[i], g = got.floats[i];
      bool ok;
      if (std::isnan(r) || std::isnan(g))
        ok = std::isnan(r) && std::isnan(g);
      else if (std::isinf(r) || std::isinf(g))
        ok = r == g;
      else
        ok = r == g || std::abs(r - g) <= rtol * (std::abs(r) + scale);
      if (!ok && bad++ < 8) {
        os.precision(17);
        os << "  [" << i << "] " << ref_name << " " << r << ", " << got_name << " " << g
           << " (diff " << std::abs(r - g) << ")\n";
      }
    }
  }
  if (bad == 0) return {};
  std::ostringstream head;
  head << bad << " of " << count_of(ref.shape) << " elements differ ("
       << kiln::dtype_name(ref.dtype) << shape_str(ref.shape) << (exact ? ", exact" : "")
       << ", scale " << scale << "):\n"
       << os.str();
  return head.str();
}

// ---------------------------------------------------------------------------------------------
// The random graph generator. It works top-down: make(depth, shape, dtype) returns an expression
// of exactly that shape and type, choosing an op and generating its operands with the shapes
// and types the op needs. All choices come from the generator's own std::mt19937 and never from
// computed values, so two generators with the same seed build identical graphs.
// ---------------------------------------------------------------------------------------------

struct Expr {
  Tensor t;
  bool exact;  // both executors compute these values bit-identically
};

// An operand shape that broadcasts to a target shape, and whether to mark it for inverse
// broadcasting.
struct OperandShape {
  Shape shape;
  bool inverse = false;
};

class GraphGen {
 public:
  // `budget`: the most elements of any tensor in the graph; `max_dim`: the largest size of a
  // dimension the generator invents (reduced dimensions, matmul's inner dimension).
  GraphGen(std::uint32_t seed, std::int64_t budget, std::int64_t max_dim)
      : rng_(seed), budget_(budget), max_dim_(max_dim) {}

  // Float leaves made from now on are watched and listed in watched(), for gradients. Their
  // values are never whole numbers: gradients jump at ties and kinks (min, max, abs, relu,
  // clamps), so only values that land on one by chance, never in practice, may meet one.
  void watch_leaves() { watch_leaves_ = true; }
  const std::vector<Tensor>& watched() const { return watched_; }

  Expr make(int depth, const Shape& shape, DType dtype, bool exact) {
    Expr e = build(depth, shape, dtype, exact);
    if (e.t.shape() != shape || e.t.dtype() != dtype || (exact && !e.exact))
      throw std::logic_error("generator bug: wanted " + std::string(kiln::dtype_name(dtype)) +
                             shape_str(shape) + (exact ? " exact" : "") + ", built " +
                             kiln::dtype_name(e.t.dtype()) + shape_str(e.t.shape()) + " by " +
                             std::string(e.t.op_name()));
    pool_.push_back(e);
    return e;
  }

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  DType any_dtype() { return kDTypes[uniform(0, 3)]; }
  // A type that promotes with `t` to `t`.
  DType dtype_upto(DType t) { return chance(0.6) ? t : kDTypes[uniform(0, static_cast<int>(t))]; }

 private:
  Expr build(int depth, const Shape& shape, DType dtype, bool exact) {
    // Reuse an expression built before: nodes with several consumers.
    if (!pool_.empty() && chance(0.12)) {
      std::vector<const Expr*> fits;
      for (const Expr& e : pool_)
        if (e.t.shape() == shape && e.t.dtype() == dtype && (e.exact || !exact)) fits.push_back(&e);
      if (!fits.empty()) return *fits[static_cast<std::size_t>(uniform(0, int(fits.size()) - 1))];
    }
    if (depth <= 0 || extent_of(shape) > budget_) return leaf(shape, dtype);
    // Op families: unary, binary, comparison, where, convert, view, reduction, matmul, concat.
    // Float graphs lean on the float-valued ops (the others often need exact operands).
    static const std::vector<double> kIntWeights{2, 3, 1, 1, 1, 2, 2, 1, 1};
    static const std::vector<double> kFloatWeights{4, 3, 0.5, 1, 1, 2, 2, 1, 1};
    const auto& weights = kiln::is_float(dtype) && !exact ? kFloatWeights : kIntWeights;
    for (int attempt = 0; attempt < 20; ++attempt) {
      std::optional<Expr> e;
      switch (std::discrete_distribution<int>(weights.begin(), weights.end())(rng_)) {
        case 0: e = unary(depth, shape, dtype, exact); break;
        case 1: e = binary(depth, shape, dtype, exact); break;
        case 2: e = comparison(depth, shape, dtype); break;
        case 3: e = where(depth, shape, dtype, exact); break;
        case 4: e = convert(depth, shape, dtype, exact); break;
        case 5: e = view(depth, shape, dtype, exact); break;
        case 6: e = reduction(depth, shape, dtype, exact); break;
        case 7: e = matmul(depth, shape, dtype, exact); break;
        default: e = concat(depth, shape, dtype, exact); break;
      }
      if (e) return *e;
    }
    return leaf(shape, dtype);
  }

  Expr leaf(const Shape& shape, DType dtype) {
    const auto n = static_cast<std::size_t>(count_of(shape));
    // Floats in [-2, 2], with some small integers among them (ties for argmax, exact zeros).
    auto real = [&] {
      if (!watch_leaves_ && chance(0.1)) return static_cast<double>(uniform(-2, 2));
      return std::uniform_real_distribution<double>(-2, 2)(rng_);
    };
    switch (dtype) {
      case DType::f32: {
        std::vector<float> v(n);
        for (auto& x : v) x = static_cast<float>(real());
        return {watched_if_asked(Tensor::from(v, shape)), true};
      }
      case DType::f64: {
        std::vector<double> v(n);
        for (auto& x : v) x = real();
        return {watched_if_asked(Tensor::from(v, shape)), true};
      }
      case DType::i32: {
        std::vector<std::int32_t> v(n);
        for (auto& x : v) x = uniform(-6, 6);
        return {Tensor::from(v, shape), true};
      }
      case DType::i64: {
        std::vector<std::int64_t> v(n);
        for (auto& x : v) x = uniform(-6, 6);
        return {Tensor::from(v, shape), true};
      }
      case DType::boolean: {
        std::vector<bool> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = chance(0.5);
        return {Tensor::from(v, shape), true};
      }
      case DType::f16:
      case DType::bf16: {
        std::vector<float> v(n);
        for (auto& x : v) x = static_cast<float>(real());
        return {watched_if_asked(kiln::convert(Tensor::from(v, shape), dtype).eval()), true};
      }
    }
    throw std::logic_error("dtype");
  }

  // A dimension size in [1, min(max_dim_, limit)].
  std::int64_t dim_upto(std::int64_t limit) {
    const std::int64_t hi = std::max<std::int64_t>(1, std::min(max_dim_, limit));
    return std::uniform_int_distribution<std::int64_t>(1, hi)(rng_);
  }

  // A random shape with `count` elements (count > 0).
  Shape factorization(std::int64_t count) {
    std::vector<std::int64_t> primes;
    for (std::int64_t p = 2; p * p <= count; ++p)
      while (count % p == 0) {
        primes.push_back(p);
        count /= p;
      }
    if (count > 1) primes.push_back(count);
    const int rank = uniform(primes.empty() ? 0 : 1, 4);
    Shape s(static_cast<std::size_t>(rank), 1);
    for (auto p : primes) s[static_cast<std::size_t>(uniform(0, rank - 1))] *= p;
    return s;
  }

  // Operand shapes for a binary op with result `shape`: the same shape, a normally broadcast
  // one (a suffix with some dimensions 1), an inversely broadcast one (a prefix), or two shapes
  // that broadcast each other.
  std::pair<OperandShape, OperandShape> broadcast_pair(const Shape& shape) {
    const int rank = static_cast<int>(shape.size());
    OperandShape full{shape, false}, other{shape, false};
    switch (uniform(0, 4)) {
      case 0: break;
      case 1:
      case 2: {  // normal: a suffix, some dimensions 1
        const int len = uniform(0, rank);
        other.shape.assign(shape.end() - len, shape.end());
        for (auto& d : other.shape)
          if (chance(0.3)) d = 1;
        break;
      }
      case 3: {  // inverse: a prefix, some dimensions 1
        if (rank == 0) break;
        const int len = uniform(1, rank);
        other.shape.assign(shape.begin(), shape.begin() + len);
        for (auto& d : other.shape)
          if (chance(0.3)) d = 1;
        // The C++ API aligns at the left only a marked operand.
        other.inverse = true;
        break;
      }
      default: {  // each operand has 1 where the other has the full size
        for (int i = 0; i < rank; ++i) {
          if (chance(0.3))
            full.shape[i] = 1;
          else if (chance(0.4))
            other.shape[i] = 1;
        }
        break;
      }
    }
    if (chance(0.5)) std::swap(full, other);
    return {full, other};
  }

  static Tensor marked(const Tensor& t, const OperandShape& s) {
    return s.inverse ? t.inverse_broadcast() : t;
  }

  // A unary row of the op registry that keeps the value's type (or gives a float type): any
  // row, not a chosen few. Integer rows get operands in [-100, 100]; float rows get bounded
  // operands, sometimes moved into [1.1, 5] (the domain of every function kiln has), and their
  // results are clamped, so that a pole or an overflow does not flood the graph.
  std::optional<Expr> unary(int depth, const Shape& shape, DType dtype, bool exact) {
    const int d = depth - 1;
    std::vector<const kiln_test::Row*> rows;
    for (const kiln_test::Row& r : kiln_test::elementwise_rows()) {
      const auto& info = r.info();
      if (!r.unary || !kiln::detail::accepts(r.op, dtype)) continue;
      if (info.type_rule != TypeRule::same && info.type_rule != TypeRule::float_valued) continue;
      if (kiln::is_integer(dtype) && info.type_rule != TypeRule::same) continue;
      if (exact && info.vector != VectorLoop::plain) continue;
      rows.push_back(&r);
    }
    if (rows.empty()) return std::nullopt;
    const kiln_test::Row& row = *rows[static_cast<std::size_t>(uniform(0, int(rows.size()) - 1))];
    const bool correctly_rounded = row.info().vector == VectorLoop::plain;
    if (kiln::is_integer(dtype)) {
      const Expr x = make(d, shape, dtype, exact);
      return Expr{row.unary(clamp(x.t, 100)), x.exact};
    }
    // Float-valued functions of integer tensors give the default float type (C++'s rule).
    DType from = dtype;
    if (row.info().type_rule == TypeRule::float_valued && dtype == kiln::default_dtype() &&
        chance(0.25))
      from = chance(0.5) ? DType::i32 : DType::i64;
    const Expr x = make(d, shape, from, exact);
    Tensor operand = chance(0.5) ? clamp(x.t, 3) : kiln::abs(clamp(x.t, 3)) + typed(1.1, from);
    if (kiln::is_integer(from)) operand = clamp(x.t, 5);
    const Tensor y = row.unary(operand);
    return Expr{correctly_rounded && y.dtype() == dtype ? y : clamp(y, 50),
                x.exact && correctly_rounded};
  }

  std::optional<Expr> binary(int depth, const Shape& shape, DType dtype, bool exact) {
    const int d = depth - 1;
    const bool flt = kiln::is_float(dtype);
    const int op = uniform(0, exact && flt ? 5 : 6);  // float pow is not exact
    DType da = dtype, db = dtype_upto(dtype);
    if (chance(0.5)) std::swap(da, db);
    const auto [sa, sb] = broadcast_pair(shape);
    const Expr a = make(d, sa.shape, da, exact);
    const Expr b = make(uniform(0, d), sb.shape, db, exact);
    const Tensor x = marked(a.t, sa), y = marked(b.t, sb);
    const bool ex = a.exact && b.exact;
    switch (op) {
      case 0: return Expr{x + y, ex};
      case 1: return Expr{x - y, ex};
      case 2: return Expr{clamp(x * y, flt ? 50 : 1000), ex};
      case 3: {
        if (!flt) return Expr{kiln::div(x, y, "trunc"), ex};  // a division by 0 gives 0
        // Divisors at least 0.5 (or 1 for integer divisors) away from 0.
        const Tensor den = kiln::abs(b.t) + typed(kiln::is_float(db) ? 0.5 : 1, db);
        return Expr{x / marked(den, sb), ex};
      }
      case 4: return Expr{kiln::minimum(x, y), ex};
      case 5: return Expr{kiln::maximum(x, y), ex};
      default: {
        if (!flt)
          return Expr{kiln::pow(marked(clamp(a.t, 3), sa), marked(clamp(b.t, -1, 5), sb)), ex};
        // A positive base, a moderate exponent.
        const Tensor base = clamp(kiln::abs(a.t) + typed(kiln::is_float(da) ? 0.5 : 1, da), 20);
        const Tensor exponent = clamp(b.t, 2);
        return Expr{clamp(kiln::pow(marked(base, sa), marked(exponent, sb)), 50), false};
      }
    }
  }

  // Comparisons give bool masks, counted as i32 here; compare() gives any type. Their operands
  // must be exact.
  std::optional<Expr> comparison(int depth, const Shape& shape, DType dtype) {
    const int d = depth - 1;
    const auto [sa, sb] = broadcast_pair(shape);
    const Expr a = make(d, sa.shape, any_dtype(), true);
    const Expr b = make(uniform(0, d), sb.shape, any_dtype(), true);
    const Tensor x = marked(a.t, sa), y = marked(b.t, sb);
    const int op = uniform(0, 5);
    if (dtype != DType::i32) {
      const auto which = static_cast<kiln::Comparison>(op);
      return Expr{
          kiln::compare(x, y, which, typed(uniform(-3, 3), dtype), typed(uniform(-3, 3), dtype)),
          true};
    }
    // A bool mask, sometimes combined with a second one (bool arithmetic inside the kernel),
    // then counted as i32.
    auto compared = [&](const Tensor& p, const Tensor& q, int which) {
      switch (which) {
        case 0: return kiln::less(p, q);
        case 1: return kiln::greater(p, q);
        case 2: return kiln::equal(p, q);
        case 3: return kiln::less_equal(p, q);
        case 4: return kiln::greater_equal(p, q);
        default: return kiln::not_equal(p, q);
      }
    };
    Tensor mask = compared(x, y, op);
    switch (uniform(0, 3)) {
      case 0: mask = mask & compared(x, y, uniform(0, 5)); break;
      case 1: mask = mask | compared(x, y, uniform(0, 5)); break;
      case 2: mask = !mask; break;
      default: break;
    }
    return Expr{kiln::convert(mask, DType::i32), true};
  }

  std::optional<Expr> where(int depth, const Shape& shape, DType dtype, bool exact) {
    const int d = depth - 1;
    // The condition broadcasts normally to the values' shape.
    Shape cs = shape;
    cs.erase(cs.begin(), cs.begin() + uniform(0, static_cast<int>(shape.size())));
    for (auto& s : cs)
      if (chance(0.2)) s = 1;
    const Expr c = make(uniform(0, d), cs, any_dtype(), true);
    DType da = dtype, db = dtype_upto(dtype);
    if (chance(0.5)) std::swap(da, db);
    const auto [sa, sb] = broadcast_pair(shape);
    const Expr a = make(d, sa.shape, da, exact);
    const Expr b = make(uniform(0, d), sb.shape, db, exact);
    return Expr{kiln::where(c.t, marked(a.t, sa), marked(b.t, sb)), a.exact && b.exact};
  }

  std::optional<Expr> convert(int depth, const Shape& shape, DType dtype, bool exact) {
    DType from = any_dtype();
    if (from == dtype) return std::nullopt;
    // Float to integer truncates: a discontinuity, so the operand must be exact.
    const bool need = exact || (kiln::is_float(from) && kiln::is_integer(dtype));
    const Expr x = make(depth - 1, shape, from, need);
    return Expr{chance(0.5) ? kiln::convert(x.t, dtype) : x.t.convert(dtype), x.exact};
  }

  std::optional<Expr> view(int depth, const Shape& shape, DType dtype, bool exact) {
    const int d = depth - 1;
    const int rank = static_cast<int>(shape.size());
    const std::int64_t count = count_of(shape);
    bool any_zero = false;
    for (auto s : shape) any_zero |= s == 0;
    auto operand = [&](const Shape& s) { return make(d, s, dtype, exact); };
    switch (uniform(0, 10)) {
      case 0: {  // reshape (one size may be inferred)
        if (count == 0) return std::nullopt;
        const Expr x = operand(factorization(count));
        Shape target = shape;
        if (rank > 0 && chance(0.3)) target[static_cast<std::size_t>(uniform(0, rank - 1))] = -1;
        return Expr{kiln::reshape(x.t, target), x.exact};
      }
      case 1: {  // permute
        if (rank < 2) return std::nullopt;
        std::vector<int> perm(static_cast<std::size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        Shape src(static_cast<std::size_t>(rank));
        for (int i = 0; i < rank; ++i) src[perm[i]] = shape[i];
        const Expr x = operand(src);
        return Expr{kiln::permute(x.t, perm), x.exact};
      }
      case 2: {  // transpose of two axes, or of all
        if (rank < 2) return std::nullopt;
        if (chance(0.4)) {
          const Expr x = operand(Shape(shape.rbegin(), shape.rend()));
          return Expr{kiln::reverse_dims(x.t), x.exact};
        }
        const int i = uniform(0, rank - 1), j = uniform(0, rank - 1);
        Shape src = shape;
        std::swap(src[i], src[j]);
        const Expr x = operand(src);
        return Expr{kiln::transpose(x.t, i - (chance(0.5) ? rank : 0), j), x.exact};
      }
      case 3:
      case 4: {  // slice with steps, negative ones included
        if (rank == 0 || any_zero) return std::nullopt;
        Shape src(static_cast<std::size_t>(rank));
        I64s start(src.size()), stop(src.size()), step(src.size());
        static const std::int64_t kSteps[] = {1, 1, 2, 3, -1, -1, -2, -3};
        for (int i = 0; i < rank; ++i) {
          const std::int64_t c = shape[i], s = kSteps[uniform(0, 7)], a = std::abs(s);
          const std::int64_t lo = uniform(0, 2), hi = uniform(0, 2);
          const std::int64_t span = (c - 1) * a + 1, n = lo + span + hi;
          std::int64_t b, e;
          if (s > 0) {
            b = lo;
            e = std::min(n, b + span + uniform(0, static_cast<int>(a) - 1));
            if (e == n && chance(0.3)) e = n + uniform(1, 5);  // clamped to n
          } else {
            b = n - 1 - hi;
            e = b - span - uniform(0, static_cast<int>(a) - 1);
            if (e < 0) e = -n - 1 - uniform(0, 3);  // clamped: walks down to index 0
          }
          if (chance(0.3)) b -= n;  // counted from the end
          src[i] = n;
          start[i] = b;
          stop[i] = e;
          step[i] = s;
        }
        const Expr x = operand(src);
        return Expr{kiln::slice(x.t, start, stop, step), x.exact};
      }
      case 5: {  // pad
        if (rank == 0 || any_zero) return std::nullopt;
        Shape src = shape;
        I64s before(src.size()), after(src.size());
        for (int i = 0; i < rank; ++i) {
          before[i] = uniform(0, static_cast<int>(std::min<std::int64_t>(2, shape[i] - 1)));
          after[i] =
              uniform(0, static_cast<int>(std::min<std::int64_t>(2, shape[i] - 1 - before[i])));
          src[i] = shape[i] - before[i] - after[i];
        }
        static const double kFill[] = {0, 1, -1.5, 2.25};
        const Expr x = operand(src);
        return Expr{kiln::pad(x.t, before, after, typed(kFill[uniform(0, 3)], dtype)), x.exact};
      }
      case 6: {  // broadcast_to, normal: from a suffix
        Shape src(shape.end() - uniform(0, rank), shape.end());
        for (auto& s : src)
          if (chance(0.4)) s = 1;
        const Expr x = operand(src);
        return Expr{kiln::broadcast_to(x.t, shape, false), x.exact};
      }
      case 7: {  // broadcast_to, inverse: from a prefix
        Shape src(shape.begin(), shape.begin() + uniform(0, rank));
        for (auto& s : src)
          if (chance(0.4)) s = 1;
        const Expr x = operand(src);
        return Expr{kiln::broadcast_to(x.t, shape, true), x.exact};
      }
      case 8: {  // expand: a new dimension by repetition
        if (rank == 0) return std::nullopt;
        const int axis = uniform(0, rank - 1);
        Shape src = shape;
        src.erase(src.begin() + axis);
        const Expr x = operand(src);
        return Expr{kiln::unsqueeze_expand(x.t, axis, shape[axis]), x.exact};
      }
      case 9: {  // unsqueeze or squeeze
        if (chance(0.5)) {
          Shape src = shape;
          const int axis = uniform(0, rank);
          src.insert(src.begin() + axis, 1);
          const Expr x = operand(src);
          return Expr{kiln::squeeze(x.t, axis), x.exact};
        }
        std::vector<int> ones;
        for (int i = 0; i < rank; ++i)
          if (shape[i] == 1) ones.push_back(i);
        if (ones.empty()) return std::nullopt;
        const int axis = ones[static_cast<std::size_t>(uniform(0, int(ones.size()) - 1))];
        Shape src = shape;
        src.erase(src.begin() + axis);
        const Expr x = operand(src);
        return Expr{kiln::unsqueeze(x.t, chance(0.5) ? axis : axis - rank), x.exact};
      }
      default: {  // materialised
        const Expr x = operand(shape);
        return Expr{kiln::contiguous(x.t), x.exact};
      }
    }
  }

  std::optional<Expr> reduction(int depth, const Shape& shape, DType dtype, bool exact) {
    enum { kSum, kProd, kMin, kMax, kMean, kArgmax, kArgmin };
    const int op = uniform(0, 6);
    const bool arg = op == kArgmax || op == kArgmin;
    if (arg && dtype != DType::i64) return std::nullopt;
    if (op == kMean && kiln::is_integer(dtype)) return std::nullopt;
    if (exact && kiln::is_float(dtype) && (op == kSum || op == kProd || op == kMean))
      return std::nullopt;
    DType in = dtype;
    if (op == kMean && dtype == kiln::default_dtype() && chance(0.3))
      in = chance(0.5) ? DType::i32 : DType::i64;
    if (arg) in = any_dtype();
    const int rank = static_cast<int>(shape.size());
    // How many elements the reduced dimensions may hold together. Products of at most 16
    // values in [-1.25, 1.25] stay moderate.
    std::int64_t room = budget_ / extent_of(shape);
    if (op == kProd) room = std::min<std::int64_t>(room, 16);
    if (room < 1) return std::nullopt;
    auto grow = [&] {
      const std::int64_t s = dim_upto(room);
      room /= s;
      return s;
    };

    Shape src;
    std::vector<int> axes;
    bool keepdims = false, all = false;
    std::vector<int> ones;
    for (int i = 0; i < rank; ++i)
      if (shape[i] == 1) ones.push_back(i);
    if (rank == 0 && chance(0.5)) {  // everything reduced
      all = true;
      const int r = uniform(1, 3);
      for (int i = 0; i < r; ++i) src.push_back(grow());
    } else if (!ones.empty() && chance(0.3)) {  // keepdims: reduced dimensions stay as 1
      keepdims = true;
      src = shape;
      for (int i : ones)
        if (axes.empty() || (!arg && chance(0.5))) {
          axes.push_back(i);
          src[i] = grow();
        }
    } else {  // new dimensions inserted and reduced away
      const int k = arg ? 1 : uniform(1, std::max(1, std::min(3, 5 - rank)));
      const int src_rank = rank + k;
      std::vector<int> positions(static_cast<std::size_t>(src_rank));
      std::iota(positions.begin(), positions.end(), 0);
      std::shuffle(positions.begin(), positions.end(), rng_);
      axes.assign(positions.begin(), positions.begin() + k);
      std::sort(axes.begin(), axes.end());
      for (int i = 0, kept = 0; i < src_rank; ++i)
        src.push_back(std::find(axes.begin(), axes.end(), i) != axes.end() ? grow()
                                                                           : shape[kept++]);
    }
    const int src_rank = static_cast<int>(src.size());
    for (auto& a : axes)
      if (chance(0.3)) a -= src_rank;  // negative axes
    if (axes.size() > 1 && chance(0.3)) std::shuffle(axes.begin(), axes.end(), rng_);

    const Expr x = make(depth - 1, src, in, exact || arg);
    Tensor t = x.t;
    if (op == kProd) t = clamp(t, kiln::is_float(in) ? 1.25 : 2);
    if (arg) {
      if (all) return Expr{op == kArgmax ? kiln::argmax(t) : kiln::argmin(t), true};
      return Expr{
          op == kArgmax ? kiln::argmax(t, axes[0], keepdims) : kiln::argmin(t, axes[0], keepdims),
          true};
    }
    const bool int_exact = kiln::is_integer(in) && x.exact;
    switch (op) {
      case kSum:
        return Expr{all && chance(0.5) ? t.sum() : kiln::sum(t, axes, keepdims), int_exact};
      case kProd: return Expr{kiln::prod(t, axes, keepdims), int_exact};
      case kMin: return Expr{all && chance(0.5) ? t.min() : kiln::min(t, axes, keepdims), x.exact};
      case kMax: return Expr{kiln::max(t, axes, keepdims), x.exact};
      default: return Expr{kiln::mean(t, axes, keepdims), false};
    }
  }

  std::optional<Expr> matmul(int depth, const Shape& shape, DType dtype, bool exact) {
    if (exact && kiln::is_float(dtype)) return std::nullopt;
    const int d = depth - 1;
    const int rank = static_cast<int>(shape.size());
    DType da = dtype, db = dtype_upto(dtype);
    if (chance(0.5)) std::swap(da, db);
    // Operands clamped to [-3, 3] keep the products moderate.
    if (rank == 0) {  // dot of two vectors
      const Shape v{dim_upto(budget_)};
      const Expr a = make(d, v, da, exact);
      const Expr b = make(uniform(0, d), v, db, exact);
      return Expr{kiln::dot(clamp(a.t, 3), clamp(b.t, 3)),
                  kiln::is_integer(dtype) && a.exact && b.exact};
    }
    if (rank < 2) return std::nullopt;
    const std::int64_t m = shape[rank - 2], n = shape[rank - 1];
    const Shape batch(shape.begin(), shape.end() - 2);
    // Empty dimensions count as 1: an operand may broadcast them away.
    const std::int64_t k =
        dim_upto(budget_ / (extent_of(batch) * std::max<std::int64_t>({1, m, n})));
    // The batch dimensions of one operand may broadcast.
    Shape ba = batch, bb = batch;
    if (!batch.empty() && chance(0.5)) {
      Shape& b = chance(0.5) ? ba : bb;
      b.erase(b.begin(), b.begin() + uniform(0, static_cast<int>(b.size())));
      for (auto& s : b)
        if (chance(0.3)) s = 1;
    }
    auto with = [](Shape s, std::int64_t r, std::int64_t c) {
      s.push_back(r);
      s.push_back(c);
      return s;
    };
    // An operand of shape [..., r, c], sometimes as a transposed view of a [..., c, r] tensor
    // (strided operands go to BLAS without a copy).
    auto operand = [&](const Shape& b, std::int64_t r, std::int64_t c, DType t, int depth_) {
      if (chance(0.3)) {
        const Expr e = make(depth_, with(b, c, r), t, exact);
        return Expr{kiln::transpose(clamp(e.t, 3), -1, -2), e.exact};
      }
      const Expr e = make(depth_, with(b, r, c), t, exact);
      return Expr{clamp(e.t, 3), e.exact};
    };
    const Expr a = operand(ba, m, k, da, d);
    const Expr b = operand(bb, k, n, db, uniform(0, d));
    return Expr{kiln::matmul(a.t, b.t), kiln::is_integer(dtype) && a.exact && b.exact};
  }

  std::optional<Expr> concat(int depth, const Shape& shape, DType dtype, bool exact) {
    const int rank = static_cast<int>(shape.size());
    if (rank == 0) return std::nullopt;
    const int axis = uniform(0, rank - 1);
    const int parts = uniform(2, 3);
    // Cut points in [0, size]: parts may be empty.
    std::vector<std::int64_t> cuts{0, shape[axis]};
    for (int i = 1; i < parts; ++i) cuts.push_back(uniform(0, static_cast<int>(shape[axis])));
    std::sort(cuts.begin(), cuts.end());
    std::vector<DType> types{dtype};
    for (int i = 1; i < parts; ++i) types.push_back(dtype_upto(dtype));
    std::shuffle(types.begin(), types.end(), rng_);
    std::vector<Tensor> tensors;
    bool ex = true;
    for (int i = 0; i < parts; ++i) {
      Shape s = shape;
      s[axis] = cuts[i + 1] - cuts[i];
      const Expr p = make(uniform(0, depth - 1), s, types[i], exact);
      tensors.push_back(p.t);
      ex = ex && p.exact;
    }
    const int ax = chance(0.3) ? axis - rank : axis;
    if (parts == 2 && chance(0.5)) return Expr{kiln::concat(tensors[0], tensors[1], ax), ex};
    return Expr{kiln::concat(tensors, ax), ex};
  }

  Tensor watched_if_asked(Tensor t) {
    if (watch_leaves_) {
      t.watch();
      watched_.push_back(t);
    }
    return t;
  }

  std::mt19937 rng_;
  std::int64_t budget_, max_dim_;
  std::vector<Expr> pool_;
  bool watch_leaves_ = false;
  std::vector<Tensor> watched_;
};

// One random graph: built from its seed, so it can be built again identically.
struct GraphSpec {
  std::uint32_t seed;
  int depth;
  Shape shape;
  DType dtype;
  bool big;  // tens of thousands of elements: several chunks, threads, split reductions

  std::string describe() const {
    std::ostringstream os;
    os << "seed " << seed << ", depth " << depth << ", " << kiln::dtype_name(dtype)
       << shape_str(shape) << (big ? ", big" : "");
    return os.str();
  }
};

GraphSpec random_spec(std::mt19937& rng, bool big, std::optional<DType> dtype = std::nullopt) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  GraphSpec g{static_cast<std::uint32_t>(rng()),
              uniform(1, 8),
              {},
              dtype.value_or(kDTypes[uniform(0, 3)]),
              big};
  if (big) {
    static const Shape kBig[] = {{40000},    {200, 150}, {3, 12000}, {34, 33, 31}, {2, 3, 5000},
                                 {20000, 2}, {},         {1},        {3}};
    g.shape = kBig[uniform(0, 8)];
  } else {
    const int rank = uniform(0, 4);
    for (int i = 0; i < rank; ++i) g.shape.push_back(uniform(1, 5));
  }
  return g;
}

// The generator of the graph of `g`. Big graphs with small results reduce tens of thousands of
// elements.
GraphGen generator_for(const GraphSpec& g) {
  return GraphGen(g.seed, g.big ? 70000 : 400, g.big ? 70000 : 6);
}

Expr build_graph(const GraphSpec& g) {
  return generator_for(g).make(g.depth, g.shape, g.dtype, false);
}

// Evaluates the graph of `spec` with the reference executor and with the CPU executor and
// compares. Returns false after reporting a failure.
bool check_graph(const GraphSpec& spec, std::uint32_t pick_seed, bool* was_exact) {
  SCOPED_TRACE(spec.describe());
  kiln::set_executor(kiln::reference_executor());
  Expr ref_graph;
  try {
    ref_graph = build_graph(spec);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "building the graph failed: " << e.what();
    return false;
  }
  const Tensor& ref_root = ref_graph.t;
  const std::string text = kiln::graph_to_string(ref_root);
  SCOPED_TRACE("graph:\n" + text);
  *was_exact = ref_graph.exact;

  Values ref;
  double scale = 0;
  std::vector<Tensor> ref_nodes;
  bool inexact_f32 = false;
  try {
    // Every intermediate, for the tolerance's scale (and for the CPU side's extra target); taken
    // before evaluating, which makes the root a leaf.
    ref_nodes = kiln::topological_order(ref_root);
    inexact_f32 = has_inexact_f32(ref_nodes);
    kiln::eval_all(ref_nodes);
    ref = read(ref_root);
    for (const Tensor& n : ref_nodes) scale = std::max(scale, magnitude(read(n)));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "reference executor threw: " << e.what();
    return false;
  }

  kiln::set_executor(kiln::cpu_executor());
  try {
    const Expr cpu_graph = build_graph(spec);
    const Tensor& cpu_root = cpu_graph.t;
    if (kiln::graph_to_string(cpu_root) != text) {
      ADD_FAILURE() << "the second build differs:\n" << kiln::graph_to_string(cpu_root);
      return false;
    }
    // Sometimes an intermediate is a target too (a requested result cuts fusion there).
    std::mt19937 pick(pick_seed);
    const auto cpu_nodes = kiln::topological_order(cpu_root);
    std::optional<std::size_t> extra;
    if (cpu_nodes.size() > 2 && pick() % 4 == 0) {
      extra = pick() % (cpu_nodes.size() - 1);
      kiln::eval_all({cpu_root, cpu_nodes[*extra]});
    }
    const Values got = read(cpu_root);
    const double rtol = rtol_for(ref.dtype, inexact_f32);
    const std::string diff = compare(ref, got, ref_graph.exact, scale, rtol);
    if (!diff.empty()) {
      ADD_FAILURE() << "reference and cpu executors disagree:\n" << diff;
      return false;
    }
    if (extra) {
      const Values ref_extra = read(ref_nodes[*extra]);
      const std::string d = compare(ref_extra, read(cpu_nodes[*extra]), false, scale,
                                    rtol_for(ref_extra.dtype, inexact_f32));
      if (!d.empty()) {
        ADD_FAILURE() << "intermediate %" << *extra << " (evaluated with eval_all) disagrees:\n"
                      << d;
        return false;
      }
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "cpu executor threw: " << e.what();
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Random graphs
// ---------------------------------------------------------------------------------------------

// How many random graphs a sweep builds, and from which seed: 300 from `seed`, unless
// KILN_RANDOM_GRAPHS and KILN_RANDOM_SEED ask for a longer or another sweep.
struct Sweep {
  int graphs;
  std::mt19937 rng;
};
Sweep sweep(std::uint32_t seed) {
  const char* seed_text = std::getenv("KILN_RANDOM_SEED");
  const char* count = std::getenv("KILN_RANDOM_GRAPHS");
  return {count ? std::max(1, std::atoi(count)) : 300,
          std::mt19937(seed_text ? static_cast<std::uint32_t>(std::strtoul(seed_text, nullptr, 10))
                                 : seed)};
}

TEST(ExecutorDifferential, RandomGraphsAgree) {
  ExecutorGuard guard;
  auto [graphs, rng] = sweep(0x6b696c6eu);
  int failures = 0, exact = 0;
  for (int i = 0; i < graphs; ++i) {
    // One graph in 15 is big; the dtypes take turns.
    const GraphSpec spec = random_spec(rng, i % 15 == 7, kDTypes[i % 4]);
    bool was_exact = false;
    SCOPED_TRACE("random graph " + std::to_string(i));
    if (!check_graph(spec, static_cast<std::uint32_t>(rng()), &was_exact)) ++failures;
    exact += was_exact;
    ASSERT_LT(failures, 10) << "stopping after 10 failing graphs";
  }
  // Most integer graphs and a few float graphs compare bit for bit.
  EXPECT_GT(exact, graphs / 4);
}

// The backward graphs of random float graphs (inverse broadcasting, reductions spread back,
// transposed products, slice, pad and concat gradients, fused through the CPU executor's kernels):
// every float leaf is watched, y = sum(root * u) for a fixed random u, and the gradients of y
// with respect to all leaves are evaluated with each executor and compared.
TEST(ExecutorDifferential, RandomGraphGradientsAgree) {
  ExecutorGuard guard;
  auto [graphs, rng] = sweep(0x67726164u);
  int failures = 0, with_leaves = 0;
  for (int i = 0; i < graphs; ++i) {
    const GraphSpec spec = random_spec(rng, i % 15 == 7, i % 2 ? DType::f32 : DType::f64);
    SCOPED_TRACE("random graph " + std::to_string(i) + ": " + spec.describe());
    // The gradients with the current executor, and (with `nodes`) the forward graph's nodes.
    auto gradients = [&](std::vector<Tensor>* nodes, std::string* text) {
      GraphGen gen = generator_for(spec);
      gen.watch_leaves();
      kiln::GradientContext ctx;
      const Tensor root = gen.make(spec.depth, spec.shape, spec.dtype, false).t;
      if (nodes) *nodes = kiln::topological_order(root);
      if (text) *text = kiln::graph_to_string(root);
      std::vector<Values> out;
      if (gen.watched().empty()) return out;
      const Tensor u = kiln::uniform(root.shape(), spec.seed, root.dtype());
      for (const Tensor& g : kiln::gradients(kiln::sum(root * u), gen.watched()))
        out.push_back(read(g));
      return out;
    };
    std::vector<Tensor> nodes;
    std::string text;
    std::vector<Values> ref, got;
    try {
      kiln::set_executor(kiln::reference_executor());
      ref = gradients(&nodes, &text);
      kiln::set_executor(kiln::cpu_executor());
      got = gradients(nullptr, nullptr);
    } catch (const kiln::Error& e) {
      // A leaf that reaches the root only through index or bool values used as data: refused
      // (gradients() says which op cuts the path) before any executor runs.
      if (e.code() == kiln::ErrorCode::illegal_derive &&
          std::string(e.what()).find("pass no gradient") != std::string::npos)
        continue;
      ADD_FAILURE() << "threw: " << e.what();
      ++failures;
      continue;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
      ++failures;
      continue;
    }
    SCOPED_TRACE("graph:\n" + text);
    with_leaves += !ref.empty();
    ASSERT_EQ(ref.size(), got.size());
    // The backward pass repeats the forward pass's rounding differences, scaled by the
    // gradients, and sums products in its own order: f32 anywhere in the graph gives f32's
    // tolerance, relative to the largest gradient (at least 1). Big f32 graphs sum tens of
    // thousands of f32 values, and a function of such a sum (sin(sum(x)) of a sum in the
    // hundreds) turns its last-bit differences into relative errors of 1e-4: 1e-3 for them,
    // still far below what a wrong gradient rule or kernel gives.
    double scale = 1;
    for (const Values& v : ref) scale = std::max(scale, magnitude(v));
    const bool f32 = std::any_of(nodes.begin(), nodes.end(),
                                 [](const Tensor& t) { return t.dtype() == DType::f32; });
    const double rtol = !f32 ? 1e-10 : spec.big ? 1e-3 : 1e-5;
    for (std::size_t k = 0; k < ref.size(); ++k) {
      const std::string diff = compare(ref[k], got[k], false, scale, rtol);
      if (!diff.empty()) {
        ADD_FAILURE() << "gradient " << k << " disagrees:\n" << diff;
        ++failures;
        break;
      }
    }
    ASSERT_LT(failures, 10) << "stopping after 10 failing graphs";
  }
  EXPECT_GT(with_leaves, graphs / 2);
}

// Float matmul goes to oneDNN (f32) and OpenBLAS (f64), which read strided operands in place
// where the view allows. Operands of many layouts: plain, transposed, sliced with steps (also
// negative), batch dimensions broadcast (implicitly or with broadcast_to), permuted batch
// dimensions, size-1 matrix dimensions, mixed types.
TEST(ExecutorDifferential, MatmulOperandLayoutsAgree) {
  ExecutorGuard guard;
  // Small products go to OpenBLAS, large ones to oneDNN: `big` picks sizes above the switch.
  auto build = [](std::uint32_t seed, bool big) {
    std::mt19937 r(seed);
    auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(r); };
    static const std::int64_t kDims[] = {1, 1, 2, 3, 5, 8};
    static const std::int64_t kBigDims[] = {65, 70, 72, 80, 81, 96};
    const std::int64_t* dims = big ? kBigDims : kDims;
    const std::int64_t m = dims[uni(0, 5)], k = dims[uni(0, 5)], n = dims[uni(0, 5)];
    Shape batch;
    for (int i = uni(0, 2); i > 0; --i) batch.push_back(uni(1, big ? 2 : 3));
    const DType result = big || uni(0, 1) ? DType::f32 : DType::f64;
    auto values = [&](const Shape& s, DType t) {
      std::vector<double> v(static_cast<std::size_t>(count_of(s)));
      for (auto& x : v) x = std::uniform_real_distribution<double>(-1, 1)(r);
      return Tensor::from(v, s).convert(t);  // a computed leaf of type t
    };
    auto with = [](Shape s, std::int64_t a, std::int64_t b) {
      s.push_back(a);
      s.push_back(b);
      return s;
    };
    // An operand of shape batch + [rows, cols] (or with its batch dimensions left to broadcast).
    auto operand = [&](std::int64_t rows, std::int64_t cols) {
      const DType t = uni(0, 5) == 0 ? DType::i32 : result;
      Tensor x;
      switch (uni(0, 6)) {
        case 0: x = values(with(batch, rows, cols), t); break;
        case 1: x = values(with(batch, cols, rows), t).transpose(-1, -2); break;
        case 2: {  // every other row, columns reversed
          const Tensor big = values(with(batch, 2 * rows + 1, cols), t);
          const int rank = static_cast<int>(batch.size()) + 2;
          I64s start(static_cast<std::size_t>(rank), 0), stop(batch.begin(), batch.end()),
              step(static_cast<std::size_t>(rank), 1);
          start[rank - 2] = 1;
          start[rank - 1] = cols - 1;
          stop.push_back(2 * rows + 1);
          stop.push_back(-cols - 1);
          step[rank - 2] = 2;
          step[rank - 1] = -1;
          x = kiln::slice(big, start, stop, step);
          break;
        }
        case 3: {  // batch dimensions broadcast by matmul itself
          Shape b = batch;
          b.erase(b.begin(), b.begin() + uni(0, static_cast<int>(b.size())));
          for (auto& d : b)
            if (uni(0, 1)) d = 1;
          x = uni(0, 1) ? values(with(b, rows, cols), t)
                        : values(with(b, cols, rows), t).transpose(-1, -2);
          break;
        }
        case 4:  // explicitly broadcast over the batch
          x = kiln::broadcast_to(uni(0, 1) ? values({rows, cols}, t) : values({cols, rows}, t).t(),
                                 with(batch, rows, cols));
          break;
        case 5: {  // permuted batch dimensions
          if (batch.size() < 2) {
            x = values(with(batch, rows, cols), t);
            break;
          }
          x = kiln::permute(values({batch[1], batch[0], rows, cols}, t), {1, 0, 2, 3});
          break;
        }
        default:  // a matrix with its rows as the slow dimension of a wider buffer
          x = kiln::slice(values(with(batch, rows, cols + 3), t).transpose(-1, -2),
                          I64s(batch.size() + 2, 0),
                          [&] {
                            I64s e(batch.begin(), batch.end());
                            e.push_back(cols);
                            e.push_back(rows);
                            return e;
                          }())
                  .transpose(-1, -2);
          break;
      }
      return x;
    };
    const Tensor a = operand(m, k);
    const Tensor b = operand(k, n);
    // At least one operand of the result type.
    return kiln::matmul(a.dtype() == result ? a : a.convert(result), b);
  };
  std::mt19937 rng(1234);
  int failures = 0;
  for (int c = 0; c < 270 && failures < 10; ++c) {
    const auto seed = static_cast<std::uint32_t>(rng());
    const bool big = c >= 250;
    kiln::set_executor(kiln::reference_executor());
    const Tensor ref_t = build(seed, big);
    SCOPED_TRACE("case " + std::to_string(c) + ", graph:\n" + kiln::graph_to_string(ref_t));
    const Values ref = read(ref_t);
    kiln::set_executor(kiln::cpu_executor());
    const Values got = read(build(seed, big));
    // Operands in [-1, 1]: the sums of |products| are at most k (8, or 96 for big ones).
    const std::string diff = compare(ref, got, false, big ? 96.0 : 8.0, rtol_of(ref.dtype));
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << "reference and cpu executors disagree:\n" << diff;
    }
  }
}

// Stacks of products that the CPU executor spreads over its threads (whole products per
// thread) or runs one after another, at 1 and 2 threads: f32 through oneDNN and OpenBLAS, f64
// through OpenBLAS, with transposed and batch-broadcast operands and uneven shares.
TEST(ExecutorMatmul, StacksOfProductsAgreeAtEveryThreadCount) {
  ExecutorGuard guard;
  struct Case {
    Shape a, b;
    DType dtype;
    bool transpose_b;
  };
  const Case cases[] = {
      {{8, 64, 64}, {8, 64, 64}, DType::f32, false},       // OpenBLAS products, spread
      {{16, 96, 96}, {16, 96, 96}, DType::f32, true},      // oneDNN products, spread
      {{9, 33, 70}, {9, 70, 40}, DType::f32, false},       // 9 products: uneven but many
      {{3, 100, 120}, {3, 120, 90}, DType::f32, false},    // 3 products: each split instead
      {{12, 40, 50}, {12, 50, 30}, DType::f64, true},      // OpenBLAS f64, spread
      {{6, 1, 48, 64}, {1, 5, 64, 32}, DType::f32, false},  // a [6,5] batch from broadcasting
  };
  for (const Case& c : cases) {
    auto build = [&] {
      const Tensor a = (kiln::uniform(c.a, 7, c.dtype) - 0.5).convert(c.dtype);
      Shape b_shape = c.b;
      if (c.transpose_b) std::swap(b_shape[b_shape.size() - 1], b_shape[b_shape.size() - 2]);
      Tensor b = (kiln::uniform(b_shape, 8, c.dtype) - 0.5).convert(c.dtype);
      if (c.transpose_b) b = b.transpose(-1, -2);
      return kiln::matmul(a, b);
    };
    kiln::set_executor(kiln::reference_executor());
    const Values ref = read(build());
    kiln::set_executor(kiln::cpu_executor());
    for (int threads : {1, 2}) {
      kiln::set_num_threads(threads);
      // The product's buffer may be one the allocator hands out again: fill it with NaN first,
      // so that a product left out cannot pass on an earlier run's values.
      (kiln::uniform(ref.shape, 9, c.dtype) * std::numeric_limits<double>::quiet_NaN())
          .convert(c.dtype)
          .eval();
      SCOPED_TRACE(::testing::Message() << "a " << shape_str(c.a) << ", b " << shape_str(c.b)
                                        << ", " << threads << " threads");
      // Operands in [-0.5, 0.5]: the sums of |products| are at most k / 4.
      const double scale = static_cast<double>(c.a.back()) / 4;
      const Tensor product = build();
      ASSERT_EQ(product.dtype(), c.dtype);
      EXPECT_EQ(compare(ref, read(product), false, scale, rtol_of(ref.dtype)), "");
    }
  }
}

// Found by RandomGraphsAgree: a matmul operand read through a view (here a batch broadcast)
// whose matrix has a dimension of size 1, so that both of its strides are 1.
TEST(ExecutorMatmul, SizeOneMatrixDimensionThroughAView) {
  ExecutorGuard guard;
  for (DType t : {DType::f32, DType::f64}) {
    SCOPED_TRACE(kiln::dtype_name(t));
    auto build = [t] {
      const Tensor a = Tensor::from(std::vector<double>{1, 2, 3}, {3, 1, 1}).convert(t);
      const Tensor b = Tensor::from(std::vector<double>{10, 20, 30}, {3, 1}).convert(t);
      const Tensor left = kiln::permute(b, {1, 0});  // [1,3], strides (1, 1)
      const Tensor right =
          Tensor::from(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3, 1}).convert(t);
      // [3,1,1] x [1,3] (batch broadcast) and [2,1,3] (broadcast) x [2,3,1]
      return std::pair{kiln::matmul(a, left),
                       kiln::matmul(kiln::broadcast_to(left, {2, 1, 3}), right)};
    };
    for (const auto& [name, executor] : executors()) {
      SCOPED_TRACE(name);
      kiln::set_executor(executor);
      const auto [outer, inner] = build();
      EXPECT_EQ(outer.to_vector<double>(),
                (std::vector<double>{10, 20, 30, 20, 40, 60, 30, 60, 90}));
      EXPECT_EQ(inner.to_vector<double>(), (std::vector<double>{140, 320}));
    }
  }
}

// kiln::set_float32_matmul_precision takes PyTorch's names, refuses others naming the value, and
// leaves the products of executors without TF32 exact (Cuda.Tf32IsOptIn covers cuBLAS).
TEST(ExecutorMatmul, Float32MatmulPrecisionIsPyTorchsSetting) {
  EXPECT_EQ(kiln::float32_matmul_precision(), "highest");
  const Tensor a = kiln::uniform({37, 53}, 3), b = kiln::uniform({53, 29}, 4);
  std::vector<std::vector<float>> exact;
  for (const auto& executor : kiln::executors())
    exact.push_back(kiln::matmul(a, b).eval(*executor).to_vector<float>());
  for (const char* name : {"high", "medium", "highest"}) {
    kiln::set_float32_matmul_precision(name);
    EXPECT_EQ(kiln::float32_matmul_precision(), name);
    const auto all = kiln::executors();
    for (std::size_t e = 0; e < all.size(); ++e) {
      if (all[e]->name() == "cuda") continue;
      EXPECT_EQ(kiln::matmul(a, b).eval(*all[e]).to_vector<float>(), exact[e])
          << all[e]->name() << " at " << name;
    }
  }
  for (const char* bad : {"HIGH", "tf32", ""}) {
    const kiln::Error e = kiln_test::error_of([&] { kiln::set_float32_matmul_precision(bad); });
    EXPECT_EQ(e.code(), kiln::ErrorCode::invalid_select);
    EXPECT_NE(std::string(e.what()).find(std::string("\"") + bad + "\""), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(kiln::float32_matmul_precision(), "highest");
}

// Found by RandomGraphsAgree (with other seeds): a float matmul with an empty operand (inner
// dimension 0, or an empty batch) read through a view or converted from another type. The
// statement runs in a child process, since a crash there would end the whole test binary.
TEST(ExecutorMatmul, EmptyOperandThroughAView) {
  // Re-executes the test binary for the child: the thread pool makes a plain fork() unsafe.
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto run = [] {
    kiln::set_executor(kiln::cpu_executor());
    // [3,0] (a transposed view) x [0,2]: zeros.
    const Tensor a =
        kiln::matmul(kiln::zeros({0, 3}, DType::f32).t(), kiln::zeros({0, 2}, DType::f32));
    // [0,2,3] x [3,2] broadcast over the empty batch: empty.
    const Tensor b =
        kiln::matmul(kiln::ones({0, 2, 3}, DType::f32), kiln::ones({3, 2}, DType::f64));
    // i32 [2,0] x f32 [0,2]: zeros.
    const Tensor c = kiln::matmul(kiln::zeros({2, 0}, DType::i32), kiln::zeros({0, 2}, DType::f32));
    const bool right = a.to_vector<double>() == std::vector<double>(6, 0.0) &&
                       b.shape() == Shape{0, 2, 2} && b.to_vector<double>().empty() &&
                       c.to_vector<double>() == std::vector<double>(4, 0.0);
    std::exit(right ? 0 : 1);
  };
  EXPECT_EXIT(run(), testing::ExitedWithCode(0), "")
      << "the cpu executor crashes (or computes wrong values) on empty matmul operands";
  GTEST_FLAG_SET(death_test_style, style);
  // The reference executor handles the same graphs.
  ExecutorGuard guard;
  kiln::set_executor(kiln::reference_executor());
  EXPECT_EQ(kiln::matmul(kiln::zeros({0, 3}, DType::f32).t(), kiln::zeros({0, 2}, DType::f32))
                .to_vector<double>(),
            std::vector<double>(6, 0.0));
}

// ---------------------------------------------------------------------------------------------
// Nodes with several consumers, several targets, reuse of results
// ---------------------------------------------------------------------------------------------

std::vector<double> ramp(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i % 17) * 0.25 - 2.0;
  return v;
}

TEST(ExecutorSharing, NodeWithTwoConsumersIsComputedOnce) {
  ExecutorGuard guard;
  for (const auto& [name, executor] : executors()) {
    SCOPED_TRACE(name);
    kiln::set_executor(executor);
    std::atomic<int> calls{0};
    const auto xs = ramp(120);
    const Tensor x = Tensor::from(xs, {4, 30});
    // Only a temporary: no handle refers to `shared` once the consumers are built.
    Tensor a, b;
    {
      const Tensor shared = kiln::map_elements(x, [&](double v) {
        ++calls;
        return v * 2 + 1;
      });
      a = kiln::exp(shared * 0.125) + 1.0;     // an elementwise consumer
      b = kiln::sum(shared.t(), {0});          // a reduction reading it through a view
    }
    const Tensor root = kiln::sum(a) + kiln::sum(b);
    SCOPED_TRACE(kiln::graph_to_string(root));
    const double got = root.item<double>();
    double want_a = 0, want_b = 0;
    for (double v : xs) {
      want_a += std::exp((v * 2 + 1) * 0.125) + 1.0;
      want_b += v * 2 + 1;
    }
    EXPECT_NEAR(got, want_a + want_b, 1e-9 * std::abs(want_a + want_b));
    EXPECT_EQ(calls.load(), 120) << "the shared node was not computed exactly once";

    // Both consumers as targets, and a diamond: both results right, the shared node once.
    calls = 0;
    const Tensor shared = kiln::map_elements(x, [&](double v) {
      ++calls;
      return v - 0.5;
    });
    const Tensor left = kiln::square(shared), right = shared * 3.0;
    const Tensor diamond = left - right;
    kiln::eval_all({left, right, diamond});
    EXPECT_EQ(calls.load(), 120);
    const auto l = left.to_vector<double>(), r = right.to_vector<double>(),
               dm = diamond.to_vector<double>();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double s = xs[i] - 0.5;
      EXPECT_EQ(l[i], s * s);
      EXPECT_EQ(r[i], s * 3.0);
      EXPECT_EQ(dm[i], s * s - s * 3.0);
    }
    EXPECT_EQ(calls.load(), 120) << "reading evaluated results computed them again";
  }
}

TEST(ExecutorSharing, RandomDagsWithSharedNodesAgree) {
  // Integer DAGs in which every node may feed several later ones: the results must be
  // bit-identical whichever executor computes them.
  ExecutorGuard guard;
  std::mt19937 rng(77);
  for (int g = 0; g < 40; ++g) {
    auto build = [](std::uint32_t seed) {
      std::mt19937 r(seed);
      auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(r); };
      std::vector<Tensor> nodes;
      for (int i = 0; i < 3; ++i) {
        std::vector<std::int64_t> v(60);
        for (auto& e : v) e = uni(-9, 9);
        nodes.push_back(Tensor::from(v, {3, 20}));
      }
      for (int i = 0; i < 25; ++i) {
        const Tensor& a = nodes[static_cast<std::size_t>(uni(0, int(nodes.size()) - 1))];
        const Tensor& b = nodes[static_cast<std::size_t>(uni(0, int(nodes.size()) - 1))];
        switch (uni(0, 5)) {
          case 0: nodes.push_back(a + b); break;
          case 1: nodes.push_back(clamp(a * b, 1000)); break;
          case 2: nodes.push_back(a - b.slice({0, 19}, {3, -21}, {1, -1})); break;
          case 3: nodes.push_back(kiln::maximum(a, kiln::sum(b, {1}, true))); break;
          case 4: nodes.push_back(kiln::where(kiln::less(a, b), a, -b)); break;
          default:
            nodes.push_back(a.reshape({20, 3}).t() + b);
            break;
        }
      }
      // Everything feeds the root, so every node has at least one consumer.
      Tensor root = nodes[0];
      for (std::size_t i = 1; i < nodes.size(); ++i) root = root + nodes[i];
      return root;
    };
    const std::uint32_t seed = static_cast<std::uint32_t>(rng());
    kiln::set_executor(kiln::reference_executor());
    const Tensor ref = build(seed);
    SCOPED_TRACE(kiln::graph_to_string(ref));
    const auto want = ref.to_vector<std::int64_t>();
    kiln::set_executor(kiln::cpu_executor());
    EXPECT_EQ(build(seed).to_vector<std::int64_t>(), want);
  }
}

TEST(ExecutorEvalAll, SeveralTargetsInOnePass) {
  ExecutorGuard guard;
  for (const auto& [name, executor] : executors()) {
    SCOPED_TRACE(name);
    kiln::set_executor(executor);
    std::atomic<int> calls{0};
    const auto xs = ramp(24);
    const Tensor x = Tensor::from(xs, {2, 3, 4});
    const Tensor s = kiln::map_elements(x, [&](double v) {
      ++calls;
      return v * v;
    });
    const Tensor t1 = s + 1.0;                                                        // elementwise
    const Tensor t2 = kiln::sum(s, {1, 2});                                           // reduction
    const Tensor t3 = s.permute({2, 0, 1}).slice({3, 0, 0}, {-5, 2, 3}, {-2, 1, 2});  // a view
    const Tensor t4 = kiln::matmul(s, s.transpose(1, 2));                             // matmul
    const Tensor t5 = kiln::argmax(s, 2);                                             // i64
    kiln::eval_all({t1, t2, t3, t4, t5, t1, s});  // a duplicate, and the shared node itself
    EXPECT_EQ(calls.load(), 24);
    for (const Tensor* t : {&t1, &t2, &t3, &t4, &t5, &s}) EXPECT_TRUE(t->is_evaluated());

    auto sv = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
      const double v = xs[static_cast<std::size_t>((i * 3 + j) * 4 + k)];
      return v * v;
    };
    const auto v1 = t1.to_vector<double>();
    for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(v1[i], xs[i] * xs[i] + 1.0);
    const auto v2 = t2.to_vector<double>();
    for (int i = 0; i < 2; ++i) {
      double want = 0;
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) want += sv(i, j, k);
      EXPECT_NEAR(v2[i], want, 1e-12);
    }
    // t3: permuted to [4,2,3], then positions 3,1 of dimension 0, 0..1 and 0,2 of the others.
    ASSERT_EQ(t3.shape(), (Shape{2, 2, 2}));
    const auto v3 = t3.to_vector<double>();
    const std::int64_t ks[] = {3, 1}, is[] = {0, 1}, js[] = {0, 2};
    std::size_t p = 0;
    for (auto k : ks)
      for (auto i : is)
        for (auto j : js) EXPECT_EQ(v3[p++], sv(i, j, k));
    const auto v4 = t4.to_vector<double>();
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          double want = 0;
          for (int k = 0; k < 4; ++k) want += sv(b, i, k) * sv(b, j, k);
          EXPECT_NEAR(v4[static_cast<std::size_t>((b * 3 + i) * 3 + j)], want, 1e-12);
        }
    const auto v5 = t5.to_vector<std::int64_t>();
    for (int i = 0; i < 6; ++i) {
      std::int64_t best = 0;
      for (int k = 1; k < 4; ++k)
        if (sv(i / 3, i % 3, k) > sv(i / 3, i % 3, best)) best = k;
      EXPECT_EQ(v5[static_cast<std::size_t>(i)], best);
    }
    EXPECT_EQ(calls.load(), 24) << "reading evaluated targets computed them again";
    kiln::eval_all({t1, t2});  // all evaluated already: nothing to do
    EXPECT_EQ(calls.load(), 24);
  }
}

TEST(ExecutorReuse, EvaluatedIntermediateFeedsNewGraphs) {
  ExecutorGuard guard;
  for (const auto& [name, executor] : executors()) {
    SCOPED_TRACE(name);
    kiln::set_executor(executor);
    std::atomic<int> calls{0};
    const auto xs = ramp(60);
    const Tensor x = Tensor::from(xs, {6, 10});
    const Tensor h = kiln::map_elements(x,
                                        [&](double v) {
                                          ++calls;
                                          return v + 3;
                                        }) *
                     2.0;
    h.eval();
    EXPECT_EQ(calls.load(), 60);
    ASSERT_TRUE(h.is_evaluated());
    // New graphs on top of the evaluated node, directly and through views.
    const Tensor g1 = kiln::relu(h - 5.0);
    const Tensor g2 = kiln::sum(h.t(), {0});
    const Tensor g3 =
        kiln::concat(h.slice({0, 0}, {6, 10}, {2, 3}), h.slice({5, 9}, {-7, -11}, {-2, -3}), 0);
    const auto v1 = g1.to_vector<double>();
    const auto v2 = g2.to_vector<double>();
    const auto v3 = g3.to_vector<double>();
    EXPECT_EQ(calls.load(), 60) << "the evaluated intermediate was computed again";
    auto hv = [&](std::int64_t i, std::int64_t j) {
      return (xs[static_cast<std::size_t>(i * 10 + j)] + 3) * 2;
    };
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 10; ++j)
        EXPECT_EQ(v1[static_cast<std::size_t>(i * 10 + j)], std::max(0.0, hv(i, j) - 5));
    for (int i = 0; i < 6; ++i) {
      double want = 0;
      for (int j = 0; j < 10; ++j) want += hv(i, j);
      EXPECT_NEAR(v2[static_cast<std::size_t>(i)], want, 1e-12);
    }
    ASSERT_EQ(g3.shape(), (Shape{6, 4}));
    std::size_t p = 0;
    for (std::int64_t i : {0, 2, 4})
      for (std::int64_t j : {0, 3, 6, 9}) EXPECT_EQ(v3[p++], hv(i, j));
    for (std::int64_t i : {5, 3, 1})
      for (std::int64_t j : {9, 6, 3, 0}) EXPECT_EQ(v3[p++], hv(i, j));

    // A result computed by one executor feeds a graph the other one computes.
    kiln::set_executor(std::string_view(name) == "cpu" ? kiln::reference_executor()
                                                       : kiln::cpu_executor());
    const auto v4 = kiln::max(h * h, {0}).to_vector<double>();
    for (int j = 0; j < 10; ++j) {
      double want = 0;
      for (int i = 0; i < 6; ++i) want = std::max(want, hv(i, j) * hv(i, j));
      EXPECT_EQ(v4[static_cast<std::size_t>(j)], want);
    }
    EXPECT_EQ(calls.load(), 60);
  }
}

TEST(ExecutorReuse, ReleasedIntermediateIsComputedAgainWhenNeeded) {
  // Intermediates that no handle refers to may be released after the evaluation; a view handle
  // onto one must still read the right values later.
  ExecutorGuard guard;
  for (const auto& [name, executor] : executors()) {
    SCOPED_TRACE(name);
    kiln::set_executor(executor);
    const auto xs = ramp(48);
    const Tensor x = Tensor::from(xs, {4, 12});
    const Tensor v = kiln::exp(x * 0.5).reshape({12, 4}).t();  // views of a temporary
    const Tensor total = kiln::sum(v) + kiln::sum(kiln::square(v));
    const double t = total.item<double>();
    double want = 0;
    for (double e : xs) want += std::exp(e * 0.5) + std::exp(e * 0.5) * std::exp(e * 0.5);
    EXPECT_NEAR(t, want, 1e-9 * want);
    const auto vv = v.to_vector<double>();
    ASSERT_EQ(v.shape(), (Shape{4, 12}));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 12; ++j)
        EXPECT_NEAR(vv[static_cast<std::size_t>(i * 12 + j)],
                    std::exp(xs[static_cast<std::size_t>(j * 4 + i)] * 0.5), 1e-12);
  }
}

// ---------------------------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------------------------

TEST(ExecutorThreads, OneThreadAndDefaultGiveIdenticalIntegerResults) {
  // set_num_threads(1) is what KILN_NUM_THREADS=1 selects at start-up. Graphs big enough to be
  // split (elementwise kernels over tens of thousands of elements, long reductions split into
  // parts) must give bit-identical integer results with 1, the default and 4 threads; float
  // results may differ in summation order only.
  ExecutorGuard guard;
  kiln::set_executor(kiln::cpu_executor());
  const int default_threads = kiln::num_threads();
  std::vector<int> counts{1, default_threads};
  if (default_threads != 4) counts.push_back(4);

  std::vector<std::function<Tensor()>> graphs;
  // Hand-written graphs that reach the parallel paths.
  graphs.push_back([] {  // one long row split over the threads
    const Tensor i = kiln::arange(70000);
    return kiln::sum(i * 7 - 3) + kiln::sum(kiln::square(i - 35000));
  });
  graphs.push_back([] {  // column reduction, argmax with ties, min
    const Tensor a = kiln::arange({300, 200}, 0) * 3 - kiln::arange({300, 200}, 1);
    const Tensor m = kiln::maximum(a, 100);
    return kiln::concat({kiln::sum(a, {0}), kiln::argmax(m, 0), kiln::min(a * -1, {0})}, 0);
  });
  graphs.push_back([] {  // a long fused chain with broadcasting, in i32
    const Tensor r = kiln::arange({64, 1000}, 1).convert(DType::i32);
    const Tensor c = kiln::arange({64, 1}, 0).convert(DType::i32);
    return kiln::where(kiln::less(r - c * 7, 300), r * c - 11, kiln::abs(r - c * 9)) + 1;
  });
  std::mt19937 rng(4242);
  for (int g = 0; g < 24; ++g) {
    const GraphSpec spec = random_spec(rng, true, g % 2 == 0 ? DType::i32 : DType::i64);
    graphs.push_back([spec] { return build_graph(spec).t; });
  }
  for (int g = 0; g < 6; ++g) {
    const GraphSpec spec = random_spec(rng, true, g % 2 == 0 ? DType::f32 : DType::f64);
    graphs.push_back([spec] { return build_graph(spec).t; });
  }

  for (std::size_t g = 0; g < graphs.size(); ++g) {
    SCOPED_TRACE("graph " + std::to_string(g));
    std::optional<Values> first;
    double rtol = 0;
    for (int threads : counts) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      kiln::set_num_threads(threads);
      ASSERT_EQ(kiln::num_threads(), threads);
      Tensor t;
      Values v;
      bool inexact_f32 = false;
      try {
        t = graphs[g]();
        inexact_f32 = has_inexact_f32(kiln::topological_order(t));
        v = read(t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "threw: " << e.what();
        break;
      }
      SCOPED_TRACE("graph:\n" + kiln::graph_to_string(t));
      if (!first) {
        first = v;
        rtol = rtol_for(v.dtype, inexact_f32);
        continue;
      }
      if (kiln::is_integer(v.dtype)) {
        EXPECT_EQ(v.ints, first->ints);
      } else {
        const std::string diff =
            compare(*first, v, false, magnitude(*first), rtol, "1 thread", "more threads");
        EXPECT_TRUE(diff.empty()) << diff;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Deep graphs
// ---------------------------------------------------------------------------------------------

// Resident memory of this process in KiB (0 where /proc is not available).
long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // ASan is slower and keeps freed memory in quarantine
#else
constexpr bool kSanitized = false;
#endif

TEST(ExecutorDeepGraph, MillionAddsBuiltInALoop) {
  // `x = x + y` a million times builds a chain a million nodes deep. It must evaluate to the
  // right value without overflowing the stack and without keeping the whole graph (kiln
  // evaluates a node automatically when its graph grows too deep; kept whole, the million
  // nodes take about 450 MiB), in a few seconds.
  ExecutorGuard guard;
  kiln::set_executor(kiln::cpu_executor());
  const Tensor y = Tensor::from(std::vector<float>{1.0f, 2.0f, 0.5f, -1.0f}, {4});
  const long rss_before = rss_kib();
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  Tensor x = kiln::zeros({4}, DType::f32);
  for (int i = 0; i < 1'000'000; ++i) x = x + y;
  const long rss_growth_mib = (rss_kib() - rss_before) / 1024;
  const auto v = x.to_vector<float>();
  x = Tensor();  // destroying what is left of the graph must not overflow the stack either
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Processor time (all threads) rather than wall time: the machine may be shared.
  const double cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  // Every partial sum is exactly representable in f32, so the result is exact.
  EXPECT_EQ(v, (std::vector<float>{1e6f, 2e6f, 5e5f, -1e6f}));
  std::cout << "[   INFO   ] 1e6 chained adds: " << seconds << " s (" << cpu_seconds
            << " s of processor time), resident memory grew by " << rss_growth_mib
            << " MiB while building\n";
  if (!kSanitized) {
    EXPECT_LT(rss_growth_mib, 256) << "the graph was kept whole";
    // 2-5 s on the (shared) 2-core development machine.
    EXPECT_LT(cpu_seconds, 10.0) << "a million adds took " << cpu_seconds << " s of processor time";
  }
}

TEST(ExecutorDeepGraph, EvaluatingEachStepKeepsNoChain) {
  // With x.eval() in the loop no graph grows deep, but each new x reads the previous one: an
  // evaluated node outside gradient contexts becomes a leaf, so the old values are let go.
  ExecutorGuard guard;
  const Tensor y = Tensor::from(std::vector<float>{1.0f, -2.0f}, {2});
  Tensor x = kiln::zeros({2}, DType::f32);
  x.eval();
  const std::weak_ptr<kiln::detail::Node> first = x.node();
  // One step first, read back so that it has run, so that what the executor prepares once (a
  // device executor compiles the kernel, and its compiler's memory stays) is not counted as the
  // chain.
  (void)(x + y).to_vector<float>();
  const long rss_before = rss_kib();
  for (int i = 0; i < 100'000; ++i) {
    x = x + y;
    x.eval();
  }
  EXPECT_TRUE(first.expired()) << "the first value is still referenced";
  EXPECT_EQ(kiln::topological_order(x).size(), 1u);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1e5f, -2e5f}));
  if (!kSanitized) {
    EXPECT_LT((rss_kib() - rss_before) / 1024, 16) << "the chain was kept";
  }
  // Inside a gradient context the graph stays, for gradients.
  const Tensor w = Tensor::from(std::vector<float>{3.0f}, {1}).watch();
  Tensor z;
  {
    kiln::GradientContext context;
    z = kiln::sum(w * w);
  }
  z.eval();
  EXPECT_GT(kiln::topological_order(z).size(), 1u);
  EXPECT_FLOAT_EQ(kiln::gradient(z, w).item<float>(), 6.0f);
}

// ---------------------------------------------------------------------------------------------
// Kernels of their own: 2x2 max pooling rows and gather
// ---------------------------------------------------------------------------------------------

// Bit-level comparison that treats every NaN as equal.
bool same_floats(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

// The CPU executor's values against the reference's: NaN and infinities exactly, finite values
// within rtol * (1 + |reference|).
void expect_agree(const std::vector<double>& ref, const std::vector<double>& got, double rtol) {
  ASSERT_EQ(ref.size(), got.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(ref[i]))
      EXPECT_TRUE(ref[i] == got[i] || (std::isnan(ref[i]) && std::isnan(got[i])))
          << i << ": " << ref[i] << " vs " << got[i];
    else
      EXPECT_NEAR(ref[i], got[i], rtol * (1 + std::fabs(ref[i]))) << i;
  }
}

TEST(ExecutorKernels, MaxPool2x2RowsAgreeWithReference) {
  // Row widths around the 16-output vectors of the AVX-512 rows (masked tails, several vectors,
  // an odd column and row left over), values from {0, 1, 2} so windows tie, and NaN and
  // infinities in some planes.
  ExecutorGuard guard;
  std::mt19937 rng(4242);
  for (const auto& [h, w] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {2, 2}, {4, 6}, {28, 28}, {5, 33}, {6, 34}, {3, 66}, {2, 64}}) {
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(w));
    std::vector<float> values(static_cast<std::size_t>(2 * 3 * h * w));
    for (auto& v : values) v = static_cast<float>(rng() % 3);
    for (int k = 0; k < 3 && h * w > 4; ++k) {
      values[rng() % values.size()] = std::numeric_limits<float>::quiet_NaN();
      values[rng() % values.size()] = std::numeric_limits<float>::infinity();
      values[rng() % values.size()] = -std::numeric_limits<float>::infinity();
    }
    std::vector<float> upstream(static_cast<std::size_t>(2 * 3 * (h / 2) * (w / 2)));
    for (auto& v : upstream) v = static_cast<float>(rng() % 7) - 3.0f;
    std::vector<double> results[2][2];
    for (int e = 0; e < 2; ++e) {
      kiln::set_executor(executors()[e].second);
      Tensor x = Tensor::from(values, {2, 3, h, w});
      x.watch();
      kiln::GradientContext ctx;
      const Tensor y = kiln::max_pool2d(x, {2, 2});
      const Tensor dx =
          kiln::gradient(kiln::sum(y * Tensor::from(upstream, {2, 3, h / 2, w / 2})), x);
      results[e][0] = y.to_vector<double>();
      results[e][1] = dx.to_vector<double>();
    }
    EXPECT_TRUE(same_floats(results[0][0], results[1][0])) << "forward";
    EXPECT_TRUE(same_floats(results[0][1], results[1][1])) << "gradient";
  }
}

TEST(ExecutorKernels, ConvolutionsAgreeWithReference) {
  // oneDNN computes convolutions in channel blocks of 16 (AVX-512) or 8 (AVX2), which kiln's own
  // loops transpose back to planes: channel counts that fill blocks, leave a padded last block
  // or stay below one block; image sizes with a tail of positions; several images; and the
  // gradients, whose input-side result is blocked too when the input has enough channels. No
  // images, no input channels or no filters: oneDNN has no primitive, the results are empty or 0.
  ExecutorGuard guard;
  struct Case {
    std::int64_t n, c, h, w, o;
  };
  for (const Case& p : {Case{2, 16, 9, 11, 16}, Case{3, 3, 8, 8, 20}, Case{1, 24, 5, 7, 33},
                        Case{2, 8, 12, 12, 8}, Case{1, 32, 6, 6, 3}, Case{0, 3, 8, 8, 4},
                        Case{2, 0, 8, 8, 4}, Case{2, 3, 8, 8, 0}}) {
    SCOPED_TRACE("n " + std::to_string(p.n) + " c " + std::to_string(p.c) + " o " +
                 std::to_string(p.o));
    std::vector<double> got[2];
    for (int e = 0; e < 2; ++e) {
      kiln::set_executor(executors()[e].second);
      Tensor x = kiln::uniform({p.n, p.c, p.h, p.w}, 31, DType::f32);
      Tensor w = kiln::uniform({p.o, p.c, 3, 3}, 32, DType::f32);
      const Tensor upstream = kiln::uniform({p.n, p.o, p.h, p.w}, 33, DType::f32);
      x.watch();
      w.watch();
      kiln::GradientContext ctx;
      kiln::Conv2dOptions options;
      options.padding = {1, 1};
      const Tensor y = kiln::conv2d(x, w, Tensor(), options);
      const std::vector<Tensor> grads = kiln::gradients(kiln::sum(y * upstream), {x, w});
      for (const Tensor& t : {y, grads[0], grads[1]})
        for (double v : t.to_vector<double>()) got[e].push_back(v);
    }
    expect_agree(got[0], got[1], 1e-5);
  }
}

TEST(ExecutorKernels, RowMaxMinAndSoftmaxSeeNaNAnywhere) {
  // Row lengths around the 32 lanes of the vectorised row extremes; one NaN at a time in each
  // part of the row (first lanes, main loop, tail), and rows without NaN.
  ExecutorGuard guard;
  for (std::int64_t len : {1, 31, 32, 33, 64, 65, 100, 1000}) {
    for (std::int64_t at : {std::int64_t{-1}, std::int64_t{0}, len / 2, len - 1}) {
      SCOPED_TRACE("length " + std::to_string(len) + " NaN at " + std::to_string(at));
      std::vector<float> values(static_cast<std::size_t>(2 * len));
      for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<float>((i * 37) % 101) - 50.0f;
      if (at >= 0)
        values[static_cast<std::size_t>(len + at)] = std::numeric_limits<float>::quiet_NaN();
      std::vector<double> got[2];
      for (int e = 0; e < 2; ++e) {
        kiln::set_executor(executors()[e].second);
        const Tensor a = Tensor::from(values, {2, len});
        const Tensor results[] = {kiln::max(a, {1}), kiln::min(a, {1}),
                                  kiln::softmax(a * 0.01f, -1)};
        for (const Tensor& r : results) {
          const auto v = r.to_vector<double>();
          got[e].insert(got[e].end(), v.begin(), v.end());
        }
      }
      expect_agree(got[0], got[1], 1e-6);
    }
  }
}

TEST(ExecutorKernels, SoftmaxOfInfiniteRowsAgreesWithReference) {
  ExecutorGuard guard;
  const float inf = std::numeric_limits<float>::infinity();
  for (std::int64_t len : {3, 40}) {
    std::vector<float> values;
    for (float first : {inf, -inf, 1e30f, -1e30f, 0.5f}) {
      values.push_back(first);
      for (std::int64_t j = 1; j < len; ++j) values.push_back(first == -inf ? -inf : 0.25f * j);
    }
    std::vector<double> got[2];
    for (int e = 0; e < 2; ++e) {
      kiln::set_executor(executors()[e].second);
      const Tensor a = Tensor::from(values, {5, len});
      for (const Tensor& r : {kiln::softmax(a, -1), kiln::log_softmax(a, -1)}) {
        const auto v = r.to_vector<double>();
        got[e].insert(got[e].end(), v.begin(), v.end());
      }
    }
    expect_agree(got[0], got[1], 1e-6);
  }
}

// A function's value must not depend on where its argument falls in a kernel's chunk (a full
// vector or the tail): the same expression computed again elsewhere, like the backward pass's
// `x == max(x)` after a reduction with x fused in, has to give the same bits, or the maximum has
// no match and its gradient is 0/0. Each function runs over values once in order and once
// reversed (tails become vector lanes); the two results must match bit for bit.
TEST(ExecutorKernels, FunctionsGiveTheSameBitsWhereverAValueFalls) {
  ExecutorGuard guard;
  kiln::set_executor(kiln::cpu_executor());
  const std::int64_t n = 16 * 9 + 13;  // a tail for 4, 8 and 16 lanes
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::pair<const char*, Fn> functions[] = {
      {"exp", [](const Tensor& x) { return kiln::exp(x); }},
      {"log", [](const Tensor& x) { return kiln::log(x); }},
      {"sin", [](const Tensor& x) { return kiln::sin(x); }},
      {"tanh", [](const Tensor& x) { return kiln::tanh(x); }},
      {"atan", [](const Tensor& x) { return kiln::atan(x); }},
      {"erf", [](const Tensor& x) { return kiln::erf(x); }},
      {"sigmoid", [](const Tensor& x) { return kiln::sigmoid(x); }},
      {"pow", [](const Tensor& x) { return kiln::pow(x, x + 0.5); }}};
  for (const DType dtype : {DType::f32, DType::f64}) {
    const Tensor x = (kiln::uniform({n}, 5, dtype) * 3.0 + 0.25).convert(dtype);
    auto reversed = [&](const Tensor& t) { return kiln::slice(t, {n - 1}, {-n - 1}, {-1}); };
    for (const auto& [name, f] : functions) {
      SCOPED_TRACE(std::string(name) + " " + kiln::dtype_name(dtype));
      const std::vector<double> forward = f(x).to_vector<double>();
      const std::vector<double> backward = reversed(f(reversed(x))).to_vector<double>();
      for (std::int64_t i = 0; i < n; ++i)
        ASSERT_EQ(forward[static_cast<std::size_t>(i)], backward[static_cast<std::size_t>(i)])
            << "value " << i << " of " << n;
    }
  }
}

// Found by RandomGraphGradientsAgree: the maximum of log over rows of 3 (a reduction with the
// log fused in, every value in a tail) and the backward pass's comparison with it over all the
// values (most in a full vector) computed log differently, so a row's maximum could match none
// of its values and its gradient was NaN.
TEST(ExecutorKernels, GradientOfTheMaximumOfAFunctionOfEachRow) {
  ExecutorGuard guard;
  for (const auto& [name, executor] : executors()) {
    SCOPED_TRACE(name);
    kiln::set_executor(executor);
    constexpr std::int64_t kRows = 600;
    Tensor x = (kiln::uniform({kRows, 3}, 21, DType::f32) * 4.0f - 2.0f).convert(DType::f32);
    x.watch();
    kiln::GradientContext ctx;
    const Tensor m = kiln::max(kiln::log(kiln::abs(x) + 0.5f), {1});
    const Tensor y = kiln::sum(m);
    m.eval();  // the maxima first, as reading an earlier gradient does: the log is not kept
    const std::vector<double> g = kiln::gradient(y, x).to_vector<double>();
    for (std::size_t row = 0; row < kRows; ++row) {
      double total = 0;
      for (std::size_t j = 0; j < 3; ++j) {
        ASSERT_TRUE(std::isfinite(g[row * 3 + j])) << "row " << row;
        total += g[row * 3 + j] != 0;
      }
      EXPECT_EQ(total, 1) << "row " << row << ": one maximum gets the gradient";
    }
  }
}

TEST(ExecutorKernels, SoftmaxRowsOfEveryTailLengthAgreeWithReference) {
  // The vector loops end each row with one padded vector: every remainder modulo 8 and 16.
  ExecutorGuard guard;
  for (std::int64_t len = 1; len <= 40; ++len) {
    SCOPED_TRACE("row length " + std::to_string(len));
    const Tensor a = (kiln::uniform({3, len}, 51, DType::f32) * 20.0f - 10.0f).eval();
    std::vector<double> got[2];
    for (int e = 0; e < 2; ++e) {
      kiln::set_executor(executors()[e].second);
      for (const Tensor& r : {kiln::softmax(a, -1), kiln::log_softmax(a, -1)}) {
        const auto v = r.to_vector<double>();
        got[e].insert(got[e].end(), v.begin(), v.end());
      }
    }
    expect_agree(got[0], got[1], 1e-6);
  }
}

TEST(ExecutorKernels, LongRowsReadInPlaceAgreeWithReference) {
  // Rows of half a chunk or more are chunks of their own, and operands whose rows are one
  // contiguous run (a broadcast row, a slice of columns) are read in place.
  ExecutorGuard guard;
  for (std::int64_t len : {511, 512, 600, 1000, 1023, 1024, 1500}) {
    SCOPED_TRACE("row length " + std::to_string(len));
    const Tensor a = kiln::uniform({5, len + 3}, 11, DType::f32).eval();
    const Tensor row = kiln::uniform({len}, 12, DType::f32).eval();
    const Tensor column = kiln::uniform({5, 1}, 13, DType::f32).eval();
    std::vector<float> got[2];
    for (int e = 0; e < 2; ++e) {
      kiln::set_executor(executors()[e].second);
      const Tensor columns = kiln::slice(a, {0, 2}, {5, len + 2});  // rows start at an offset
      got[e] = (columns * row + column - kiln::exp(row)).to_vector<float>();
      // A reduction reads its producer in chunks that cross rows.
      got[e].push_back(kiln::sum(columns * row).item<float>());
    }
    ASSERT_EQ(got[0].size(), got[1].size());
    for (std::size_t i = 0; i < got[0].size(); ++i)
      ASSERT_NEAR(got[0][i], got[1][i], 1e-5f * (1 + std::fabs(got[0][i]))) << i;
  }
}

TEST(ExecutorKernels, WholeRowKernelsAgreeWithReference) {
  // Kernels over rows of half a chunk or more, whose loads all advance by a fixed step per row
  // (a slice of columns: the row pitch; a broadcast row: 0), locate their loads once per range
  // of rows. Enough rows that two threads start ranges part-way down; f32 chains with constants
  // (every step a direct float loop), an f64 chain and a mixed i32/f32 one (steps with
  // conversions), a kernel that also stores an intermediate, and one that overwrites a buffer
  // it reads.
  ExecutorGuard guard;
  for (int threads : {1, 2}) {
    kiln::set_num_threads(threads);
    for (std::int64_t len : {512, 777, 1000, 1023}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", row length " + std::to_string(len));
      const Tensor a = kiln::uniform({67, len + 5}, 21, DType::f32).eval();
      const Tensor row = kiln::uniform({len}, 22, DType::f32).eval();
      const Tensor counts = kiln::arange({67, len}, 1).convert(DType::i32).eval();
      std::vector<double> got[2];
      for (int e = 0; e < 2; ++e) {
        kiln::set_executor(executors()[e].second);
        const Tensor columns = kiln::slice(a, {0, 3}, {67, len + 3});
        std::vector<Tensor> results;
        results.push_back(kiln::exp(columns * row + 0.5f) - kiln::sin(row) / 3.0f);
        results.push_back(columns.convert(DType::f64) * row.convert(DType::f64) - 1.0);
        results.push_back(counts * row + columns);
        Tensor shared = columns - row;
        Tensor after = kiln::abs(shared) * 2.0f;
        kiln::eval_all({shared, after});
        results.push_back(shared);
        results.push_back(after);
        Tensor in_place = (columns + row).eval();
        in_place = in_place * row + kiln::slice(in_place, {0, 0}, {67, len});
        results.push_back(in_place);
        for (const Tensor& r : results)
          for (double v : r.convert(DType::f64).to_vector<double>()) got[e].push_back(v);
      }
      expect_agree(got[0], got[1], 1e-5);
    }
  }
}

TEST(ExecutorKernels, StreamingKernelsAgreeWithReference) {
  // Sources of 8 MiB or more are streamed: shorter chunks, each prefetching a later one; rows of
  // half a chunk or more (1001 values) in pieces. A length that leaves a partial last piece, an
  // operand broadcast down the columns (read through a view, not in place, so not by rows), a
  // kernel that also stores an intermediate, reductions of rows, of columns and of everything
  // (split over the threads) with the producers fused in, and 1 and 2 threads.
  ExecutorGuard guard;
  const std::int64_t rows = 2101, cols = 1001;  // over 8 MiB of f32
  const Tensor a = kiln::uniform({rows, cols}, 41, DType::f32).eval();
  const Tensor b = kiln::uniform({rows, cols}, 42, DType::f32).eval();
  const Tensor column = kiln::uniform({rows, 1}, 43, DType::f32).eval();
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    kiln::set_num_threads(threads);
    std::vector<double> got[2];
    for (int e = 0; e < 2; ++e) {
      kiln::set_executor(executors()[e].second);
      std::vector<Tensor> results;
      results.push_back(kiln::exp(kiln::sin(a) * b + 0.25f) / 2.0f);
      results.push_back(a * column - b);
      results.push_back(kiln::sum(kiln::exp(kiln::sin(a) * b), {1}));
      results.push_back(kiln::sum(kiln::exp(kiln::sin(a) * b), {0}));
      results.push_back(kiln::max(a * b - column, {1}));
      results.push_back(kiln::sum(a * b) / 1e4f);
      Tensor shared = a + b;
      Tensor after = kiln::sqrt(shared) * 3.0f;
      kiln::eval_all({shared, after});
      results.push_back(shared);
      results.push_back(after);
      for (const Tensor& r : results)
        for (double v : r.convert(DType::f64).to_vector<double>()) got[e].push_back(v);
    }
    expect_agree(got[0], got[1], 1e-5);
  }
}

TEST(ExecutorKernels, ColumnAndLongRowReductionsAgreeWithReference) {
  // Column reductions read row after row; with fewer column blocks than threads the rows are
  // split into parts combined at the end (2 threads here). Long contiguous rows are summed in
  // one pass with float lanes folded into doubles.
  ExecutorGuard guard;
  kiln::set_num_threads(2);
  struct Case {
    Shape shape;
    int axis;
  };
  const Case cases[] = {{{1000, 37}, 0}, {{3, 500, 9}, 1}, {{130, 5000}, 0}, {{2, 3000}, 0}};
  for (const Case& c : cases) {
    for (DType type : {DType::f32, DType::f64, DType::i32}) {
      SCOPED_TRACE(kiln::shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " " +
                   kiln::dtype_name(type));
      // Values with ties (for argmax/argmin) and of both signs.
      const Tensor a =
          kiln::convert(kiln::convert(kiln::uniform(c.shape, 31, DType::f64) * 40.0 - 20.0, DType::i32), type)
              .eval();
      std::vector<std::vector<double>> got[2];
      for (int e = 0; e < 2; ++e) {
        kiln::set_executor(executors()[e].second);
        for (const Tensor& r :
             {kiln::sum(a, {c.axis}), kiln::mean(a, {c.axis}), kiln::max(a, {c.axis}),
              kiln::min(a, {c.axis}), kiln::argmax(a, c.axis), kiln::argmin(a, c.axis),
              kiln::prod(kiln::sign(a) + 0 * a, {c.axis})})
          got[e].push_back(r.to_vector<double>());
      }
      for (std::size_t i = 0; i < got[0].size(); ++i) {
        SCOPED_TRACE("reduction " + std::to_string(i));
        expect_agree(got[0][i], got[1][i], 1e-6);
      }
    }
  }
  // Column sums of f32 values read eight rows at a time: in place (with a remainder of rows)
  // and through a transposed view, which cannot be read in place. Values with fractions, so a
  // row counted twice or skipped, or another order of additions, shows.
  for (const Tensor& in : {kiln::uniform({203, 1500}, 7, DType::f32).eval(),
                           kiln::reverse_dims(kiln::uniform({1500, 203}, 8, DType::f32).eval())}) {
    std::vector<double> got[2];
    for (int e = 0; e < 2; ++e) {
      kiln::set_executor(executors()[e].second);
      got[e] = kiln::sum(in, {0}).to_vector<double>();
    }
    expect_agree(got[0], got[1], 1e-6);
  }
  // A long row of floats whose float-only sum would drift: 4M values of 0.1.
  const Tensor tenths = kiln::full({1 << 22}, 0.1f, DType::f32).eval();
  const Tensor copy = (tenths + 0.0f).eval();  // a computed buffer, read in place
  kiln::set_executor(kiln::cpu_executor());
  EXPECT_NEAR(kiln::sum(copy).item<double>(), 0.1 * (1 << 22), 0.1 * (1 << 22) * 1e-6);
}

TEST(ExecutorKernels, GatherAgreesWithReference) {
  ExecutorGuard guard;
  std::mt19937 rng(77);
  const Tensor source = kiln::reshape(kiln::arange(2 * 5 * 7), {2, 5, 7});  // a reshaped view
  for (int axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    Shape shape{2, 4, 6};
    shape[static_cast<std::size_t>(axis)] = 9;  // more picks than the axis has
    std::vector<std::int32_t> picks(static_cast<std::size_t>(count_of(shape)));
    const auto size = source.shape()[static_cast<std::size_t>(axis)];
    for (auto& k : picks) k = static_cast<std::int32_t>(static_cast<std::int64_t>(rng()) % size);
    const Tensor indices = Tensor::from(picks, shape);
    std::vector<std::int64_t> got[2];
    for (int e = 0; e < 2; ++e) {
      kiln::set_executor(executors()[e].second);
      got[e] = kiln::gather(source, axis, indices).to_vector<std::int64_t>();
    }
    EXPECT_EQ(got[0], got[1]);
  }
  // index_select of rows, as a batch iterator draws them (indices behind a broadcast view).
  const Tensor images = kiln::uniform({10, 1, 3, 3}, 5, DType::f32);
  const Tensor rows = Tensor::from(std::vector<std::int64_t>{7, 0, 7, 9}, {4});
  std::vector<float> picked[2];
  for (int e = 0; e < 2; ++e) {
    kiln::set_executor(executors()[e].second);
    picked[e] = kiln::index_select(images, 0, rows).to_vector<float>();
  }
  EXPECT_EQ(picked[0], picked[1]);
  // An index known only at evaluation is checked there, with the op and the bound named.
  kiln::set_executor(kiln::cpu_executor());
  const Tensor computed = kiln::convert(kiln::arange(3), DType::i64) * std::int64_t{4};  // 0 4 8
  try {
    kiln::gather(kiln::arange(5), 0, computed).eval();
    ADD_FAILURE() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), kiln::ErrorCode::invalid_select);
    EXPECT_NE(std::string(e.what()).find("gather: index 8 out of range for a dimension of size 5"),
              std::string::npos)
        << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Kernels that store several results
// ---------------------------------------------------------------------------------------------

std::vector<kiln::detail::Kernel> schedule_of(const std::vector<Tensor>& targets) {
  std::vector<kiln::detail::Node*> nodes;
  for (const Tensor& t : targets) nodes.push_back(t.node().get());
  return kiln::detail::schedule(nodes);
}

TEST(ExecutorMultiOutput, OptimiserStepIsOnePass) {
  // Adam's shape: new state m and v, and a new value computed from them; all three are wanted.
  ExecutorGuard guard;
  const Tensor g = kiln::uniform({300, 7}, 1, DType::f32);
  const Tensor m0 = kiln::uniform({300, 7}, 2, DType::f32).eval();
  const Tensor v0 = kiln::uniform({300, 7}, 3, DType::f32).eval();
  const Tensor x0 = kiln::uniform({300, 7}, 4, DType::f32).eval();
  g.eval();
  auto step = [&] {
    const Tensor m = m0 * 0.9f + g * 0.1f;
    const Tensor v = v0 * 0.99f + kiln::square(g) * 0.01f;
    const Tensor x = x0 - m * 0.001f / (kiln::sqrt(v) + 1e-8f);
    return std::vector<Tensor>{x, m, v};
  };
  const auto kernels = schedule_of(step());
  ASSERT_EQ(kernels.size(), 1u) << kiln::detail::describe(kernels);
  EXPECT_EQ(kernels[0].stored.size(), 2u);
  std::vector<std::vector<double>> got[2];
  for (int e = 0; e < 2; ++e) {
    kiln::set_executor(executors()[e].second);
    std::vector<Tensor> t = step();
    kiln::eval_all(t);
    for (const Tensor& r : t) got[e].push_back(r.to_vector<double>());
  }
  for (int i = 0; i < 3; ++i) expect_agree(got[0][i], got[1][i], 1e-5);
}

TEST(ExecutorMultiOutput, ResultsReadOutOfOrderOrTwiceStayApart) {
  ExecutorGuard guard;
  const Tensor a = kiln::uniform({6, 6}, 5, DType::f64);
  const Tensor b = kiln::uniform({6, 6}, 6, DType::f64);
  a.eval();
  b.eval();
  // u is read transposed by its consumer: merging would read it in the wrong order.
  const Tensor u = kiln::exp(a) + b;
  const Tensor w = u * kiln::transpose(u, 0, 1);
  EXPECT_EQ(schedule_of({w}).size(), 2u);
  // t has two consuming kernels (y and a sum): it stays a kernel of its own.
  const Tensor t = a * b + 1.0;
  const Tensor y = kiln::sin(t) * kiln::sum(t);
  EXPECT_EQ(schedule_of({y}).size(), 3u);
  std::vector<double> got[2][2];
  for (int e = 0; e < 2; ++e) {
    kiln::set_executor(executors()[e].second);
    const Tensor u2 = kiln::exp(a) + b;
    got[e][0] = (u2 * kiln::transpose(u2, 0, 1)).to_vector<double>();
    const Tensor t2 = a * b + 1.0;
    got[e][1] = (kiln::sin(t2) * kiln::sum(t2)).to_vector<double>();
  }
  for (int i = 0; i < 2; ++i) expect_agree(got[0][i], got[1][i], 1e-12);
}

}  // namespace
