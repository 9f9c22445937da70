// What differs between the C-like kernel languages kiln generates (OpenCL C, CUDA C): a table the
// renderer (render.hpp) reads, so that one renderer serves every device backend. Every spelling
// in which the two differ is a field here; the renderer spells nothing of its own but what both
// languages share (int, float, double, operators, the math functions of the same name, which
// CUDA C++ overloads for float as OpenCL C does).
//
// Fields with {0}, {1}, {2} are templates, filled in as the registry's C templates are.
#pragma once

#include <span>
#include <string_view>

#include "kiln/types.hpp"

namespace kiln::detail {

// A function some of the dialect's spellings call: defined in a kernel whose source names it
// (the definitions of the helpers it calls come earlier in the dialect's table).
struct DialectHelper {
  std::string_view name;
  std::string_view definition;  // after Dialect::function
};

struct Dialect {
  std::string_view name;
  std::string_view kernel;         // before the name of an entry point
  std::string_view global;         // address space qualifier of a kernel's buffer arguments
                                   // (empty where there is none)
  std::string_view local;          // of memory a work-group shares
  std::string_view global_id;      // the work-item's index in the whole launch
  std::string_view local_id;       // its index in its work-group
  std::string_view group_id;       // the work-group's index
  std::string_view barrier;        // waits for the work-group, memory shared by it made visible
  std::string_view global_barrier; // the same for the buffers' memory
  std::string_view function;       // before a helper function (overloadable where C needs it)
  std::string_view fixed_group;    // instead of `kernel`, before the name of an entry point that
                                   // needs exactly the work-group size %d stands for
  std::string_view preamble;       // before everything: pragmas
  std::string_view fp64_preamble;  // added when the kernel uses f64
  // The base options of the dialect's compiler, those every kernel needs: C's rules for a * b + c
  // (no contraction into fma: the gradient of max compares a value recomputed in another kernel
  // with the reduction's result, so every kernel must round alike). A device adds its own.
  std::string_view compile_options;
  std::string_view i32, i64, f32, f64;  // type names
  std::string_view u32, u64;            // the unsigned types integers wrap through
  std::string_view u16, u8;             // the storage of bf16 (its bits), bool (0 and 1) and u8
  std::string_view i16, i8;             // the storage of i16 and i8
  std::string_view f16_storage;         // the element type of an f16 buffer
  std::string_view c64, c128;           // complex values: vectors of two floats (x real, y
                                        // imaginary), in registers and in buffers
  std::string_view make_complex;        // the complex value of type {0} with parts {1} and {2}
  std::string_view i64_suffix, u64_suffix;  // of integer literals of 64 bits
  std::string_view load_f16;   // element {1} of the f16 buffer {0}, as a float
  std::string_view store_f16;  // the statement storing the float {2} as element {1} of the f16
                               // buffer {0}, rounded to nearest even
  std::string_view as_u32;     // the bits of the float {0}
  std::string_view as_f32;     // the float of the bits {0} (a u32)
  std::string_view as_u64;     // the bits of the double {0}, as a u64
  std::string_view as_f64;     // the double of the bits {0} (a u64)
  std::string_view nan, infinity;  // float constants (converted to double where needed)
  std::string_view nextafter_f32;  // the name of nextafter for floats
  std::string_view isfinite;       // the name of isfinite (float and double)
  std::span<const DialectHelper> helpers;  // kiln_round_f16 among them
  // Whether kernels spell out the NaN rule of semantics/nan_rules.hpp (which NaN an op gives):
  // for devices whose arithmetic does not give the host's NaN bits by itself (NVIDIA's make one
  // canonical NaN). A device sets it on its copy of the dialect.
  bool nan_rule = false;
  // Whether the device computes in double (OpenCL's cl_khr_fp64): c64 quotients and logarithms
  // near 1 then go through double, as libgcc and glibc compute them on the host. A device sets
  // it on its copy of the dialect.
  bool double_arithmetic = true;

  std::string_view type(DType t) const {
    switch (t) {
      case DType::i32: return i32;
      case DType::i64: return i64;
      case DType::f32: return f32;
      case DType::f64: return f64;
      case DType::boolean: return i32;  // loaded and stored as 0 and 1
      case DType::u8:
      case DType::i8:
      case DType::i16: return i32;  // computed in i32, stored in their width
      case DType::f16:
      case DType::bf16: break;  // loaded and stored as the f32 values they are
      case DType::c64: return c64;
      case DType::c128: return c128;
    }
    return f32;
  }
};

// kiln_round_f16: a float rounded to the nearest f16, kept as a float.
inline constexpr DialectHelper kOpenClHelpers[] = {
    {"kiln_round_f16",
     "float kiln_round_f16(float x) {\n"
     "  ushort h;\n  vstore_half_rte(x, 0, (half*)&h);\n  return vload_half(0, (const half*)&h);\n}"},
};

// OpenCL C 1.2 (overloaded helpers through clang's overloadable attribute; f16 buffers as half,
// read and written with vload_half and vstore_half_rte).
inline constexpr Dialect kOpenClC{
    .name = "OpenCL C",
    .kernel = "__kernel void",
    .global = "__global",
    .local = "__local",
    .global_id = "get_global_id(0)",
    .local_id = "get_local_id(0)",
    .group_id = "get_group_id(0)",
    .barrier = "barrier(CLK_LOCAL_MEM_FENCE)",
    .global_barrier = "barrier(CLK_GLOBAL_MEM_FENCE)",
    .function = "__attribute__((overloadable))",
    .fixed_group = "__attribute__((reqd_work_group_size(%d, 1, 1))) __kernel void",
    .preamble = "#pragma OPENCL FP_CONTRACT OFF\n",
    .fp64_preamble = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
    .compile_options = "-cl-std=CL1.2",
    .i32 = "int",
    .i64 = "long",
    .f32 = "float",
    .f64 = "double",
    .u32 = "uint",
    .u64 = "ulong",
    .u16 = "ushort",
    .u8 = "uchar",
    .i16 = "short",
    .i8 = "char",
    .f16_storage = "half",
    .c64 = "float2",
    .c128 = "double2",
    .make_complex = "(({0})({1}, {2}))",
    .i64_suffix = "L",
    .u64_suffix = "UL",
    .load_f16 = "vload_half({1}, {0})",
    .store_f16 = "vstore_half_rte({2}, {1}, {0});",
    .as_u32 = "as_uint({0})",
    .as_f32 = "as_float({0})",
    .as_u64 = "as_ulong({0})",
    .as_f64 = "as_double({0})",
    .nan = "NAN",
    .infinity = "INFINITY",
    .nextafter_f32 = "nextafter",
    .isfinite = "isfinite",
    .helpers = kOpenClHelpers,
};

// f16 conversions without cuda_fp16.h: the PTX instructions on the bits (cvt.rn rounds to nearest
// even, as vstore_half_rte does).
inline constexpr DialectHelper kCudaHelpers[] = {
    {"kiln_f16_to_f32",
     "float kiln_f16_to_f32(unsigned short h) {\n"
     "  float f;\n  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n  return f;\n}"},
    {"kiln_f32_to_f16",
     "unsigned short kiln_f32_to_f16(float f) {\n"
     "  unsigned short h;\n  asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n  return h;\n}"},
    {"kiln_round_f16",
     "float kiln_round_f16(float x) { return kiln_f16_to_f32(kiln_f32_to_f16(x)); }"},
};

// CUDA C++ for NVRTC, no headers: entry points extern "C" (their names unmangled), helpers
// overloaded as C++ functions, buffers in the generic address space, infinities and NaN from their
// bits (the macros live in headers). --fmad=false keeps a * b + c two roundings; division and
// square root correctly rounded and denormals kept (NVRTC's defaults, named so that they stay).
inline constexpr Dialect kCudaC{
    .name = "CUDA C",
    .kernel = "extern \"C\" __global__ void",
    .global = "",
    .local = "__shared__",
    .global_id = "((long long)blockIdx.x * blockDim.x + threadIdx.x)",
    .local_id = "threadIdx.x",
    .group_id = "blockIdx.x",
    .barrier = "__syncthreads()",
    .global_barrier = "__syncthreads()",
    .function = "__device__",
    .fixed_group = "extern \"C\" __global__ void __launch_bounds__(%d)",
    .preamble = "",
    .fp64_preamble = "",
    .compile_options = "--fmad=false --prec-div=true --prec-sqrt=true --ftz=false",
    .i32 = "int",
    .i64 = "long long",
    .f32 = "float",
    .f64 = "double",
    .u32 = "unsigned int",
    .u64 = "unsigned long long",
    .u16 = "unsigned short",
    .u8 = "unsigned char",
    .i16 = "short",
    .i8 = "signed char",
    .f16_storage = "unsigned short",
    .c64 = "float2",  // NVRTC's built-in vector types
    .c128 = "double2",
    .make_complex = "make_{0}({1}, {2})",
    .i64_suffix = "LL",
    .u64_suffix = "ULL",
    .load_f16 = "kiln_f16_to_f32({0}[{1}])",
    .store_f16 = "{0}[{1}] = kiln_f32_to_f16({2});",
    .as_u32 = "__float_as_uint({0})",
    .as_f32 = "__uint_as_float({0})",
    .as_u64 = "((unsigned long long)__double_as_longlong({0}))",
    .as_f64 = "__longlong_as_double((long long)({0}))",
    .nan = "__uint_as_float(0x7fc00000u)",
    .infinity = "__uint_as_float(0x7f800000u)",
    .nextafter_f32 = "nextafterf",
    .isfinite = "isfinite",
    .helpers = kCudaHelpers,
    .nan_rule = true,  // NVIDIA's arithmetic makes 0x7fffffff of every NaN
};

}  // namespace kiln::detail
