#include "graph/op_table.hpp"

#include <array>

namespace kiln::detail {

namespace {
constexpr std::array kOps = {
#define KILN_OP_ROW(name, kind, arity, rule) \
  OpInfo{#name, OpKind::kind, arity, TypeRule::rule},
    KILN_OP_TABLE(KILN_OP_ROW)
#undef KILN_OP_ROW
};
}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<std::size_t>(op)]; }

DType result_type(Op op, DType operand) {
  switch (op_info(op).type_rule) {
    case TypeRule::float_valued: return is_float(operand) ? operand : DType::f64;
    case TypeRule::to_i32: return DType::i32;
    case TypeRule::to_i64: return DType::i64;
    case TypeRule::given:
    case TypeRule::same: break;
  }
  return operand;
}

}  // namespace kiln::detail
