// The float loops for AVX2 + FMA machines (compiled with -mavx2 -mfma), with SLEEF.
#include <immintrin.h>
#include <sleef.h>
#define KILN_ISA_NAME "avx2"
#define KILN_ISA_NS avx2
#define KILN_VF __m256
#define KILN_VD __m256d
#define KILN_WF 8
#define KILN_WD 4
#define KILN_SLEEF_F(name, ulp) Sleef_##name##f8_##ulp##avx2
#define KILN_SLEEF_D(name, ulp) Sleef_##name##d4_##ulp##avx2
#include "exec/cpu/float_loops.inc"
