// The C-style renderer: a fused kernel of the runtime's schedule as the source of one device
// kernel, in the dialect a backend names (dialect.hpp). Elementwise steps come from the
// registry's C templates, loads through views become index arithmetic, reductions become one
// work-group per output with a fixed tree, so the same input always gives the same bits.
//
// Shapes, strides and sizes are compiled into the source as constants rather than passed as
// arguments: a prepared kernel belongs to one cached schedule, whose structural key already
// includes every shape and view map, so constants cost no extra compilations, and they let the
// device compiler turn the index divisions into multiplications and drop unit dimensions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "exec/codegen/dialect.hpp"
#include "exec/fusion.hpp"
#include "exec/kernel_ir.hpp"

namespace kiln::detail {

class GraphStructure;

// What the device offers that changes the source.
struct DeviceTraits {
  bool fp64 = false;  // double is available (sums of f32 values then accumulate in double)
  std::size_t max_group = 256;  // the largest work-group
  // A GPU, whose memory latency is hidden by many loads in flight: elementwise kernels of many
  // values compute several positions per work-item, their loads issued together. (A CPU's OpenCL
  // compiler vectorises across work-items instead, and loses by it.)
  bool gpu = false;
  // The local memory one kernel may declare: 32 KiB, what OpenCL promises every device, where the
  // device says nothing; at most kMostLocalBytes, CUDA's static shared memory.
  static constexpr std::size_t kMostLocalBytes = 49152;
  std::size_t local_bytes = 32768;
};

struct RenderedKernel {
  std::string source;
  std::string entry;             // the name of the entry point
  int outputs = 0;               // the first arguments: root, then the stored nodes
  std::vector<int> inputs;       // then one buffer per input: positions in the structure
  int seed_of = -1;              // then, where not -1, the seed (u64) of the node at this position
  bool index_check = false;      // then one int the kernel sets to 1 when an index read from
                                 // data lies outside its dimension (the backend reports it)
  std::vector<unsigned char> table;  // then, where not empty, a buffer of these bytes (constants
                                     // the host computes once: the Fourier transforms' twiddles)
  std::size_t global_size = 0;   // work-items in all
  std::size_t local_size = 0;    // per work-group (0: the device chooses)
  bool uses_f64 = false;
  // Where scratch_bytes is not 0, the entry point takes a scratch buffer of that size last (the
  // Fourier transforms of long lines work there). A reduction of few outputs over many terms
  // runs in two launches: the first writes one partial result per work-group to the scratch
  // buffer, then `merge_entry` (in the same source; arguments: the outputs, then the scratch
  // buffer) merges each output's partials in a fixed order.
  std::size_t scratch_bytes = 0;
  std::string merge_entry;
  std::size_t merge_global_size = 0, merge_local_size = 0;
};

// Kernels the renderer has a form for: elementwise (the body, its stored nodes), materialize,
// reductions over adjacent axes, matmul, random_uniform, copies, concat, softmax, the 2-D window
// ops, gather, scatter_add, unwindow, the scans, argsort and the fft: every op but the user's
// callables and the LAPACK ops. `ir` is the
// lowered body (elementwise kernels and reductions with a fused producer); unused otherwise.
bool can_render(const Kernel& k);
// Whether kernels compute node `n`, which has or reads complex values, inside a fused kernel:
// the elementwise ops with a complex form (complex_math.cpp) and where. (can_render also takes
// the reductions, copies, concat, indexing ops, scans and Fourier transforms of complex values;
// matrix products are left to the backend's libraries.)
bool renders_complex(const Node& n);
// Whether the fft node `n` has lines to transform (spectral.cpp): a length above 0.
bool fourier_fits(const Node& n);
RenderedKernel render_kernel(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                             const Dialect& dialect, const DeviceTraits& device);

}  // namespace kiln::detail
