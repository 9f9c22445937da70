// The value semantics of the elementwise ops, one element at a time, expanded from the op
// registry's semantics columns: every executor computes through these (or through loops that the
// registry test holds to them), so results agree across executors.
#pragma once

#include <cmath>
#include <string>
#include <type_traits>

#include "exec/semantics/complex.hpp"
#include "exec/semantics/integer.hpp"
#include "exec/semantics/nan_rules.hpp"
#include "graph/op_registry.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

[[noreturn]] inline void not_an_elementwise_op(Op op, const char* what) {
  throw Error(ErrorCode::internal_error,
              std::string(op_info(op).name) + ": no " + what + " semantics");
}

// An op whose registry row has no semantics for this kind of type (integers computed as f64 by
// the float_valued rule, integer-only ops on floats): the builder refuses or converts such
// operands before an executor sees them.
template <class T> T not_computed_as(Op op, const char* what) { not_an_elementwise_op(op, what); }
#define KILN_NOT_FOR_INTEGERS not_computed_as<T>(op, "integer")
#define KILN_NOT_FOR_FLOATS not_computed_as<T>(op, "float")
#define KILN_SEMANTICS_NONE_(...)

// Always inlined: the CPU loops call these with a constant op, and only an inlined copy lets the
// compiler drop the switch and vectorise the loop.
template <class T> [[gnu::always_inline]] inline T unary_value(Op op, T x) {
#define KILN_UNARY_CASE_(name, operands, rule, gradient, flint, float_value, integer_value, ...) \
  case Op::name:                                                                                 \
    if constexpr (is_complex_v<T>) {                                                             \
      if constexpr (computes_complex(Operands::operands, TypeRule::rule))                        \
        return static_cast<T>(float_value);                                                      \
      else break;                                                                                \
    } else if constexpr (std::is_integral_v<T>) return static_cast<T>(integer_value);            \
    else return static_cast<T>(float_value);
  switch (op) {
    KILN_OP_REGISTRY(KILN_SEMANTICS_NONE_, KILN_UNARY_CASE_, KILN_SEMANTICS_NONE_)
    default: break;
  }
#undef KILN_UNARY_CASE_
  not_an_elementwise_op(op, "unary");
}

// Comparisons give 1 or 0 in T; the caller converts to the node's type.
template <class T> [[gnu::always_inline]] inline T binary_value(Op op, T a, T b) {
#define KILN_BINARY_CASE_(name, operands, rule, gradient, flint, float_value, integer_value, ...) \
  case Op::name:                                                                                  \
    if constexpr (is_complex_v<T>) {                                                              \
      if constexpr (computes_complex(Operands::operands, TypeRule::rule))                         \
        return static_cast<T>(float_value);                                                       \
      else break;                                                                                 \
    } else if constexpr (std::is_integral_v<T>) return static_cast<T>(integer_value);             \
    else return static_cast<T>(float_value);
  switch (op) {
    KILN_OP_REGISTRY(KILN_SEMANTICS_NONE_, KILN_SEMANTICS_NONE_, KILN_BINARY_CASE_)
    default: break;
  }
#undef KILN_BINARY_CASE_
  not_an_elementwise_op(op, "binary");
}

}  // namespace kiln::detail
