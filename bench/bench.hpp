// Shared vocabulary of kiln_bench: the workloads, their input data and one runnable case per
// library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

using Dims = std::vector<std::int64_t>;

enum class Kind {
  expression,      // exp(sin(a) * b + c) / 2
  row_add,         // [R, C] + [C]
  sum_axis0,
  sum_axis1,
  sum_all,
  matmul,          // a @ b, also batched
  conv2d,          // padding 1, stride 1, no bias
  softmax,         // last axis
  log_softmax,     // last axis
  max_pool2d,      // 2x2, stride 2
  op_chain_lazy,   // x = x + 1 `ops` times on a tiny tensor, evaluated once at the end
  op_chain_eager,  // the same, every op evaluated
  mlp_step,        // one training step of a small MLP: forward, cross-entropy, backward, SGD
  mlp_step_compiled,  // the same step as a kiln::Function (libtorch runs its eager step)
  complex_expression,  // z = complex(a, b); exp(z) * z + z
  complex_matmul,      // complex(a, b) @ complex(c, d), c64
  fft,                 // fft(complex(a, b)) along the last dimension, c64
};

inline bool is_mlp_step(Kind k) { return k == Kind::mlp_step || k == Kind::mlp_step_compiled; }

struct Workload {
  std::string name;
  Kind kind;
  std::vector<Dims> inputs;  // shapes of the f32 inputs
  double bytes = 0;          // bytes a memory-bound run must move (0: not memory-bound)
  double flops = 0;          // arithmetic of a compute-bound run (0: not compute-bound)
  int ops = 0;               // > 0: report microseconds per op over this many ops
  bool uses_blas = false;    // libtorch calls BLAS here: also try OpenBLAS on 1 thread
};

// Inputs of one workload, row-major, one vector per entry of Workload::inputs.
using Inputs = std::vector<std::vector<float>>;

// One workload prepared for one library. run() computes the result from scratch (the result of
// the previous call is dropped); result() reads the last result as row-major floats.
class Case {
 public:
  virtual ~Case() = default;
  virtual void run() = 0;
  virtual std::vector<float> result() = 0;
};

// workloads.cpp
std::vector<Workload> all_workloads();
Inputs make_inputs(const Workload& w);  // uniform values in [-1, 1), fixed seed

// kiln_cases.cpp
std::unique_ptr<Case> make_kiln_case(const Workload& w, const Inputs& inputs);

#ifdef KILN_BENCH_HAVE_TORCH
// torch_cases.cpp
std::unique_ptr<Case> make_torch_case(const Workload& w, const Inputs& inputs);
std::string torch_version();
#endif

}  // namespace bench
