#include "exec/cpu/chunk_ops.hpp"

#include <cstdlib>
#include <cstring>

namespace kiln::detail::cpu {

namespace generic { const FloatLoops& loops(); }
namespace avx2 { const FloatLoops& loops(); }
namespace avx512 { const FloatLoops& loops(); }

namespace {
const FloatLoops& choose() {
  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  const bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const char* forced = std::getenv("KILN_ISA");
  if (forced && std::strcmp(forced, "generic") == 0) return generic::loops();
  if (forced && std::strcmp(forced, "avx2") == 0 && has2) return avx2::loops();
  if (has512 && !(forced && std::strcmp(forced, "avx2") == 0)) return avx512::loops();
  if (has2) return avx2::loops();
  return generic::loops();
}
}  // namespace

const FloatLoops& float_loops() {
  static const FloatLoops& chosen = choose();
  return chosen;
}

bool has_float_loop(Op op) {
  switch (op_info(op).kind) {
    case OpKind::unary:
      return op != Op::sign && op != Op::even && op != Op::convert;
    case OpKind::binary:
      return op == Op::add || op == Op::sub || op == Op::mul || op == Op::div ||
             op == Op::pow || op == Op::minimum || op == Op::maximum;
    default: return false;
  }
}

}  // namespace kiln::detail::cpu
