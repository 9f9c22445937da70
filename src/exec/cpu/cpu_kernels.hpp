// The kernels of the CPU executor, one function per kind of kernel in the schedule
// (exec/fusion.hpp); each computes its kernel's root (and stored nodes) into new buffers or, for
// elementwise kernels, into the buffers the memory policy offers.
#pragma once

#include <memory>
#include <vector>

#include "exec/cpu/fused_program.hpp"
#include "exec/fusion.hpp"
#include "exec/schedule_cache.hpp"
#include "graph/buffer.hpp"

namespace kiln::detail::cpu {

// A fused elementwise kernel; `reuse` holds a buffer (or null) per output: root, then stored.
void run_elementwise(const Kernel& k, const Code& code, const GraphStructure& structure,
                     const std::vector<std::shared_ptr<Buffer>>& reuse);

// Writes the values of `in` (its buffer read through its view, if any) to `out`, converted to
// out's type: the copy behind materialised views and `contiguous`.
void copy_values(const KernelInput& in, Buffer& out);
void run_materialize(const Kernel& k);
void run_concat(const Kernel& k, Buffer& out);

// An unfused elementwise op (unary or binary) computed in a complex type (complex_kernels.cpp);
// false, with nothing written, for the others (the reference computes them).
bool run_complex_elementwise(const Kernel& k, Buffer& out);
// The copy of complex values behind a materialised view or `contiguous`; false for the others.
bool run_complex_copy(const Kernel& k, Buffer& out);
// An unfused sum, product or mean of complex values over adjacent axes; false, with nothing
// written, for the others.
bool run_complex_reduce(const Kernel& k, Buffer& out);

// A reduction with its fused producer; returns whether it ran the reference kernel instead.
bool run_reduce(const Kernel& k, KernelPlan& plan, const GraphStructure& structure);

}  // namespace kiln::detail::cpu
