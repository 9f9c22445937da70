// What differs between the C-like kernel languages kiln generates (OpenCL C now, CUDA C next):
// a table the renderer (render.hpp) reads, so that one renderer serves every device backend.
#pragma once

#include <string_view>

#include "kiln/types.hpp"

namespace kiln::detail {

struct Dialect {
  std::string_view name;
  std::string_view kernel;         // before the return type of an entry point
  std::string_view global;         // address space qualifier of a kernel's buffer arguments
  std::string_view local;          // of memory a work-group shares
  std::string_view global_id;      // the work-item's index in the whole launch
  std::string_view local_id;       // its index in its work-group
  std::string_view group_id;       // the work-group's index
  std::string_view barrier;        // waits for the work-group, memory shared by it made visible
  std::string_view function;       // before a helper function (overloadable where C needs it)
  std::string_view fixed_group;    // before the entry point of a kernel that needs exactly the
                                   // work-group size it names: %d stands for the size
  std::string_view preamble;       // before everything: pragmas
  std::string_view fp64_preamble;  // added when the kernel uses f64
  std::string_view i32, i64, f32, f64;  // type names
  std::string_view u32, u64;            // the unsigned types integers wrap through

  std::string_view type(DType t) const {
    switch (t) {
      case DType::i32: return i32;
      case DType::i64: return i64;
      case DType::f32: return f32;
      case DType::f64: return f64;
      case DType::boolean: return i32;  // loaded and stored as 0 and 1
      case DType::f16:
      case DType::bf16: break;  // loaded and stored as the f32 values they are
      case DType::c64:
      case DType::c128: break;  // no device kernels (FusionPolicy::complex_types)
    }
    return f32;
  }
};

// OpenCL C 1.2: no contraction of a * b + c into fma (the gradient of max compares a value
// recomputed in another kernel with the reduction's result, so every kernel must round alike).
inline constexpr Dialect kOpenClC{
    .name = "OpenCL C",
    .kernel = "__kernel void",
    .global = "__global",
    .local = "__local",
    .global_id = "get_global_id(0)",
    .local_id = "get_local_id(0)",
    .group_id = "get_group_id(0)",
    .barrier = "barrier(CLK_LOCAL_MEM_FENCE)",
    .function = "__attribute__((overloadable))",
    .fixed_group = "__attribute__((reqd_work_group_size(%d, 1, 1)))",
    .preamble = "#pragma OPENCL FP_CONTRACT OFF\n",
    .fp64_preamble = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
    .i32 = "int",
    .i64 = "long",
    .f32 = "float",
    .f64 = "double",
    .u32 = "uint",
    .u64 = "ulong",
};

}  // namespace kiln::detail
