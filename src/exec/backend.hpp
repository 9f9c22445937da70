// The interface a backend implements. The runtime (runtime.hpp) does everything that is the same
// for every backend: the structural walk and the schedule cache, the memory plan, empty results,
// host fallback, releasing intermediate results, and KILN_DEBUG / KILN_PROFILE output. A backend
// only says who it is and runs the kernels of the schedule.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exec/fusion.hpp"
#include "exec/schedule_cache.hpp"
#include "graph/buffer.hpp"

namespace kiln::detail {

// How a backend answered one kernel.
enum class KernelOutcome {
  ran,          // computed with the backend's own code
  fell_back,    // computed, with the reference code (the backend's choice for this case)
  unsupported,  // not computed: the runtime runs the reference kernel on the host. Only for
                // kernels of one node (matmul, single): fused kernels must be run.
};

// One kernel of an evaluation, as the runtime hands it to the backend.
struct KernelRun {
  const Kernel& kernel;
  KernelPlan& plan;  // what the backend prepares for the kernel it keeps in plan.prepared
  const GraphStructure& structure;
  // Elementwise kernels: per output (root, then the stored nodes), a buffer the output may take
  // over instead of a new one (the memory plan's in-place updates), or null.
  const std::vector<std::shared_ptr<Buffer>>& reuse;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Called once at the start of each evaluation that runs kernels.
  virtual void begin_evaluation() {}
  // What the backend's kernels can compute, and so what its schedules fuse.
  virtual FusionPolicy fusion() const { return {}; }
  // What KILN_DEBUG prints in each schedule's header ("avx512, 2 threads").
  virtual std::string setup() const { return {}; }
  // Whether the backend computes the kernel with its own code (ggml's supports_op). Where it does
  // not, `reason` says why and the runtime runs the reference kernel on the host (only kernels of
  // one node can be declined: fused kernels must be run). run() may still decline a kernel whose
  // operands its code turns out not to take (KernelOutcome::unsupported).
  virtual bool supports(const Kernel& k, std::string& reason) const {
    static_cast<void>(k);
    static_cast<void>(reason);
    return true;
  }
  // Computes the kernel's root (and its stored nodes) into their `result`s.
  virtual KernelOutcome run(const KernelRun& run) = 0;
  // Waits until every kernel it queued has finished (backends that run kernels as they are
  // called have nothing to wait for).
  virtual void synchronize() {}
  // Makes the buffer's values present in the backend's memory (Executor::place); a host
  // backend makes the host copy current.
  virtual void place(const Buffer& values) { static_cast<void>(values.data()); }
  // Whether the buffer's values are in the backend's memory now.
  virtual bool holds(const Buffer& values) const { return values.on_host(); }
};

}  // namespace kiln::detail
