// The op registry: one row per primitive op of the graph, and everything about the op that more
// than one part of kiln needs. Every switch or list over the op set (the scalar semantics, the
// CPU float loops, the public elementwise functions, the gradient table, the C API's op types)
// is expanded from these rows, so a new op is one row here, one gradient entry and one public
// declaration; forgetting the gradient entry or the semantics is a compile error.
//
// Why an X-macro: the rows carry C++ expressions (the scalar semantics) that have to be compiled
// inline into typed loops, and tokens (SLEEF functions, Flint's FOperationType) that only some
// files can resolve. A constexpr table cannot carry either; a generator would add a build step
// that checks nothing more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/types.hpp"

namespace kiln::detail {

enum class OpKind : std::uint8_t {
  source,   // no inputs: data or generated values
  view,     // an index map over one input; never computes values of its own
  unary,    // elementwise, one input
  binary,   // elementwise, two inputs of the node's shape
  ternary,  // where(cond, a, b)
  reduce,   // over attrs.axes of one input
  matmul,   // batched matrix product of two inputs with equal batch dimensions
  concat,   // joins its inputs along attrs.axes[0]
  copy,     // materialises its input in row-major order
  indexing, // data-dependent addressing: gather, scatter_add, unwindow
  custom,   // user-defined C++ callables
  window2d, // 2-D convolution and max pooling over NCHW tensors, and their gradients
  softmax,  // normalisation along attrs.axes[0]: softmax, log_softmax
  scan,     // inclusive scans along attrs.axes[0]: cumsum, cumprod
  sort,     // argsort along attrs.axes[0] (stable; attrs.descending; NaN is the largest)
  linalg,   // LAPACK on the host, per matrix of the leading (batch) dimensions; the ops with
            // several results (qr, svd, eigh) are one node per result, attrs.axes[0] choosing it
  spectral, // the discrete Fourier transform along attrs.axes[0] (attrs.inverse: the inverse,
            // scaled by 1/n), on the host with KISS FFT
};

// Which types an op's value operands may have (for sources: the type they are built with). A
// node whose operands break the rule is refused when it is built (wrong_type).
enum class Operands : std::uint8_t {
  any,       // every dtype
  numeric,   // every dtype but bool (negation and subtraction, which have no boolean meaning)
  real,      // every dtype but the complex ones (orderings, and functions C++ has no complex form of)
  integer,   // i32 and i64
  floating,  // the real float types
};


// How the result type follows from the operand types.
enum class TypeRule : std::uint8_t {
  given,         // fixed when the node is built (sources, convert)
  same,          // the operand type (unary) or the promoted operand type (binary)
  float_valued,  // like `same`, but integer operands give f64
  to_i32,        // i32 result, computed in the operand type (sign, even)
  to_bool,       // bool result, computed in the promoted operand type (comparisons)
  to_real,       // the operand type, or for complex operands the type of their parts (abs, real,
                 // imag, angle), computed in the operand type
  to_complex,    // the complex type of the promoted operand type: complex(re, im), fft
  to_real_float, // float_valued for real operands, the type of the parts for complex ones (angle)
  to_i64,        // i64 result (argmax, argmin, argsort)
};

// Whether operands of this kind may be complex.
constexpr bool takes_complex(Operands o) { return o == Operands::any || o == Operands::numeric; }
// Whether a row computes complex values: its semantics are then instantiated for std::complex as
// well, so they must compile for it. complex(re, im) takes real operands and computes in its
// complex result type.
constexpr bool computes_complex(Operands o, TypeRule rule) {
  return takes_complex(o) || rule == TypeRule::to_complex;
}

// Whether gradients flow through an op (autodiff/gradient_rules.cpp holds one entry per op).
enum class Gradient : std::uint8_t {
  rule,  // differentiable: the gradient table has a rule for it
  zero,  // piecewise constant or index-valued: its inputs get no gradient from it
  none,  // not differentiable: asking for a gradient through it is an error (illegal_derive)
};

// How the CPU executor's float loops compute an elementwise op (see exec/cpu/float_loops.hpp).
//   plain            a loop over the scalar semantics that the compiler vectorises;
//   SLEEF(fn, ulp)   SLEEF's vectorised fn with its error bound (u10: 1 ulp, u35: 3.5 ulp);
//   VECTOR(fn)       a hand-written vector loop of that name in float_math.inc;
//   scalar           none: a plain loop over the scalar semantics, not expected to vectorise.
//
// Rows of elementwise ops:
//   UNARY(name, operands, result, gradient, flint, float_semantics, integer_semantics, vector,
//         c_template)
//   BINARY(same columns)
// The semantics are expressions of `x` (unary) or `a` and `b` (binary), all of type T; the
// integer column is KILN_NOT_FOR_INTEGERS where integer operands are computed as f64 (the
// float_valued rule) or refused. The float column also serves the complex types (T a
// std::complex) in the rows whose operands take them (takes_complex), with the principal branches
// of <complex>; its helpers (real_part, angle_of, ...) are overloaded for both. c_template is the op as a C expression of {0} and {1}, for code
// generators (OpenCL C, CUDA C); the generator supplies kiln_* helpers for the NaN and wrapping
// rules of exec/semantics/. flint is the FOperationType a C API node of this op reports.
//
// Rows of every other op:
//   OP(name, kind, arity, operands, result, gradient, flint)   arity -1: any number of inputs
#define KILN_OP_REGISTRY(OP, UNARY, BINARY)                                                     \
  OP(store, source, 0, any, given, zero, FSTORE)                                                \
  OP(random_uniform, source, 0, floating, given, zero, FGEN_RANDOM)                             \
  OP(reshape, view, 1, any, same, rule, FRESHAPE)                                               \
  OP(permute, view, 1, any, same, rule, FTRANSPOSE)                                             \
  OP(slice, view, 1, any, same, rule, FSLICE)                                                   \
  OP(pad, view, 1, any, same, rule, FEXTEND)                                                    \
  OP(broadcast, view, 1, any, same, rule, FOTHER)                                               \
  OP(windows, view, 1, any, same, rule, FSLIDING_WINDOW)                                        \
  UNARY(neg, numeric, same, rule, FNEG, -x, wrap_sub(T{0}, x), plain, "(-{0})")                 \
  UNARY(abs, any, to_real, rule, FABS, std::abs(x), x < 0 ? wrap_sub(T{0}, x) : x, plain,        \
        "kiln_abs({0})")                                                                        \
  UNARY(real, any, to_real, rule, FOTHER, real_part(x), x, scalar, "({0})")                     \
  UNARY(imag, any, to_real, rule, FOTHER, imaginary_part(x), T{0}, scalar, "(0)")               \
  UNARY(conj, any, same, rule, FOTHER, conjugate(x), x, scalar, "({0})")                        \
  UNARY(angle, any, to_real_float, rule, FOTHER, angle_of(x), KILN_NOT_FOR_INTEGERS, scalar,     \
        "kiln_angle({0})")                                                                      \
  UNARY(square, any, same, rule, FOTHER, x * x, wrap_mul(x, x), plain, "({0} * {0})")           \
  UNARY(relu, real, same, rule, FOTHER, x < T{0} ? T{0} : x, x > 0 ? x : T{0}, plain,            \
        "({0} < 0 ? 0 : {0})")                                                                  \
  UNARY(sign, real, to_i32, zero, FSIGN, x >= 0 ? T{1} : T{-1}, x >= 0 ? T{1} : T{-1}, scalar,   \
        "({0} >= 0 ? 1 : -1)")                                                                  \
  UNARY(floor, real, same, zero, FOTHER, std::floor(x), x, plain, "kiln_floor({0})")            \
  UNARY(ceil, real, same, zero, FOTHER, std::ceil(x), x, plain, "kiln_ceil({0})")                \
  UNARY(round, real, same, zero, FOTHER, std::nearbyint(x), x, plain, "kiln_round({0})")         \
  UNARY(trunc, real, same, zero, FOTHER, std::trunc(x), x, plain, "kiln_trunc({0})")            \
  UNARY(even, integer, to_i32, zero, FEVEN, KILN_NOT_FOR_FLOATS, x % 2 == 0 ? T{1} : T{0},      \
        scalar, "({0} % 2 == 0)")                                                               \
  UNARY(convert, any, given, rule, FCONVERSION, x, x, scalar, "({0})")                          \
  UNARY(sqrt, any, float_valued, rule, FSQRT, std::sqrt(x), KILN_NOT_FOR_INTEGERS, plain,       \
        "sqrt({0})")                                                                            \
  UNARY(exp, any, float_valued, rule, FEXP, std::exp(x), KILN_NOT_FOR_INTEGERS, SLEEF(exp, u10),\
        "exp({0})")                                                                             \
  UNARY(expm1, real, float_valued, rule, FOTHER, std::expm1(x), KILN_NOT_FOR_INTEGERS,           \
        SLEEF(expm1, u10), "expm1({0})")                                                        \
  UNARY(log, any, float_valued, rule, FLOG, std::log(x), KILN_NOT_FOR_INTEGERS, SLEEF(log, u35),\
        "log({0})")                                                                             \
  UNARY(log2, real, float_valued, rule, FLOG2, std::log2(x), KILN_NOT_FOR_INTEGERS,              \
        SLEEF(log2, u35), "log2({0})")                                                          \
  UNARY(log10, any, float_valued, rule, FLOG10, std::log10(x), KILN_NOT_FOR_INTEGERS,           \
        SLEEF(log10, u10), "log10({0})")                                                        \
  UNARY(log1p, real, float_valued, rule, FOTHER, std::log1p(x), KILN_NOT_FOR_INTEGERS,           \
        SLEEF(log1p, u10), "log1p({0})")                                                        \
  UNARY(sin, any, float_valued, rule, FSIN, std::sin(x), KILN_NOT_FOR_INTEGERS, SLEEF(sin, u35),\
        "sin({0})")                                                                             \
  UNARY(cos, any, float_valued, rule, FCOS, std::cos(x), KILN_NOT_FOR_INTEGERS, SLEEF(cos, u35),\
        "cos({0})")                                                                             \
  UNARY(tan, any, float_valued, rule, FTAN, std::tan(x), KILN_NOT_FOR_INTEGERS, SLEEF(tan, u35),\
        "tan({0})")                                                                             \
  UNARY(asin, any, float_valued, rule, FASIN, std::asin(x), KILN_NOT_FOR_INTEGERS,              \
        SLEEF(asin, u35), "asin({0})")                                                          \
  UNARY(acos, any, float_valued, rule, FACOS, std::acos(x), KILN_NOT_FOR_INTEGERS,              \
        SLEEF(acos, u35), "acos({0})")                                                          \
  UNARY(atan, any, float_valued, rule, FATAN, std::atan(x), KILN_NOT_FOR_INTEGERS,              \
        SLEEF(atan, u35), "atan({0})")                                                          \
  UNARY(sinh, any, float_valued, rule, FOTHER, std::sinh(x), KILN_NOT_FOR_INTEGERS,             \
        SLEEF(sinh, u35), "sinh({0})")                                                          \
  UNARY(cosh, any, float_valued, rule, FOTHER, std::cosh(x), KILN_NOT_FOR_INTEGERS,             \
        SLEEF(cosh, u35), "cosh({0})")                                                          \
  UNARY(tanh, any, float_valued, rule, FOTHER, std::tanh(x), KILN_NOT_FOR_INTEGERS,             \
        SLEEF(tanh, u35), "tanh({0})")                                                          \
  UNARY(asinh, any, float_valued, rule, FOTHER, std::asinh(x), KILN_NOT_FOR_INTEGERS,           \
        SLEEF(asinh, u10), "asinh({0})")                                                        \
  UNARY(acosh, any, float_valued, rule, FOTHER, std::acosh(x), KILN_NOT_FOR_INTEGERS,           \
        SLEEF(acosh, u10), "acosh({0})")                                                        \
  UNARY(atanh, any, float_valued, rule, FOTHER, std::atanh(x), KILN_NOT_FOR_INTEGERS,           \
        SLEEF(atanh, u10), "atanh({0})")                                                        \
  UNARY(reciprocal, any, float_valued, rule, FOTHER, T{1} / x, KILN_NOT_FOR_INTEGERS, plain,    \
        "(1 / {0})")                                                                            \
  UNARY(sigmoid, any, float_valued, rule, FOTHER, T{1} / (T{1} + std::exp(-x)),                 \
        KILN_NOT_FOR_INTEGERS, VECTOR(sigmoid), "(1 / (1 + exp(-{0})))")                        \
  UNARY(erf, real, float_valued, rule, FOTHER, std::erf(x), KILN_NOT_FOR_INTEGERS,               \
        SLEEF(erf, u10), "erf({0})")                                                            \
  UNARY(softplus, real, float_valued, rule, FOTHER,                                              \
        (x > T{0} ? x : T{0}) + std::log1p(std::exp(-std::fabs(x))), KILN_NOT_FOR_INTEGERS,     \
        scalar, "(({0}) > 0 ? ({0}) : 0) + log1p(exp(-fabs({0})))")                            \
  BINARY(add, any, same, rule, FADD, a + b, wrap_add(a, b), plain, "kiln_add({0}, {1})")        \
  BINARY(sub, numeric, same, rule, FSUB, a - b, wrap_sub(a, b), plain, "kiln_sub({0}, {1})")    \
  BINARY(mul, any, same, rule, FMUL, a * b, wrap_mul(a, b), plain, "kiln_mul({0}, {1})")        \
  BINARY(div, any, same, rule, FDIV, a / b, integer_div(a, b), plain, "kiln_div({0}, {1})")     \
  BINARY(pow, any, same, rule, FPOW, std::pow(a, b), integer_pow(a, b), SLEEF(pow, u10),        \
         "kiln_pow({0}, {1})")                                                                  \
  BINARY(complex, floating, to_complex, rule, FOTHER, make_complex(a, b), KILN_NOT_FOR_INTEGERS, \
         scalar, "kiln_complex({0}, {1})")                                                      \
  BINARY(atan2, real, float_valued, rule, FOTHER, std::atan2(a, b), KILN_NOT_FOR_INTEGERS,        \
         scalar, "atan2({0}, {1})")                                                             \
  BINARY(fmod, real, same, rule, FOTHER, std::fmod(a, b), integer_fmod(a, b), scalar,             \
         "kiln_fmod({0}, {1})")                                                                 \
  BINARY(remainder, real, same, rule, FOTHER, float_remainder(a, b), integer_remainder(a, b),     \
         scalar, "kiln_remainder({0}, {1})")                                                    \
  BINARY(minimum, real, same, rule, FMIN, nan_min(a, b), nan_min(a, b), plain,                   \
         "kiln_min({0}, {1})")                                                                  \
  BINARY(maximum, real, same, rule, FMAX, nan_max(a, b), nan_max(a, b), plain,                   \
         "kiln_max({0}, {1})")                                                                  \
  BINARY(less, real, to_bool, zero, FLESS, a < b, a < b, scalar, "({0} < {1})")                   \
  BINARY(greater, real, to_bool, zero, FGREATER, a > b, a > b, scalar, "({0} > {1})")             \
  BINARY(equal, any, to_bool, zero, FEQUAL, a == b, a == b, scalar, "({0} == {1})")              \
  BINARY(less_equal, real, to_bool, zero, FOTHER, a <= b, a <= b, scalar, "({0} <= {1})")         \
  BINARY(greater_equal, real, to_bool, zero, FOTHER, a >= b, a >= b, scalar, "({0} >= {1})")      \
  BINARY(not_equal, any, to_bool, zero, FOTHER, a != b, a != b, scalar, "({0} != {1})")          \
  BINARY(assign, any, same, rule, FOTHER, b, b, plain, "({1})")                                 \
  OP(where, ternary, 3, any, same, rule, FOTHER)                                                \
  OP(sum, reduce, 1, any, same, rule, FREDUCE_SUM)                                              \
  OP(prod, reduce, 1, any, same, rule, FREDUCE_MUL)                                             \
  OP(min, reduce, 1, real, same, rule, FREDUCE_MIN)                                              \
  OP(max, reduce, 1, real, same, rule, FREDUCE_MAX)                                              \
  OP(mean, reduce, 1, any, float_valued, rule, FOTHER)                                          \
  OP(argmax, reduce, 1, real, to_i64, zero, FOTHER)                                              \
  OP(argmin, reduce, 1, real, to_i64, zero, FOTHER)                                              \
  OP(matmul, matmul, 2, any, same, rule, FMATMUL)                                               \
  OP(concat, concat, -1, any, same, rule, FCONCAT)                                              \
  OP(contiguous, copy, 1, any, same, rule, FOTHER)                                              \
  OP(gather, indexing, 2, any, same, rule, FOTHER)                                              \
  OP(scatter_add, indexing, 3, any, same, rule, FOTHER)                                         \
  OP(unwindow, indexing, 1, any, same, rule, FUNSLIDE_WINDOW)                                   \
  OP(custom_map, custom, 1, real, float_valued, rule, FOTHER)                                    \
  OP(custom_reduce, custom, 1, real, float_valued, none, FOTHER)                                 \
  OP(conv2d, window2d, 2, floating, same, rule, FOTHER)                                         \
  OP(conv2d_grad_input, window2d, 2, floating, same, rule, FOTHER)                              \
  OP(conv2d_grad_weight, window2d, 2, floating, same, rule, FOTHER)                             \
  OP(max_pool2d, window2d, 1, real, same, rule, FOTHER)                                          \
  OP(max_pool2d_grad, window2d, 2, real, same, rule, FOTHER)                                     \
  OP(softmax, softmax, 1, real, float_valued, rule, FOTHER)                                      \
  OP(log_softmax, softmax, 1, real, float_valued, rule, FOTHER)                                  \
  OP(cumsum, scan, 1, any, same, rule, FOTHER)                                                  \
  OP(cumprod, scan, 1, any, same, rule, FOTHER)                                                 \
  OP(argsort, sort, 1, real, to_i64, zero, FOTHER)                                               \
  OP(solve, linalg, 2, floating, same, rule, FOTHER)                                            \
  OP(det, linalg, 1, floating, same, rule, FOTHER)                                              \
  OP(cholesky, linalg, 1, floating, same, rule, FOTHER)                                         \
  OP(qr, linalg, 1, floating, same, rule, FOTHER)                                               \
  OP(svd, linalg, 1, floating, same, rule, FOTHER)                                              \
  OP(eigh, linalg, 1, floating, same, rule, FOTHER)                                             \
  OP(lstsq, linalg, 2, floating, same, rule, FOTHER)                                            \
  OP(fft, spectral, 1, any, to_complex, rule, FOTHER)

// For consumers that treat every row alike: define KILN_OP_ROW(name, kind, arity, operands,
// result, gradient, flint), then expand KILN_OP_ROWS().
#define KILN_OP_ROWS() \
  KILN_OP_REGISTRY(KILN_OP_ROW, KILN_REGISTRY_UNARY_ROW_, KILN_REGISTRY_BINARY_ROW_)
#define KILN_REGISTRY_UNARY_ROW_(name, operands, result, gradient, flint, ...) \
  KILN_OP_ROW(name, unary, 1, operands, result, gradient, flint)
#define KILN_REGISTRY_BINARY_ROW_(name, operands, result, gradient, flint, ...) \
  KILN_OP_ROW(name, binary, 2, operands, result, gradient, flint)

enum class Op : std::uint8_t {
#define KILN_OP_ENUM_(name, ...) name,
  KILN_OP_REGISTRY(KILN_OP_ENUM_, KILN_OP_ENUM_, KILN_OP_ENUM_)
#undef KILN_OP_ENUM_
};

inline constexpr std::size_t kOpCount = 0
#define KILN_OP_COUNT_(...) +1
    KILN_OP_REGISTRY(KILN_OP_COUNT_, KILN_OP_COUNT_, KILN_OP_COUNT_)
#undef KILN_OP_COUNT_
    ;

// The vector column of an elementwise row, as data (for tests and code generators). A `plain`
// row is one IEEE operation or a choice between values, so every executor's float result is
// correctly rounded and identical; the others may differ by a few ulp between executors.
enum class VectorLoop : std::uint8_t { none, plain, sleef, hand_written, scalar };

struct OpInfo {
  std::string_view name;
  OpKind kind;
  int arity;  // -1: any number of inputs
  Operands operands;
  TypeRule type_rule;
  Gradient gradient;
  std::string_view c_template;  // elementwise ops: the op as a C expression; empty otherwise
  VectorLoop vector;            // elementwise ops; `none` for every other op
};

const OpInfo& op_info(Op op);

// The result type of an op whose rule is not `given`, from its (promoted) operand type.
DType result_type(Op op, DType operand);

// Whether `type` is allowed for the value operands of `op`.
bool accepts(Op op, DType type);

}  // namespace kiln::detail
