// The float loops for any x86-64 (SSE2), with scalar libm functions.
#define KILN_ISA_NAME "generic"
#define KILN_ISA_NS generic
#include "exec/cpu/float_loops.inc"
