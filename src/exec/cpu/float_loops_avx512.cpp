// The float loops for AVX-512 machines (compiled with -mavx512f and friends), with SLEEF.
#include <immintrin.h>
#include <sleef.h>
#define KILN_ISA_NAME "avx512"
#define KILN_ISA_NS avx512
#define KILN_VF __m512
#define KILN_VD __m512d
#define KILN_WF 16
#define KILN_WD 8
#define KILN_SLEEF_F(name, ulp) Sleef_##name##f16_##ulp##avx512f
#define KILN_SLEEF_D(name, ulp) Sleef_##name##d8_##ulp##avx512f
#include "exec/cpu/float_loops.inc"
