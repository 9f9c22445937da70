// Matrix products on an OpenCL device through CLBlast, the tuned OpenCL BLAS: f32, and f64 on
// devices with cl_khr_fp64, with operands read through transposing and batch-broadcasting views
// as they are. Other products (integer types, views CLBlast cannot express, empty matrices) run
// as the renderer's own kernel.
#pragma once

#include <cstdint>
#include <string>

#include "exec/fusion.hpp"
#include "exec/matrix_layout.hpp"
#include "exec/opencl/opencl_device.hpp"

namespace kiln::detail::opencl {

struct BlasOperand {
  cl_mem memory;
  MatrixLayout layout;
};

// Whether CLBlast computes the matmul node `root` (on a device with or without f64).
bool clblast_takes(const Node& root, bool device_has_fp64);

// Queues root = a @ b into `out` (contiguous, row-major). Returns false when CLBlast refused the
// call (its reason in `why`); throws out_of_memory when the device ran out of memory.
bool clblast_matmul(OpenClDevice& device, const Node& root, const BlasOperand& a,
                    const BlasOperand& b, cl_mem out, std::string& why);

// The products CLBlast has computed in this process (for tests and KILN_DEBUG).
std::uint64_t clblast_products();

}  // namespace kiln::detail::opencl
