// The CPU backend: runs the schedule's kernels for the runtime (runtime.hpp), which caches
// schedules by the graph's structure; the compiled fused kernels are kept with them, so a
// repeated graph is only bound and run. Each kind of kernel has its file: fused elementwise
// kernels (fused_program.cpp, elementwise_kernels.cpp), reductions (reduce.cpp), matmul (gemm.cpp:
// oneDNN for f32, OpenBLAS for f64 and small f32 products), convolution and pooling
// (window2d.cpp), softmax, gather and scatter_add, scans and argsort (sorting.cpp), the linalg
// ops through LAPACK (the reference's own kernel), and the unfused kernels of complex values
// (complex_kernels.cpp); every other op is left to the runtime's reference kernel, which
// KILN_DEBUG names. Work is split over OpenMP's thread team (parallel.hpp).
#include <memory>
#include <string>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cpu/float_loops.hpp"
#include "exec/cpu/gemm.hpp"
#include "exec/cpu/indexing.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/cpu/softmax.hpp"
#include "exec/cpu/sorting.hpp"
#include "exec/cpu/window2d.hpp"
#include "exec/fusion.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/runtime.hpp"
#include "exec/schedule_cache.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail::cpu {

namespace {

// The library's product, or nothing (integer products: the runtime runs the reference kernel).
KernelOutcome run_matmul(const Kernel& k) {
  Node& root = *k.root;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  if (!matmul_with_library(root, k.inputs[0], k.inputs[1], *out)) return KernelOutcome::unsupported;
  root.result = std::move(out);
  return KernelOutcome::ran;
}

// Kernels of complex values (never fused): matrix products through BLAS, elementwise ops,
// copies and sums/products/means (complex_kernels.cpp); the others are left to the runtime's
// reference kernel.
KernelOutcome run_complex(const Kernel& k) {
  if (k.kind == Kernel::Kind::matmul) return run_matmul(k);
  auto out = std::make_shared<Buffer>(k.root->dtype, k.root->numel());
  const OpKind kind = k.root->info().kind;
  bool ran = false;
  if (k.kind == Kernel::Kind::reduce) ran = run_complex_reduce(k, *out);
  else if (k.kind == Kernel::Kind::materialize || kind == OpKind::copy)
    ran = run_complex_copy(k, *out);
  else if (k.kind == Kernel::Kind::single) ran = run_complex_elementwise(k, *out);
  if (!ran) return KernelOutcome::unsupported;
  k.root->result = std::move(out);
  return KernelOutcome::ran;
}

// Whether the CPU has a kernel of a one-node kernel's op and types (else `reason` says why and
// the runtime runs the reference kernel).
bool single_supported(const Node& root, std::string& reason) {
  const OpKind kind = root.info().kind;
  // Narrow types: copies compute them, convolution, pooling and softmax the 16-bit floats (in
  // f32); the others are left to the reference, which widens them.
  if (touches_narrow_types(root) && kind != OpKind::copy && kind != OpKind::concat) {
    auto narrow_not_float = [](DType t) { return is_narrow(t) && !is_narrow_float(t); };
    bool other_narrow = narrow_not_float(root.dtype);
    for (const NodePtr& in : root.inputs) other_narrow = other_narrow || narrow_not_float(in->dtype);
    if (other_narrow || (kind != OpKind::window2d && kind != OpKind::softmax)) {
      reason = "no CPU kernel of this op for 16-bit floats, bool or 8- and 16-bit integers";
      return false;
    }
  }
  switch (kind) {
    case OpKind::window2d:
    case OpKind::softmax:
    case OpKind::copy:
    case OpKind::concat:
    case OpKind::scan:
    case OpKind::sort:
    case OpKind::linalg: return true;
    case OpKind::indexing:
      if (root.op == Op::gather || root.op == Op::scatter_add) return true;
      break;
    default: break;
  }
  reason = "no CPU kernel of this op";
  return false;
}

// The ops without a fused kernel: CPU kernels where there are (single_supported); a kernel may
// still decline operands it does not take, which the runtime then runs with the reference kernel.
KernelOutcome run_single(const Kernel& k) {
  Node& root = *k.root;
  const OpKind kind = root.info().kind;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  bool fast = (kind == OpKind::window2d && run_window2d(k, *out)) ||
              (kind == OpKind::softmax && run_softmax(k, *out)) ||
              (root.op == Op::gather && run_gather(k, *out)) ||
              (root.op == Op::scatter_add && run_scatter_add(k, *out));
  if (kind == OpKind::copy) {
    copy_values(k.inputs[0], *out);
    fast = true;
  } else if (kind == OpKind::concat) {
    run_concat(k, *out);
    fast = true;
  } else if (kind == OpKind::scan) {
    run_scan(k, *out);
    fast = true;
  } else if (kind == OpKind::sort) {
    run_argsort(k, *out);
    fast = true;
  } else if (kind == OpKind::linalg) {  // LAPACK: the same host code as the reference
    run_lapack_kernel(root, *out);
    fast = true;
  }
  if (!fast) return KernelOutcome::unsupported;
  root.result = std::move(out);
  return KernelOutcome::ran;
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  void begin_evaluation() override { use_thread_count(); }

  std::string setup() const override {
    return std::string(float_loops().isa) + ", " + std::to_string(thread_count()) + " threads";
  }

  FusionPolicy fusion() const override {
    FusionPolicy policy;
    policy.narrow_types = true;
    policy.complex_single_kernels = true;  // run_complex
    return policy;
  }

  bool supports(const Kernel& k, std::string& reason) const override {
    if (k.kind == Kernel::Kind::single && !touches_complex_types(*k.root)) [[unlikely]]
      return single_supported(*k.root, reason);
    if (k.kind == Kernel::Kind::matmul && !is_float(k.root->dtype) &&
        !is_complex(k.root->dtype)) [[unlikely]] {
      reason = "no BLAS product of integers";
      return false;
    }
    return true;
  }

  KernelOutcome run(const KernelRun& r) override {
    // The most frequent kind first, with nothing else in its way (a tiny evaluation's cost is
    // mostly such calls).
    if (r.kernel.kind == Kernel::Kind::elementwise) [[likely]] {
      run_elementwise(r.kernel, code_of(r.plan, r.kernel, r.structure), r.structure, r.reuse);
      return KernelOutcome::ran;
    }
    return run_other(r);
  }

 private:
  [[gnu::noinline]] static KernelOutcome run_other(const KernelRun& r) {
    const Kernel& k = r.kernel;
    if (touches_complex_types(*k.root)) return run_complex(k);
    switch (k.kind) {
      case Kernel::Kind::elementwise: break;  // run() took it
      case Kernel::Kind::reduce:
        return run_reduce(k, r.plan, r.structure) ? KernelOutcome::fell_back : KernelOutcome::ran;
      case Kernel::Kind::matmul: return run_matmul(k);
      case Kernel::Kind::materialize: run_materialize(k); return KernelOutcome::ran;
      case Kernel::Kind::single: return run_single(k);
    }
    return KernelOutcome::unsupported;
  }
};

}  // namespace

}  // namespace detail::cpu

std::shared_ptr<Executor> cpu_executor() {
  static const auto instance =
      detail::make_runtime(std::make_unique<detail::cpu::CpuBackend>());
  return instance;
}

}  // namespace kiln
