#include "exec/cpu/float_loops.hpp"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace kiln::detail::cpu {

namespace generic { const FloatLoops& loops(); }
namespace avx2 { const FloatLoops& loops(); }
namespace avx512 { const FloatLoops& loops(); }

namespace {
const FloatLoops& choose() {
  __builtin_cpu_init();
  // (Every AVX2 processor has F16C, which both copies use; it is checked all the same, through
  // CPUID: not every compiler's __builtin_cpu_supports knows it.)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  const bool has512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && f16c;
  const bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
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

// The rows whose vector column names a loop (plain, SLEEF or VECTOR); `scalar` rows run the
// executor's own loops over the scalar semantics, in whatever types the node computes.
#define KILN_NOT_ELEMENTWISE_(...)
#define KILN_FLOAT_LOOP_ROW_(name, operands, rule, gradient, flint, f, i, vector, c) \
  case Op::name: return KILN_HAS_LOOP_##vector;
#define KILN_HAS_LOOP_plain true
#define KILN_HAS_LOOP_scalar false
#define KILN_HAS_LOOP_SLEEF(fn, ulp) true
#define KILN_HAS_LOOP_VECTOR(fn) true
bool has_float_loop(Op op) {
  switch (op) {
    KILN_OP_REGISTRY(KILN_NOT_ELEMENTWISE_, KILN_FLOAT_LOOP_ROW_, KILN_FLOAT_LOOP_ROW_)
    default: return false;
  }
}
#undef KILN_NOT_ELEMENTWISE_
#undef KILN_FLOAT_LOOP_ROW_
#undef KILN_HAS_LOOP_plain
#undef KILN_HAS_LOOP_scalar
#undef KILN_HAS_LOOP_SLEEF
#undef KILN_HAS_LOOP_VECTOR

}  // namespace kiln::detail::cpu
