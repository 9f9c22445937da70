#include "graph/op_registry.hpp"

#include <array>

namespace kiln::detail {

namespace {

constexpr std::array kOps = {
#define KILN_OP_INFO_(name, kind, arity, operands, rule, gradient, flint) \
  OpInfo{#name, OpKind::kind, arity, Operands::operands, TypeRule::rule, Gradient::gradient, {},  \
         VectorLoop::none},
#define KILN_ELEMENTWISE_INFO_(kind, arity, name, operands, rule, gradient, flint, f, i, v, c) \
  OpInfo{#name, OpKind::kind, arity, Operands::operands, TypeRule::rule, Gradient::gradient, c,   \
         KILN_VECTOR_KIND_##v},
#define KILN_VECTOR_KIND_plain VectorLoop::plain
#define KILN_VECTOR_KIND_scalar VectorLoop::scalar
#define KILN_VECTOR_KIND_SLEEF(fn, ulp) VectorLoop::sleef
#define KILN_VECTOR_KIND_VECTOR(fn) VectorLoop::hand_written
#define KILN_UNARY_INFO_(...) KILN_ELEMENTWISE_INFO_(unary, 1, __VA_ARGS__)
#define KILN_BINARY_INFO_(...) KILN_ELEMENTWISE_INFO_(binary, 2, __VA_ARGS__)
    KILN_OP_REGISTRY(KILN_OP_INFO_, KILN_UNARY_INFO_, KILN_BINARY_INFO_)
#undef KILN_OP_INFO_
#undef KILN_ELEMENTWISE_INFO_
#undef KILN_VECTOR_KIND_plain
#undef KILN_VECTOR_KIND_scalar
#undef KILN_VECTOR_KIND_SLEEF
#undef KILN_VECTOR_KIND_VECTOR
#undef KILN_UNARY_INFO_
#undef KILN_BINARY_INFO_
};
static_assert(kOps.size() == kOpCount);

}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<std::size_t>(op)]; }

DType result_type(Op op, DType operand) {
  switch (op_info(op).type_rule) {
    case TypeRule::float_valued: return is_inexact(operand) ? operand : DType::f64;
    case TypeRule::to_real: return real_type(operand);
    case TypeRule::to_complex: return complex_type(operand);
    case TypeRule::to_real_float: return is_inexact(operand) ? real_type(operand) : DType::f64;
    case TypeRule::to_i32: return DType::i32;
    case TypeRule::to_bool: return DType::boolean;
    case TypeRule::to_i64: return DType::i64;
    case TypeRule::given:
    case TypeRule::same: break;
  }
  return operand;
}

bool accepts(Op op, DType type) {
  switch (op_info(op).operands) {
    case Operands::numeric: return !is_bool(type);
    case Operands::real: return !is_complex(type);
    case Operands::integer: return is_integer(type);
    case Operands::floating: return is_float(type);
    case Operands::any: break;
  }
  return true;
}

}  // namespace kiln::detail
