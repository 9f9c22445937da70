// The op table: one row per primitive op of the graph. Every user-facing function in ops.hpp
// builds one of these ops (or a few of them); executors implement exactly this set.
#pragma once

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
};

// How the result type follows from the operand types.
enum class TypeRule : std::uint8_t {
  given,         // fixed when the node is built (sources, convert)
  same,          // the operand type (unary) or the promoted operand type (binary)
  float_valued,  // like `same`, but integer operands give f64
  to_i32,        // i32 result (comparisons, sign, even)
  to_i64,        // i64 result (argmax, argmin)
};

// X(name, kind, arity, type rule)
#define KILN_OP_TABLE(X)                     \
  X(store, source, 0, given)                 \
  X(random_uniform, source, 0, given)        \
  X(reshape, view, 1, same)                  \
  X(permute, view, 1, same)                  \
  X(slice, view, 1, same)                    \
  X(pad, view, 1, same)                      \
  X(broadcast, view, 1, same)                \
  X(windows, view, 1, same)                  \
  X(neg, unary, 1, same)                     \
  X(abs, unary, 1, same)                     \
  X(square, unary, 1, same)                  \
  X(relu, unary, 1, same)                    \
  X(sign, unary, 1, to_i32)                  \
  X(even, unary, 1, to_i32)                  \
  X(convert, unary, 1, given)                \
  X(sqrt, unary, 1, float_valued)            \
  X(exp, unary, 1, float_valued)             \
  X(expm1, unary, 1, float_valued)           \
  X(log, unary, 1, float_valued)             \
  X(log2, unary, 1, float_valued)            \
  X(log10, unary, 1, float_valued)           \
  X(log1p, unary, 1, float_valued)           \
  X(sin, unary, 1, float_valued)             \
  X(cos, unary, 1, float_valued)             \
  X(tan, unary, 1, float_valued)             \
  X(asin, unary, 1, float_valued)            \
  X(acos, unary, 1, float_valued)            \
  X(atan, unary, 1, float_valued)            \
  X(sinh, unary, 1, float_valued)            \
  X(cosh, unary, 1, float_valued)            \
  X(tanh, unary, 1, float_valued)            \
  X(asinh, unary, 1, float_valued)           \
  X(acosh, unary, 1, float_valued)           \
  X(atanh, unary, 1, float_valued)           \
  X(reciprocal, unary, 1, float_valued)      \
  X(sigmoid, unary, 1, float_valued)         \
  X(erf, unary, 1, float_valued)             \
  X(add, binary, 2, same)                    \
  X(sub, binary, 2, same)                    \
  X(mul, binary, 2, same)                    \
  X(div, binary, 2, same)                    \
  X(pow, binary, 2, same)                    \
  X(minimum, binary, 2, same)                \
  X(maximum, binary, 2, same)                \
  X(less, binary, 2, to_i32)                 \
  X(greater, binary, 2, to_i32)              \
  X(equal, binary, 2, to_i32)                \
  X(less_equal, binary, 2, to_i32)           \
  X(greater_equal, binary, 2, to_i32)        \
  X(not_equal, binary, 2, to_i32)            \
  X(where, ternary, 3, same)                 \
  X(sum, reduce, 1, same)                    \
  X(prod, reduce, 1, same)                   \
  X(min, reduce, 1, same)                    \
  X(max, reduce, 1, same)                    \
  X(mean, reduce, 1, float_valued)           \
  X(argmax, reduce, 1, to_i64)               \
  X(argmin, reduce, 1, to_i64)               \
  X(matmul, matmul, 2, same)                 \
  X(concat, concat, -1, same)                \
  X(contiguous, copy, 1, same)               \
  X(gather, indexing, 2, same)               \
  X(scatter_add, indexing, 3, same)          \
  X(unwindow, indexing, 1, same)             \
  X(custom_map, custom, 1, float_valued)     \
  X(custom_reduce, custom, 1, float_valued)  \
  X(conv2d, window2d, 2, same)               \
  X(conv2d_grad_input, window2d, 2, same)    \
  X(conv2d_grad_weight, window2d, 2, same)   \
  X(max_pool2d, window2d, 1, same)           \
  X(max_pool2d_grad, window2d, 2, same)      \
  X(softmax, softmax, 1, float_valued)       \
  X(log_softmax, softmax, 1, float_valued)

enum class Op : std::uint8_t {
#define KILN_OP_ENUM(name, kind, arity, rule) name,
  KILN_OP_TABLE(KILN_OP_ENUM)
#undef KILN_OP_ENUM
};

struct OpInfo {
  std::string_view name;
  OpKind kind;
  int arity;  // -1: any number of inputs
  TypeRule type_rule;
};

const OpInfo& op_info(Op op);

// The result type of an op whose rule is not `given`, from its (promoted) operand type.
DType result_type(Op op, DType operand);

}  // namespace kiln::detail
