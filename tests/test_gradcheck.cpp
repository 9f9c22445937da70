// Gradient check sweep: every differentiable op, in float64, against central finite
// differences. One table; each row names a function of its f64 inputs, the input shapes and
// (optionally) how to draw the inputs. For each row the check watches every input, builds
// y = sum(f(inputs) * w) with a fixed random weight tensor w (so the gradient flowing into f is
// not all ones) inside a GradientContext, asks kiln::gradients for dy/dinput and compares each
// element with (y(x + h) - y(x - h)) / 2h, h = 1e-6 * max(1, |x|), computed by rebuilding the
// function on perturbed copies of the input values. The relative error
// |a - n| / max(1, |a|, |n|) must stay below 1e-6.
//
// With h = 1e-6 the truncation error is about h^2 |y'''| / 6 ~ 1e-13 and the rounding error about
// eps |y| / h ~ 1e-10 |y|; the inputs are drawn so that |y| stays small (tens at most) and no
// input lies within h of a kink (relu, abs, min/max ties, window maxima), so 1e-6 holds with a
// wide margin for every row.
//
// A second sweep (GradCheckSecondOrder) runs the same table through a gradient of the gradient:
// z = sum_i sum(dy/dx_i * v_i) for fixed random v, built in a gradient context, differentiated
// again and compared with central differences of z. This checks that every gradient rule is
// itself built from differentiable ops with correct gradients (second derivatives).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/losses.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

using F64 = std::vector<double>;
using I64 = std::vector<std::int64_t>;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;
using Rng = std::mt19937_64;
// The values of input number `which`, which has `n` elements.
using Gen = std::function<F64(Rng& rng, std::size_t which, std::int64_t n)>;

struct Row {
  std::string name;
  Fn f;
  std::vector<Shape> shapes;
  Gen gen = {};  // empty: signed values with magnitudes in [0.1, 1.5]
  double tol = 1e-6;
  // False only where a second derivative is not defined by the op's contract: map_elements is
  // differentiated with the user's f', and no f'' is given (asking is an illegal_derive error,
  // checked in test_autodiff.cpp).
  bool second_order = true;
};

using kiln_test::numel_of;

double uniform_in(Rng& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

// ---- input generators -------------------------------------------------------------------------

// Magnitudes in [lo, hi], with a random sign when `with_sign`.
Gen magnitudes(double lo, double hi, bool with_sign) {
  return [=](Rng& rng, std::size_t, std::int64_t n) {
    F64 v(static_cast<std::size_t>(n));
    for (double& x : v) {
      x = uniform_in(rng, lo, hi);
      if (with_sign && (rng() & 1u)) x = -x;
    }
    return v;
  };
}
Gen signed_values() { return magnitudes(0.1, 1.5, true); }  // away from the kink at 0
Gen positive() { return magnitudes(0.5, 2.0, false); }       // log, sqrt, pow base, ...
Gen above_one() { return magnitudes(1.2, 3.0, false); }      // acosh
Gen inside_unit() {                                          // asin, acos, atanh
  return [](Rng& rng, std::size_t, std::int64_t n) {
    F64 v(static_cast<std::size_t>(n));
    for (double& x : v) x = uniform_in(rng, -0.9, 0.9);
    return v;
  };
}
// Values distinct across all inputs of the row (gaps of at least 0.02 >> h), in random order:
// no ties for min/max/minimum/maximum/max pooling.
Gen distinct() {
  return [](Rng& rng, std::size_t which, std::int64_t n) {
    F64 v(static_cast<std::size_t>(n));
    for (std::int64_t m = 0; m < n; ++m)
      v[static_cast<std::size_t>(m)] =
          static_cast<double>(m * 4 + static_cast<std::int64_t>(which)) * 0.021 -
          static_cast<double>(n) * 0.04 + 0.003;
    std::shuffle(v.begin(), v.end(), rng);
    return v;
  };
}
// One generator per input (the last one repeats).
Gen per_input(std::vector<Gen> gens) {
  return [gens](Rng& rng, std::size_t which, std::int64_t n) {
    const Gen& g = gens[std::min(which, gens.size() - 1)];
    return g ? g(rng, which, n) : signed_values()(rng, which, n);
  };
}
// [3, 4] values with exact zeros at [0,1], [1,0] and [1,3]: row 0 and columns 0, 1, 3 hold one
// zero, row 1 holds two, row 2 and column 2 none.
Gen with_zeros() {
  return [](Rng& rng, std::size_t which, std::int64_t n) {
    F64 v = magnitudes(0.6, 1.4, true)(rng, which, n);
    v[1] = 0.0;
    v[4] = 0.0;
    v[7] = 0.0;
    return v;
  };
}

// Signed magnitudes in [0.1, 0.9] or [1.1, 1.5]: away from the kinks of clamp(x, -1, 1).
Gen away_from_one() {
  return [](Rng& rng, std::size_t which, std::int64_t n) {
    F64 v = magnitudes(0.1, 1.3, true)(rng, which, n);
    for (double& x : v)
      if (std::abs(x) > 0.9) x += x > 0 ? 0.2 : -0.2;
    return v;
  };
}

// ---- helpers for building rows ----------------------------------------------------------------

Tensor i64(const I64& v, Shape s) { return Tensor::from(v, std::move(s)); }
Tensor i32(const std::vector<std::int32_t>& v, Shape s) { return Tensor::from(v, std::move(s)); }

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
using Unary = std::function<Tensor(const Tensor&)>;

std::vector<Row> build_table() {
  std::vector<Row> t;
  auto add = [&t](Row r) { t.push_back(std::move(r)); };

  // ---- unary elementwise: each on [2,3] and on a 0-d tensor -----------------------------------
  struct UnaryOp {
    const char* name;
    Unary fn;
    Gen gen;
  };
  const std::vector<UnaryOp> unary = {
      {"sqrt", [](const Tensor& a) { return kiln::sqrt(a); }, positive()},
      {"exp", [](const Tensor& a) { return kiln::exp(a); }, {}},
      {"expm1", [](const Tensor& a) { return kiln::expm1(a); }, {}},
      {"log", [](const Tensor& a) { return kiln::log(a); }, positive()},
      {"log2", [](const Tensor& a) { return kiln::log2(a); }, positive()},
      {"log10", [](const Tensor& a) { return kiln::log10(a); }, positive()},
      {"log1p", [](const Tensor& a) { return kiln::log1p(a); }, magnitudes(0.0, 0.6, true)},
      {"sin", [](const Tensor& a) { return kiln::sin(a); }, {}},
      {"cos", [](const Tensor& a) { return kiln::cos(a); }, {}},
      {"tan", [](const Tensor& a) { return kiln::tan(a); }, magnitudes(0.0, 1.2, true)},
      {"asin", [](const Tensor& a) { return kiln::asin(a); }, inside_unit()},
      {"acos", [](const Tensor& a) { return kiln::acos(a); }, inside_unit()},
      {"atan", [](const Tensor& a) { return kiln::atan(a); }, {}},
      {"sinh", [](const Tensor& a) { return kiln::sinh(a); }, {}},
      {"cosh", [](const Tensor& a) { return kiln::cosh(a); }, {}},
      {"tanh", [](const Tensor& a) { return kiln::tanh(a); }, {}},
      {"asinh", [](const Tensor& a) { return kiln::asinh(a); }, {}},
      {"acosh", [](const Tensor& a) { return kiln::acosh(a); }, above_one()},
      {"atanh", [](const Tensor& a) { return kiln::atanh(a); }, inside_unit()},
      {"square", [](const Tensor& a) { return kiln::square(a); }, {}},
      {"reciprocal", [](const Tensor& a) { return kiln::reciprocal(a); },
       magnitudes(0.4, 1.5, true)},
      {"sigmoid", [](const Tensor& a) { return kiln::sigmoid(a); }, {}},
      {"relu", [](const Tensor& a) { return kiln::relu(a); }, {}},
      {"abs", [](const Tensor& a) { return kiln::abs(a); }, {}},
      {"neg", [](const Tensor& a) { return kiln::neg(a); }, {}},
      {"neg_operator", [](const Tensor& a) { return -a; }, {}},
      {"erf", [](const Tensor& a) { return kiln::erf(a); }, {}},
      {"gelu", [](const Tensor& a) { return kiln::gelu(a); }, magnitudes(0.0, 3.0, true)},
  };
  for (const UnaryOp& op : unary) {
    Unary fn = op.fn;
    add({op.name, [fn](const Inputs& x) { return fn(x[0]); }, {{2, 3}}, op.gen});
    add({std::string(op.name) + "_0d", [fn](const Inputs& x) { return fn(x[0]); }, {{}}, op.gen});
  }

  // ---- binary elementwise, with every broadcasting mode ---------------------------------------
  struct BinaryOp {
    const char* name;
    Binary fn;
    Gen gen;
  };
  const std::vector<BinaryOp> binary = {
      {"add", [](const Tensor& a, const Tensor& b) { return kiln::add(a, b); }, {}},
      {"sub", [](const Tensor& a, const Tensor& b) { return kiln::sub(a, b); }, {}},
      {"mul", [](const Tensor& a, const Tensor& b) { return kiln::mul(a, b); }, {}},
      {"div", [](const Tensor& a, const Tensor& b) { return kiln::div(a, b); },
       per_input({signed_values(), magnitudes(0.5, 1.5, true)})},
      {"pow", [](const Tensor& a, const Tensor& b) { return kiln::pow(a, b); },
       per_input({positive(), magnitudes(0.0, 2.0, true)})},
      {"minimum", [](const Tensor& a, const Tensor& b) { return kiln::minimum(a, b); },
       distinct()},
      {"maximum", [](const Tensor& a, const Tensor& b) { return kiln::maximum(a, b); },
       distinct()},
  };
  struct Layout {
    const char* name;
    Shape a, b;
    bool mark_a, mark_b;  // operands marked with inverse_broadcast()
  };
  const std::vector<Layout> layouts = {
      {"same", {2, 3}, {2, 3}, false, false},
      {"normal_2x3_3", {2, 3}, {3}, false, false},
      {"normal_3_2x3", {3}, {2, 3}, false, false},
      {"inverse_2x3_2", {2, 3}, {2}, false, true},  // aligned at the left by the mark
      {"inverse_2_2x3", {2}, {2, 3}, true, false},
      {"inverse_2x3x2_2x3", {2, 3, 2}, {2, 3}, false, true},
      {"ones_2x1_1x3", {2, 1}, {1, 3}, false, false},
      {"marked_b_3x3_3", {3, 3}, {3}, false, true},  // normal would fit; the mark wins
      {"marked_a_3_3x3", {3}, {3, 3}, true, false},
      {"marked_b_3x3_3x1", {3, 3}, {3, 1}, false, true},
      {"scalar_2x3_0d", {2, 3}, {}, false, false},
  };
  for (const BinaryOp& op : binary) {
    for (const Layout& l : layouts) {
      Binary fn = op.fn;
      const bool ma = l.mark_a, mb = l.mark_b;
      add({std::string(op.name) + "_" + l.name,
           [fn, ma, mb](const Inputs& x) {
             return fn(ma ? x[0].inverse_broadcast() : x[0], mb ? x[1].inverse_broadcast() : x[1]);
           },
           {l.a, l.b}, op.gen});
    }
  }
  // The scalar forms (the scalar is a constant).
  add({"add_scalar", [](const Inputs& x) { return x[0] + 2.5; }, {{2, 3}}});
  add({"scalar_sub", [](const Inputs& x) { return 1.5 - x[0]; }, {{2, 3}}});
  add({"mul_scalar", [](const Inputs& x) { return x[0] * -3.0; }, {{2, 3}}});
  add({"div_scalar", [](const Inputs& x) { return x[0] / 3.0; }, {{2, 3}}});
  add({"scalar_div", [](const Inputs& x) { return 2.0 / x[0]; }, {{2, 3}},
       magnitudes(0.5, 1.5, true)});
  add({"pow_scalar_exponent", [](const Inputs& x) { return kiln::pow(x[0], 2.5); }, {{2, 3}},
       positive()});
  // A negative base with an integral exponent is fine for the base's gradient.
  add({"pow_negative_base_cube", [](const Inputs& x) { return kiln::pow(x[0], 3.0); }, {{2, 3}}});
  add({"pow_scalar_base", [](const Inputs& x) { return kiln::pow(2.0, x[0]); }, {{2, 3}}});
  add({"minimum_scalar", [](const Inputs& x) { return kiln::minimum(x[0], 0.01); }, {{2, 3}}});
  add({"maximum_scalar", [](const Inputs& x) { return kiln::maximum(0.01, x[0]); }, {{2, 3}}});
  // A broadcast expression with several ops and both modes at once.
  add({"broadcast_expression",
       [](const Inputs& x) {
         return (x[0] * x[1] + x[2].inverse_broadcast()) / kiln::exp(x[1]) -
                x[0] * x[2].inverse_broadcast();
       },
       {{2, 3}, {3}, {2}}});
  add({"same_input_twice", [](const Inputs& x) { return x[0] * kiln::sin(x[0]) + x[0]; },
       {{2, 3}}});

  // ---- where ------------------------------------------------------------------------------------
  auto cond23 = [] { return i32({1, 0, 0, 1, 1, 0}, {2, 3}); };
  add({"where",
       [cond23](const Inputs& x) { return kiln::where(cond23(), x[0], x[1]); },
       {{2, 3}, {2, 3}}});
  add({"where_broadcast_b",
       [cond23](const Inputs& x) { return kiln::where(cond23(), x[0], x[1]); },
       {{2, 3}, {3}}});
  add({"where_inverse_b",
       [cond23](const Inputs& x) { return kiln::where(cond23(), x[0], x[1].inverse_broadcast()); },
       {{2, 3}, {2}}});
  add({"where_broadcast_cond",
       [](const Inputs& x) { return kiln::where(i32({0, 1, 1}, {3}), x[0], x[1]); },
       {{2, 3}, {2, 1}}});
  add({"where_data_dependent",  // the condition is computed from the input (no gradient there)
       [](const Inputs& x) { return kiln::where(kiln::greater(x[0], 0.0), x[0] * x[0], -x[0]); },
       {{2, 3}}});

  // ---- reductions -------------------------------------------------------------------------------
  struct Reduction {
    const char* name;
    std::function<Tensor(const Tensor&, std::vector<int>, bool)> fn;
    Gen gen;
  };
  const std::vector<Reduction> reductions = {
      {"sum", [](const Tensor& a, std::vector<int> ax, bool k) { return kiln::sum(a, ax, k); },
       {}},
      {"prod", [](const Tensor& a, std::vector<int> ax, bool k) { return kiln::prod(a, ax, k); },
       magnitudes(0.6, 1.4, true)},
      {"mean", [](const Tensor& a, std::vector<int> ax, bool k) { return kiln::mean(a, ax, k); },
       {}},
      {"min", [](const Tensor& a, std::vector<int> ax, bool k) { return kiln::min(a, ax, k); },
       distinct()},
      {"max", [](const Tensor& a, std::vector<int> ax, bool k) { return kiln::max(a, ax, k); },
       distinct()},
  };
  struct Axes {
    const char* name;
    std::vector<int> axes;
    bool keepdims;
  };
  const std::vector<Axes> axes_list = {
      {"all", {}, false},           {"all_keepdims", {}, true}, {"axis1", {1}, false},
      {"axes0_2", {0, 2}, false},   {"last_keepdims", {-1}, true},
      {"axes0_1_keepdims", {0, 1}, true},
  };
  for (const Reduction& r : reductions) {
    for (const Axes& a : axes_list) {
      auto fn = r.fn;
      const std::vector<int> axes = a.axes;
      const bool keep = a.keepdims;
      add({std::string(r.name) + "_" + a.name,
           [fn, axes, keep](const Inputs& x) { return fn(x[0], axes, keep); }, {{2, 3, 4}},
           r.gen});
    }
  }
  // prod with exact zeros: one zero in a group gives that zero the product of the others and the
  // others 0; two zeros in a group give every element 0.
  add({"prod_zeros_axis1", [](const Inputs& x) { return kiln::prod(x[0], {1}); }, {{3, 4}},
       with_zeros()});
  add({"prod_zeros_axis0_keepdims", [](const Inputs& x) { return kiln::prod(x[0], {0}, true); },
       {{3, 4}}, with_zeros()});
  add({"prod_zeros_all", [](const Inputs& x) { return kiln::prod(x[0]); }, {{3, 4}},
       with_zeros()});
  add({"sum_method", [](const Inputs& x) { return x[0].sum({0}) * x[0].mean(); }, {{2, 3}}});

  // ---- matmul and dot ---------------------------------------------------------------------------
  auto mm = [](const Inputs& x) { return kiln::matmul(x[0], x[1]); };
  add({"matmul", mm, {{3, 4}, {4, 2}}});
  add({"matmul_batch_a", mm, {{2, 3, 4}, {4, 5}}});
  add({"matmul_batch_b", mm, {{4, 5}, {2, 5, 3}}});
  add({"matmul_batch_both", mm, {{2, 1, 3, 4}, {3, 4, 2}}});
  add({"matmul_chain",
       [](const Inputs& x) { return kiln::matmul(kiln::matmul(x[0], x[1]), x[2]); },
       {{2, 3}, {3, 4}, {4, 2}}});
  add({"dot", [](const Inputs& x) { return kiln::dot(x[0], x[1]); }, {{5}, {5}}});

  // ---- views and other shape ops ----------------------------------------------------------------
  add({"reshape", [](const Inputs& x) { return kiln::reshape(x[0], {4, 6}); }, {{2, 3, 4}}});
  add({"reshape_inferred", [](const Inputs& x) { return x[0].reshape({-1, 2}); }, {{2, 3, 4}}});
  add({"flatten", [](const Inputs& x) { return kiln::flatten(x[0]); }, {{2, 3, 4}}});
  add({"flatten_axis",
       [](const Inputs& x) { return kiln::flatten_dimension(x[0], 2); },
       {{2, 3, 4}}});
  add({"permute", [](const Inputs& x) { return kiln::permute(x[0], {2, 0, 1}); }, {{2, 3, 4}}});
  add({"transpose", [](const Inputs& x) { return kiln::reverse_dims(x[0]); }, {{2, 3, 4}}});
  add({"transpose_axes", [](const Inputs& x) { return kiln::transpose(x[0], 0, 2); },
       {{2, 3, 4}}});
  add({"slice", [](const Inputs& x) { return x[0].slice({0, 1, 0}, {3, 4, 5}, {2, 1, 2}); },
       {{3, 4, 5}}});
  add({"slice_negative_steps",
       [](const Inputs& x) { return x[0].slice({2, 3, 4}, {0, 0, 0}, {-1, -2, -3}); },
       {{3, 4, 5}}});
  add({"slice_negative_bounds",
       [](const Inputs& x) { return kiln::slice(x[0], {-1, 1}, {-4, -1}, {-2, 1}); },
       {{4, 5}}});
  add({"slice_axis", [](const Inputs& x) { return kiln::slice_axis(x[0], 1, 3, 0, -2); },
       {{2, 4}}});
  add({"pad", [](const Inputs& x) { return kiln::pad(x[0], {1, 0, 2}, {0, 2, 1}); },
       {{2, 3, 2}}});
  add({"pad_value", [](const Inputs& x) { return kiln::pad(x[0], {2, 1}, {1, 0}, 1.5); },
       {{2, 3}}});
  add({"broadcast_to", [](const Inputs& x) { return kiln::broadcast_to(x[0], {2, 3}); }, {{3}}});
  add({"broadcast_to_ones", [](const Inputs& x) { return kiln::broadcast_to(x[0], {2, 3, 4}); },
       {{3, 1}}});
  add({"broadcast_to_inverse",
       [](const Inputs& x) { return kiln::broadcast_to(x[0], {2, 3}, true); }, {{2}}});
  add({"broadcast_to_inverse_rank3",
       [](const Inputs& x) { return kiln::broadcast_to(x[0], {2, 3, 4}, true); }, {{2, 3}}});
  add({"expand", [](const Inputs& x) { return kiln::unsqueeze_expand(x[0], 1, 4); }, {{2, 3}}});
  add({"expand_last",
       [](const Inputs& x) { return kiln::unsqueeze_expand(x[0], 2, 3); },
       {{2, 3}}});
  add({"repeat", [](const Inputs& x) { return kiln::repeat(x[0], {2, 3}); }, {{2, 3}}});
  add({"extend", [](const Inputs& x) { return kiln::extend(x[0], {3, 5}, {1, 1}); }, {{2, 3}}});
  add({"extend_steps",
       [](const Inputs& x) { return kiln::extend(x[0], {4, 7}, {1, 0}, {2, -2}); }, {{2, 3}}});
  add({"extend_negative_step",
       [](const Inputs& x) { return kiln::extend(x[0], {3, 4}, {0, 1}, {-1, 1}); }, {{2, 3}}});
  add({"squeeze_all", [](const Inputs& x) { return kiln::squeeze(x[0]); }, {{2, 1, 3, 1}}});
  add({"squeeze_axis", [](const Inputs& x) { return x[0].squeeze(1); }, {{2, 1, 3, 1}}});
  add({"unsqueeze", [](const Inputs& x) { return kiln::unsqueeze(x[0], 0); }, {{2, 3}}});
  add({"unsqueeze_last", [](const Inputs& x) { return x[0].unsqueeze(-1); }, {{2, 3}}});
  add({"concat3_axis1",
       [](const Inputs& x) { return kiln::concat({x[0], x[1], x[2]}, 1); },
       {{2, 3}, {2, 1}, {2, 2}}});
  add({"concat3_axis0",
       [](const Inputs& x) { return kiln::concat({x[0], x[1], x[2]}, 0); },
       {{1, 3}, {2, 3}, {3, 3}}});
  add({"concat_same_twice", [](const Inputs& x) { return kiln::concat(x[0], x[0], -1); },
       {{2, 2}}});
  add({"contiguous", [](const Inputs& x) { return kiln::contiguous(kiln::permute(x[0], {1, 0})); },
       {{2, 3}}});
  add({"convert_f64", [](const Inputs& x) { return kiln::convert(x[0], DType::f64); },
       {{2, 3}}});
  add({"view_chain",
       [](const Inputs& x) {
         Tensor t = kiln::pad(x[0], {1, 0}, {0, 1});
         t = kiln::reverse_dims(t).slice({3, 0}, {0, 3}, {-1, 2});
         return kiln::reshape(kiln::unsqueeze_expand(t, 0, 2), {-1}) * kiln::sum(x[0]);
       },
       {{3, 3}}});

  // ---- windows: convolution, pooling, sliding windows -------------------------------------------
  add({"convolve_one_filter", [](const Inputs& x) { return kiln::convolve(x[0], x[1], {1}); },
       {{5, 3}, {2, 3}}});
  add({"convolve_2d_steps", [](const Inputs& x) { return kiln::convolve(x[0], x[1], {2, 1}); },
       {{5, 4, 2}, {2, 3, 2}}});
  add({"convolve_filters", [](const Inputs& x) { return kiln::convolve(x[0], x[1], {1, 2}); },
       {{5, 4, 2}, {3, 2, 2, 2}}});
  add({"conv2d_stride_padding_bias",
       [](const Inputs& x) {
         kiln::Conv2dOptions o;
         o.stride = {2, 1};
         o.padding = {1, 1};
         return kiln::conv2d(x[0], x[1], x[2], o);
       },
       {{1, 2, 5, 4}, {3, 2, 3, 3}, {3}}});
  add({"conv2d_dilation",
       [](const Inputs& x) {
         kiln::Conv2dOptions o;
         o.dilation = {2, 1};
         o.padding = {0, 1};
         return kiln::conv2d(x[0], x[1], Tensor(), o);
       },
       {{2, 1, 5, 4}, {2, 1, 2, 2}}});
  add({"conv2d_unbatched", [](const Inputs& x) { return kiln::conv2d(x[0], x[1], x[2]); },
       {{2, 4, 4}, {2, 2, 2, 2}, {2}}});
  add({"conv1d_stride_padding_dilation_bias",
       [](const Inputs& x) {
         return kiln::conv1d(x[0], x[1], x[2], {.stride = 2, .padding = 1, .dilation = 2});
       },
       {{2, 3, 7}, {2, 3, 2}, {2}}});
  add({"conv2d_groups",
       [](const Inputs& x) {
         return kiln::conv2d(x[0], x[1], Tensor(),
                             {.stride = {2, 1}, .padding = {1, 0}, .groups = 2});
       },
       {{2, 4, 5, 4}, {6, 2, 3, 2}}});
  add({"conv3d_groups_stride_padding_bias",
       [](const Inputs& x) {
         return kiln::conv3d(x[0], x[1], x[2],
                             {.stride = {2, 1, 1}, .padding = {1, 0, 1}, .groups = 2});
       },
       {{1, 4, 4, 3, 3}, {2, 2, 2, 2, 2}, {2}}});
  add({"conv_transpose2d_stride_output_padding_bias",
       [](const Inputs& x) {
         return kiln::conv_transpose2d(
             x[0], x[1], x[2], {.stride = {2, 1}, .padding = {1, 0}, .output_padding = {1, 0}});
       },
       {{1, 2, 3, 3}, {2, 3, 3, 2}, {3}}});
  add({"conv_transpose2d_groups_dilation",
       [](const Inputs& x) {
         return kiln::conv_transpose2d(x[0], x[1], Tensor(), {.dilation = {1, 2}, .groups = 2});
       },
       {{2, 4, 2, 3}, {4, 1, 2, 2}}});
  add({"pooling_sum", [](const Inputs& x) { return kiln::pooling_sum(x[0], {2, 2}, {1, 2}); },
       {{5, 4, 2}}});
  add({"pooling_max", [](const Inputs& x) { return kiln::pooling_max(x[0], {2, 2}, {1, 2}); },
       {{5, 4, 2}}, distinct()});
  add({"pooling_max_1d", [](const Inputs& x) { return kiln::pooling_max(x[0], {3}, {2}); },
       {{7, 2}}, distinct()});
  add({"max_pool2d", [](const Inputs& x) { return kiln::max_pool2d(x[0], {2, 2}); },
       {{1, 2, 4, 4}}, distinct()});
  add({"max_pool2d_options",
       [](const Inputs& x) {
         kiln::Pool2dOptions o;
         o.stride = {2, 1};
         o.padding = {1, 0};
         o.dilation = {1, 2};
         return kiln::max_pool2d(x[0], {2, 2}, o);
       },
       {{2, 5, 5}}, distinct()});
  add({"avg_pool2d", [](const Inputs& x) { return kiln::avg_pool2d(x[0], {2, 2}); },
       {{1, 2, 4, 4}}});
  add({"avg_pool2d_padding",
       [](const Inputs& x) {
         kiln::Pool2dOptions o;
         o.stride = {2, 2};
         o.padding = {1, 1};
         return kiln::avg_pool2d(x[0], {3, 3}, o);
       },
       {{1, 1, 5, 5}}});
  add({"sliding_window", [](const Inputs& x) { return kiln::sliding_window(x[0], {2, 3}, {1, 1}); },
       {{5, 4}}});
  add({"sliding_window_steps",
       [](const Inputs& x) { return kiln::sliding_window(x[0], {2, 2, 2}, {2, 1, 1}); },
       {{4, 3, 2}}});
  add({"sliding_window_1d", [](const Inputs& x) { return kiln::sliding_window(x[0], {3}, {2}); },
       {{7}}});
  add({"unslide_window",
       [](const Inputs& x) { return kiln::unslide_window(x[0], {5, 4}, {1, 2}); },
       {{8, 2, 2}}});
  add({"unslide_window_gaps",
       [](const Inputs& x) { return kiln::unslide_window(x[0], {6}, {3}); }, {{2, 2}}});
  add({"slide_unslide_roundtrip",
       [](const Inputs& x) {
         return kiln::unslide_window(kiln::sliding_window(x[0], {2, 2}, {1, 1}) * x[0].sum(),
                                     {3, 3}, {1, 1});
       },
       {{3, 3}}});

  // ---- indexing ---------------------------------------------------------------------------------
  add({"index_rows",
       [](const Inputs& x) { return kiln::index(x[0], i64({2, 0, 2, 3, 1}, {5})); }, {{4, 3}}});
  add({"index_prefix",
       [](const Inputs& x) { return kiln::index(x[0], i64({1, 1, 3, 0, 2, 2}, {2, 3})); },
       {{2, 4, 3}}});
  add({"index_set",
       [](const Inputs& x) { return kiln::index_set(x[0], x[1], i64({2, 0, 2, -1, 1}, {5})); },
       {{4, 3}, {5, 3}}});
  add({"index_set_prefix",
       [](const Inputs& x) {
         return kiln::index_set(x[0], x[1], i64({0, 0, 2, 1, -1, 1}, {2, 3}));
       },
       {{2, 3, 2}, {2, 3, 2}}});
  add({"gather_axis1",
       [](const Inputs& x) { return kiln::gather(x[0], 1, i64({0, 3, 1, 1, 2, 0}, {3, 2})); },
       {{3, 4}}});
  add({"gather_axis0",
       [](const Inputs& x) {
         return kiln::gather(x[0], 0, i64({2, 0, 1, 2, 0, 0, 2, 1}, {2, 4}));
       },
       {{3, 4}}});
  add({"scatter_add",
       [](const Inputs& x) {
         return kiln::scatter_add(x[0], 1, i64({0, 0, 3, 1, 2, 2}, {3, 2}), x[1]);
       },
       {{3, 4}, {3, 2}}});
  add({"scatter_add_larger_source",
       [](const Inputs& x) {
         return kiln::scatter_add(x[0], 0, i64({1, 0, 1, 1, 1, 0}, {2, 3}), x[1]);
       },
       {{2, 4}, {3, 3}}});
  add({"index_select_axis0",
       [](const Inputs& x) { return kiln::index_select(x[0], 0, i64({3, 1, 3}, {3})); },
       {{4, 3}}});
  add({"index_select_axis1",
       [](const Inputs& x) { return kiln::index_select(x[0], -1, i64({2, 0}, {2})); },
       {{2, 2, 3}}});

  // ---- linear algebra (kiln/linalg.hpp) -------------------------------------------------------
  // Inputs kept well conditioned: x + 3 I (x in [-1.5, 1.5] signed, diagonally dominant enough
  // for 3 x 3), X X^T / 3 + I for the symmetric positive definite ones. svd and eigh are read
  // through functions that do not depend on the signs of the vectors (distinct values: the random
  // inputs have gaps far above h).
  {
    const auto mT = [](const Tensor& t) { return kiln::transpose(t, -1, -2); };
    const auto dominant = [](const Tensor& t) {
      return t + kiln::eye(t.shape().back(), t.shape().back(), DType::f64) * 3.0;
    };
    const auto spd = [mT](const Tensor& t) {
      return kiln::matmul(t, mT(t)) / 3.0 + kiln::eye(t.shape()[t.rank() - 2], std::nullopt, DType::f64);
    };
    add({"solve", [=](const Inputs& x) { return kiln::solve(dominant(x[0]), x[1]); },
         {{3, 3}, {3, 2}}});
    add({"solve_vector_batched", [=](const Inputs& x) { return kiln::solve(dominant(x[0]), x[1]); },
         {{2, 3, 3}, {2, 3}}});
    add({"inv", [=](const Inputs& x) { return kiln::inv(dominant(x[0])); }, {{2, 3, 3}}});
    add({"det", [=](const Inputs& x) { return kiln::det(dominant(x[0])); }, {{2, 3, 3}}});
    add({"cholesky", [=](const Inputs& x) { return kiln::cholesky(spd(x[0])); }, {{2, 3, 4}}});
    add({"qr_q", [](const Inputs& x) { return kiln::qr(x[0]).q; }, {{4, 3}}});
    add({"qr_r", [](const Inputs& x) { return kiln::qr(x[0]).r; }, {{2, 3, 3}}});
    add({"qr_q_wide", [](const Inputs& x) { return kiln::qr(x[0]).q; }, {{3, 5}}});
    add({"qr_r_wide", [](const Inputs& x) { return kiln::qr(x[0]).r; }, {{2, 3, 4}}});
    add({"svd_s", [](const Inputs& x) { return kiln::svd(x[0]).s; }, {{2, 4, 3}}});
    add({"svd_usv_tall", [](const Inputs& x) {
           const kiln::SVD f = kiln::svd(x[0]);
           return kiln::matmul(f.u * kiln::square(f.s).unsqueeze(-2), f.vh);
         }, {{4, 3}}});
    add({"svd_v_s_vh_wide", [mT](const Inputs& x) {  // V diag(S) Vh of a wide A (n > k)
           const kiln::SVD f = kiln::svd(x[0]);
           return kiln::matmul(mT(f.vh) * f.s.unsqueeze(-2), f.vh);
         }, {{2, 4}}});
    add({"svd_u_times_vh", [](const Inputs& x) {  // U Vh: the signs cancel
           const kiln::SVD f = kiln::svd(x[0]);
           return kiln::matmul(f.u, f.vh);
         }, {{3, 4}}});
    add({"eigh_values", [=](const Inputs& x) { return kiln::eigh(spd(x[0])).eigenvalues; },
         {{2, 3, 3}}});
    add({"eigh_vectors", [=](const Inputs& x) {  // V diag(1, 2, 3) V^T
           const Tensor v = kiln::eigh(spd(x[0])).eigenvectors;
           const Tensor d = Tensor::from(F64{1, 2, 3}, {1, 3});
           return kiln::matmul(v * d, mT(v));
         }, {{3, 3}}});
    add({"lstsq", [=](const Inputs& x) { return kiln::lstsq(x[0], x[1]); }, {{5, 3}, {5, 2}}});
    add({"lstsq_vector", [=](const Inputs& x) { return kiln::lstsq(x[0], x[1]); }, {{4, 2}, {4}}});
    add({"lstsq_wide", [=](const Inputs& x) { return kiln::lstsq(x[0], x[1]); }, {{2, 4}, {2, 3}}});
    add({"lstsq_wide_vector_batched", [=](const Inputs& x) { return kiln::lstsq(x[0], x[1]); },
         {{2, 2, 3}, {2, 2}}});
  }

  // ---- activations, losses, dropout, custom kernels ---------------------------------------------
  add({"softmax", [](const Inputs& x) { return kiln::softmax(x[0]); }, {{3, 4}}});
  add({"softmax_axis0", [](const Inputs& x) { return kiln::softmax(x[0], 0); }, {{3, 4}}});
  add({"log_softmax", [](const Inputs& x) { return kiln::log_softmax(x[0]); }, {{3, 4}}});
  add({"log_softmax_axis0", [](const Inputs& x) { return kiln::log_softmax(x[0], 0); },
       {{3, 4}}});
  // ---- scans and sorting -------------------------------------------------------------------------
  add({"cumsum", [](const Inputs& x) { return kiln::cumsum(x[0], 1); }, {{3, 4}}});
  add({"cumsum_axis0", [](const Inputs& x) { return kiln::cumsum(x[0], -3); }, {{3, 2, 2}}});
  add({"cumprod", [](const Inputs& x) { return kiln::cumprod(x[0], 1); }, {{3, 4}}});
  add({"cumprod_axis0", [](const Inputs& x) { return kiln::cumprod(x[0], 0); }, {{3, 4}}});
  // cumprod at exact zeros: its gradient is exact there, but the gradient's own derivative
  // misses the terms through the zero (documented at the rule), so it has no row here (a row
  // without a second-order check must be one whose second derivative is refused); the values
  // at zeros are checked by hand in test_sorting.cpp (Scans.Gradients).
  add({"sort_values", [](const Inputs& x) { return kiln::sort(x[0], 1).values; }, {{3, 4}},
       distinct()});
  add({"sort_descending_axis0",
       [](const Inputs& x) { return kiln::sort(x[0], 0, true).values; }, {{3, 4}}, distinct()});
  add({"topk", [](const Inputs& x) { return kiln::topk(x[0], 2).values; }, {{3, 4}},
       distinct()});
  add({"topk_smallest_axis0",
       [](const Inputs& x) { return kiln::topk(x[0], 2, 0, false).values; }, {{3, 4}},
       distinct()});

  add({"logsumexp", [](const Inputs& x) { return kiln::logsumexp(x[0], 1); }, {{3, 4}}});
  add({"logsumexp_keepdims", [](const Inputs& x) { return kiln::logsumexp(x[0], 0, true); },
       {{3, 4}}});
  add({"cross_entropy",
       [](const Inputs& x) { return kiln::cross_entropy(x[0], i64({1, 0, 3}, {3})); }, {{3, 4}}});
  {  // kiln::nn's losses (kiln/losses.hpp), with respect to the input and, where it is smooth,
     // the target
    using kiln::nn::ClassLossOptions;
    using kiln::nn::Reduction;
    add({"silu", [](const Inputs& x) { return kiln::silu(x[0]); }, {{3, 4}}});
    add({"leaky_relu", [](const Inputs& x) { return kiln::leaky_relu(x[0], 0.1); }, {{3, 4}}});
    add({"layer_norm_affine",
         [](const Inputs& x) { return kiln::layer_norm(x[0], {2, 3}, x[1], x[2], 1e-3); },
         {{2, 2, 3}, {2, 3}, {2, 3}}});
    add({"group_norm_affine",
         [](const Inputs& x) { return kiln::group_norm(x[0], 2, x[1], x[2], 1e-3); },
         {{2, 4, 3}, {4}, {4}}});
    add({"mse_loss", [](const Inputs& x) { return kiln::nn::mse_loss(x[0], x[1]); },
         {{3, 4}, {3, 4}}});
    add({"l1_loss_sum",
         [](const Inputs& x) { return kiln::nn::l1_loss(x[0], x[1], Reduction::sum); },
         {{3, 4}, {3, 4}}});
    add({"smooth_l1_loss_none",
         [](const Inputs& x) {
           return kiln::nn::smooth_l1_loss(x[0], x[1], Reduction::none, 0.7);
         },
         {{3, 4}, {3, 4}}});
    add({"huber_loss", [](const Inputs& x) { return kiln::nn::huber_loss(x[0], x[1], {}, 0.6); },
         {{3, 4}, {3, 4}}});
    add({"binary_cross_entropy_weighted",
         [](const Inputs& x) {
           return kiln::nn::binary_cross_entropy(kiln::sigmoid(x[0]), kiln::sigmoid(x[1]),
                                                 Reduction::mean, kiln::sigmoid(x[2]));
         },
         {{3, 4}, {3, 4}, {4}}});
    add({"binary_cross_entropy_with_logits_pos_weight",
         [](const Inputs& x) {
           return kiln::nn::binary_cross_entropy_with_logits(
               x[0], kiln::sigmoid(x[1]), Reduction::sum, kiln::exp(x[2]));
         },
         {{3, 4}, {3, 4}, {4}}});
    add({"nll_loss_weight_ignore",
         [](const Inputs& x) {
           ClassLossOptions o;
           o.weight = kiln::exp(x[1]);
           o.ignore_index = 2;
           return kiln::nn::nll_loss(x[0], i64({1, 2, 3}, {3}), o);
         },
         {{3, 4}, {4}}});
    add({"cross_entropy_smoothing_weight_ignore",
         [](const Inputs& x) {
           ClassLossOptions o;
           o.weight = kiln::exp(x[1]);
           o.ignore_index = -100;
           o.label_smoothing = 0.2;
           return kiln::nn::cross_entropy(x[0], i64({1, -100, 3}, {3}), o);
         },
         {{3, 4}, {4}}});
    add({"kl_div_batchmean",
         [](const Inputs& x) {
           return kiln::nn::kl_div(kiln::log_softmax(x[0], 1), kiln::softmax(x[1], 1),
                                   Reduction::batchmean);
         },
         {{3, 4}, {3, 4}}});
    add({"kl_div_log_target",
         [](const Inputs& x) {
           return kiln::nn::kl_div(kiln::log_softmax(x[0], 1), kiln::log_softmax(x[1], 1),
                                   Reduction::sum, true);
         },
         {{3, 4}, {3, 4}}});
  }
  add({"dropout", [](const Inputs& x) { return kiln::dropout(x[0], 0.4, 7); }, {{3, 4}}});
  add({"dropout_used_twice",
       [](const Inputs& x) { return kiln::dropout(x[0], 0.5, 11) * kiln::dropout(x[0], 0.5, 11); },
       {{3, 4}}});
  add({"map_elements",
       [](const Inputs& x) {
         return kiln::map_elements(
             x[0], [](double v) { return v * v * v + std::sin(v); },
             [](double v) { return 3 * v * v + std::cos(v); });
       },
       {{2, 3}},
       {},
       1e-6,
       false});
  add({"map_elements_composed",
       [](const Inputs& x) {
         const Tensor m = kiln::map_elements(
             x[0] * x[1], [](double v) { return std::exp(v) / (1 + v * v); },
             [](double v) { return std::exp(v) * (1 - v) * (1 - v) / ((1 + v * v) * (1 + v * v)); });
         return m * x[0];
       },
       {{2, 3}, {3}},
       {},
       1e-6,
       false});
  add({"random_constant_factor",
       [](const Inputs& x) { return x[0] * kiln::random_normal({2, 3}, 5); }, {{2, 3}}});

  // ---- composite ops (composite_ops.hpp): gradients of the primitives they are built from -----
  add({"stack", [](const Inputs& x) { return kiln::stack({x[0], x[1]}, 1); }, {{2, 3}, {2, 3}}});
  add({"stack_negative_dim",
       [](const Inputs& x) { return kiln::stack({x[0], x[1], x[0]}, -1); }, {{2, 3}, {2, 3}}});
  add({"split",
       [](const Inputs& x) {
         const auto p = kiln::split(x[0], 2, 1);  // sizes 2, 2, 1
         return p[0] * p[1] + p[2];
       },
       {{2, 5}}});
  add({"split_sizes",
       [](const Inputs& x) {
         const auto p = kiln::split(x[0], std::vector<std::int64_t>{1, 3}, -2);
         return kiln::concat({p[1], p[0]}, 0);
       },
       {{4, 3}}});
  add({"chunk",
       [](const Inputs& x) {
         const auto c = kiln::chunk(x[0], 3, -1);
         return c[0] * c[2] - c[1];
       },
       {{2, 6}}});
  add({"unbind",
       [](const Inputs& x) {
         const auto u = kiln::unbind(x[0], 1);
         return u[0] * u[2] + u[1];
       },
       {{2, 3, 2}}});
  add({"tril", [](const Inputs& x) { return kiln::tril(x[0]); }, {{3, 4}}});
  add({"tril_batched_above", [](const Inputs& x) { return kiln::tril(x[0], 1); }, {{2, 3, 4}}});
  add({"triu", [](const Inputs& x) { return kiln::triu(x[0]); }, {{4, 3}}});
  add({"triu_batched_below", [](const Inputs& x) { return kiln::triu(x[0], -1); }, {{2, 3, 3}}});
  add({"roll", [](const Inputs& x) { return kiln::roll(x[0], {1, -2}, {0, 1}); }, {{3, 4}}});
  add({"roll_flattened", [](const Inputs& x) { return kiln::roll(x[0], {4}); }, {{2, 3}}});
  add({"flip", [](const Inputs& x) { return kiln::flip(x[0], {0, -1}); }, {{2, 3, 2}}});
  add({"diag_vector", [](const Inputs& x) { return kiln::diag(x[0]); }, {{3}}});
  add({"diag_vector_above", [](const Inputs& x) { return kiln::diag(x[0], 1); }, {{3}}});
  add({"diag_vector_below", [](const Inputs& x) { return kiln::diag(x[0], -2); }, {{2}}});
  add({"diag_matrix", [](const Inputs& x) { return kiln::diag(x[0]); }, {{3, 4}}});
  add({"diag_matrix_above", [](const Inputs& x) { return kiln::diag(x[0], 2); }, {{3, 4}}});
  add({"diag_matrix_below", [](const Inputs& x) { return kiln::diag(x[0], -1); }, {{4, 3}}});
  add({"outer", [](const Inputs& x) { return kiln::outer(x[0], x[1]); }, {{3}, {4}}});
  add({"masked_fill",
       [](const Inputs& x) { return kiln::masked_fill(x[0], i32({1, 0, 1}, {3}), 0.5); },
       {{2, 3}}});
  add({"clamp", [](const Inputs& x) { return kiln::clamp(x[0], -1.0, 1.0); }, {{3, 4}},
       away_from_one()});
  add({"clamp_min", [](const Inputs& x) { return kiln::clamp(x[0], 1.0); }, {{3, 4}},
       away_from_one()});
  add({"clamp_max", [](const Inputs& x) { return kiln::clamp(x[0], std::nullopt, -1.0); },
       {{3, 4}}, away_from_one()});
  add({"clamp_tensors", [](const Inputs& x) { return kiln::clamp(x[0], x[1], x[2]); },
       {{2, 3}, {3}, {2, 1}}, distinct()});
  add({"clip", [](const Inputs& x) { return kiln::clip(x[0], -1.0, 1.0); }, {{2, 3}},
       away_from_one()});
  add({"nan_to_num", [](const Inputs& x) { return kiln::nan_to_num(x[0]); }, {{2, 3}}});
  add({"var", [](const Inputs& x) { return kiln::var(x[0]); }, {{3, 4}}});
  add({"var_dims_keepdim", [](const Inputs& x) { return kiln::var(x[0], {0, 2}, 0, true); },
       {{2, 3, 4}}});
  add({"std", [](const Inputs& x) { return kiln::std(x[0], {-1}); }, {{3, 4}}});
  add({"std_correction2", [](const Inputs& x) { return kiln::std(x[0], {0, 1}, 2); },
       {{2, 3, 2}}});
  add({"norm", [](const Inputs& x) { return kiln::norm(x[0]); }, {{3, 4}}});
  add({"norm_1", [](const Inputs& x) { return kiln::norm(x[0], 1, {1}); }, {{3, 4}}});
  add({"norm_inf", [](const Inputs& x) { return kiln::norm(x[0], INFINITY, {0}); }, {{3, 4}},
       distinct()});
  add({"norm_3_keepdim", [](const Inputs& x) { return kiln::norm(x[0], 3, {0}, true); },
       {{3, 4}}});
  add({"norm_fro", [](const Inputs& x) { return kiln::norm(x[0], "fro", {0, 1}); },
       {{2, 3, 2}}});
  add({"logsumexp_dims", [](const Inputs& x) { return kiln::logsumexp(x[0], {0, 2}); },
       {{2, 3, 4}}});
  add({"logsumexp_dims_keepdim",
       [](const Inputs& x) { return kiln::logsumexp(x[0], {-1, -2}, true); }, {{2, 3, 4}}});

  auto einsum_row = [&add](const char* name, const char* eq, std::vector<Shape> shapes) {
    const std::string e = eq;
    add({name, [e](const Inputs& x) { return kiln::einsum(e, x); }, std::move(shapes)});
  };
  einsum_row("einsum_matmul", "ij,jk->ik", {{2, 3}, {3, 4}});
  einsum_row("einsum_batch_transposed_out", "bij,bjk->bki", {{2, 2, 3}, {2, 3, 4}});
  einsum_row("einsum_implicit", "kj,ji", {{2, 3}, {3, 4}});
  einsum_row("einsum_outer", "i,j->ji", {{3}, {4}});
  einsum_row("einsum_summed_free_indices", "ij,jk->j", {{2, 3}, {3, 4}});
  einsum_row("einsum_trace", "ii", {{3, 3}});
  einsum_row("einsum_batch_diagonal", "bii->ib", {{2, 3, 3}});
  einsum_row("einsum_diagonal_with_other", "ii,ij->ij", {{3, 3}, {3, 2}});
  einsum_row("einsum_size_one_broadcast", "ij,jk->ik", {{2, 1}, {3, 4}});
  einsum_row("einsum_ellipsis_broadcast", "...ij,...jk->...ik", {{2, 2, 3}, {3, 2}});
  einsum_row("einsum_ellipsis_summed", "...ii->i", {{2, 3, 3}});
  auto interpolate_row = [&add](const char* name, Shape size, kiln::InterpolateMode mode,
                                bool corners, Shape in) {
    add({name, [=](const Inputs& x) { return kiln::interpolate(x[0], size, mode, corners); },
         {in}});
  };
  interpolate_row("interpolate_nearest", {3, 5}, kiln::InterpolateMode::nearest, false,
                  {1, 2, 2, 3});
  interpolate_row("interpolate_nearest_down", {1, 2}, kiln::InterpolateMode::nearest, false,
                  {2, 1, 3, 5});
  interpolate_row("interpolate_bilinear", {5, 4}, kiln::InterpolateMode::bilinear, false,
                  {1, 2, 3, 3});
  interpolate_row("interpolate_bilinear_align_corners", {4, 5}, kiln::InterpolateMode::bilinear,
                  true, {2, 1, 3, 2});
  interpolate_row("interpolate_bilinear_down", {2, 3}, kiln::InterpolateMode::bilinear, false,
                  {1, 1, 4, 5});
  add({"masked_select",
       [](const Inputs& x) { return kiln::masked_select(x[0], i32({0, 1, 1}, {3})); },
       {{2, 3}}});
  add({"masked_select_broadcast_x",
       [](const Inputs& x) {
         return kiln::masked_select(x[0], i32({1, 0, 1, 1, 1, 0}, {2, 3})) * x[1];
       },
       {{2, 1}, {4}}});

  return t;
}

const std::vector<Row>& table() {
  static const std::vector<Row> rows = build_table();
  return rows;
}

// ---- the check ------------------------------------------------------------------------------------

std::uint64_t seed_of(const std::string& name) {  // FNV-1a: the same on every platform
  std::uint64_t h = 1469598103934665603ull;
  for (char ch : name) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<F64> draw_inputs(const Row& row, Rng& rng) {
  const Gen gen = row.gen ? row.gen : signed_values();
  std::vector<F64> values;
  for (std::size_t i = 0; i < row.shapes.size(); ++i)
    values.push_back(gen(rng, i, numel_of(row.shapes[i])));
  return values;
}

Inputs to_tensors(const std::vector<F64>& values, const std::vector<Shape>& shapes) {
  Inputs xs;
  for (std::size_t i = 0; i < values.size(); ++i) xs.push_back(Tensor::from(values[i], shapes[i]));
  return xs;
}

Tensor random_weights(Rng& rng, const Shape& shape) {
  return Tensor::from(magnitudes(0.5, 1.5, true)(rng, 0, numel_of(shape)), shape);
}

// Compares every element of the analytic gradients with central differences of `objective`.
void compare_with_differences(const Row& row, const std::vector<F64>& values,
                              const std::vector<Tensor>& grads,
                              const std::function<double(const std::vector<F64>&)>& objective) {
  ASSERT_EQ(grads.size(), values.size());
  int failures = 0;
  std::int64_t checked = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(grads[i].defined()) << "input " << i;
    ASSERT_EQ(grads[i].shape(), row.shapes[i]) << "input " << i;
    ASSERT_EQ(grads[i].dtype(), DType::f64) << "input " << i;
    const F64 analytic = grads[i].to_vector<double>();
    ASSERT_EQ(analytic.size(), values[i].size());
    for (std::size_t j = 0; j < values[i].size(); ++j) {
      std::vector<F64> p = values;
      const double x = values[i][j];
      const double h = 1e-6 * std::max(1.0, std::abs(x));
      p[i][j] = x + h;
      const double up_x = p[i][j], up = objective(p);
      p[i][j] = x - h;
      const double down_x = p[i][j], down = objective(p);
      const double numeric = (up - down) / (up_x - down_x);
      const double a = analytic[j];
      const double err = std::abs(a - numeric) / std::max({1.0, std::abs(a), std::abs(numeric)});
      ++checked;
      if (!(err < row.tol)) {  // also catches NaN
        if (++failures <= 6)
          ADD_FAILURE() << row.name << ": input " << i << " element " << j << " (x = " << x
                        << "): analytic " << a << ", numeric " << numeric << ", relative error "
                        << err;
      }
    }
  }
  EXPECT_EQ(failures, 0) << row.name << ": " << failures << " of " << checked
                         << " elements differ";
  EXPECT_GT(checked, 0);
}

class GradCheck : public ::testing::TestWithParam<std::size_t> {};
class GradCheckSecondOrder : public ::testing::TestWithParam<std::size_t> {};

TEST_P(GradCheck, MatchesCentralDifferences) {
  const Row& row = table()[GetParam()];
  Rng rng(seed_of(row.name));
  const std::vector<F64> values = draw_inputs(row, rng);
  const Inputs xs = to_tensors(values, row.shapes);
  for (const Tensor& x : xs) x.watch();
  Tensor w;
  std::vector<Tensor> grads;
  {
    kiln::GradientContext context;
    const Tensor out = row.f(xs);
    ASSERT_EQ(out.dtype(), DType::f64) << row.name;
    w = random_weights(rng, out.shape());
    grads = kiln::gradients(kiln::sum(out * w), xs);
  }
  auto objective = [&](const std::vector<F64>& v) {
    return kiln::sum(row.f(to_tensors(v, row.shapes)) * w).item<double>();
  };
  // The function rebuilt on the unperturbed values reproduces y (the rebuild is deterministic).
  const double y0 = objective(values);
  EXPECT_TRUE(std::isfinite(y0)) << row.name;
  compare_with_differences(row, values, grads, objective);
}

TEST_P(GradCheckSecondOrder, GradientOfGradientMatchesCentralDifferences) {
  const Row& row = table()[GetParam()];
  if (!row.second_order) {
    // Rows without a second derivative by contract: the second gradient must be refused.
    Rng rng(seed_of(row.name));
    const Inputs xs = to_tensors(draw_inputs(row, rng), row.shapes);
    for (const Tensor& x : xs) x.watch();
    kiln::GradientContext context;
    const std::vector<Tensor> g = kiln::gradients(kiln::sum(row.f(xs)), xs);
    try {
      (void)kiln::gradients(kiln::sum(g[0]), xs);
      ADD_FAILURE() << row.name << ": a second derivative without f'' was not refused";
    } catch (const kiln::Error& e) {
      EXPECT_EQ(e.code(), kiln::ErrorCode::illegal_derive) << e.what();
    }
    return;
  }
  Rng rng(seed_of(row.name));
  const std::vector<F64> values = draw_inputs(row, rng);
  const Inputs xs = to_tensors(values, row.shapes);
  for (const Tensor& x : xs) x.watch();
  const Tensor w = random_weights(rng, row.f(xs).shape());
  std::vector<Tensor> v;  // one direction per input
  for (const Shape& s : row.shapes) v.push_back(random_weights(rng, s));
  // z = sum_i sum(dy/dx_i * v_i), y = sum(f(x) * w); must be called inside a gradient context.
  auto z_of = [&](const Inputs& in) {
    const std::vector<Tensor> g = kiln::gradients(kiln::sum(row.f(in) * w), in);
    Tensor z = kiln::sum(g[0] * v[0]);
    for (std::size_t i = 1; i < g.size(); ++i) z = z + kiln::sum(g[i] * v[i]);
    return z;
  };
  std::vector<Tensor> second;
  {
    kiln::GradientContext context;
    second = kiln::gradients(z_of(xs), xs);
  }
  auto objective = [&](const std::vector<F64>& vals) {
    kiln::GradientContext context;
    const Inputs in = to_tensors(vals, row.shapes);
    for (const Tensor& x : in) x.watch();
    return z_of(in).item<double>();
  };
  compare_with_differences(row, values, second, objective);
}

std::string test_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string s = table()[info.param].name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(GradSweep, GradCheck, ::testing::Range<std::size_t>(0, table().size()),
                         test_name);
INSTANTIATE_TEST_SUITE_P(GradSweep, GradCheckSecondOrder,
                         ::testing::Range<std::size_t>(0, table().size()), test_name);

// The table itself: names are unique (they name the tests) and every row's function builds.
TEST(GradCheckTable, RowsAreUniqueAndCoverTheOpSet) {
  std::vector<std::string> names;
  for (const Row& r : table()) names.push_back(r.name);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  for (const char* required :
       {"sqrt", "erf", "add_inverse_2x3_2", "pow_marked_b_3x3_3", "maximum_ones_2x1_1x3", "where",
        "prod_zeros_axis1", "matmul_batch_both", "dot", "extend_steps", "concat3_axis1",
        "conv2d_stride_padding_bias", "max_pool2d", "avg_pool2d", "unslide_window", "index_set",
        "scatter_add", "index_select_axis0", "cross_entropy", "dropout", "map_elements"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
}

}  // namespace
