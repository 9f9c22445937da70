// The interface a backend implements. The runtime (runtime.hpp) does everything that is the same
// for every backend: the structural walk and the schedule cache, the memory plan, empty results,
// host fallback, releasing intermediate results, and KILN_DEBUG / KILN_PROFILE output. A backend
// only says who it is and runs the kernels of the schedule.
#pragma once

#include <memory>
#include <span>
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
  // Recorded schedules (a device's graphs). A backend that records() is asked to record an
  // evaluation of a schedule that comes back often, and from then on to replay the recording
  // instead of running the schedule's kernels one by one.
  virtual bool records() const { return false; }
  // Starts recording the evaluation of `plan` about to run; false where the backend cannot. The
  // evaluation runs without in-place updates (KernelRun::reuse is empty).
  virtual bool begin_recording(const GraphStructure& structure, SchedulePlan& plan) {
    static_cast<void>(structure);
    static_cast<void>(plan);
    return false;
  }
  // Ends the recording. `ran`: the evaluation ran to its end. Where the backend keeps the
  // recording (in plan.recording), it runs it, gives the nodes at the positions `keep` their
  // values and returns true. It returns false where the evaluation threw, the recording cannot be
  // kept (plan.recording stays null) or its run gave no values (an index out of range); the
  // runtime then evaluates the schedule again the ordinary way, which gives the same values or
  // the same error.
  virtual bool end_recording(const GraphStructure& structure, SchedulePlan& plan,
                             std::span<const int> keep, bool ran) {
    static_cast<void>(structure);
    static_cast<void>(plan);
    static_cast<void>(keep);
    static_cast<void>(ran);
    return false;
  }
  // Runs plan.recording for this evaluation's nodes, giving the nodes at `keep` their values;
  // false (no node given values) where it cannot serve this evaluation.
  virtual bool replay(const GraphStructure& structure, SchedulePlan& plan,
                      std::span<const int> keep) {
    static_cast<void>(structure);
    static_cast<void>(plan);
    static_cast<void>(keep);
    return false;
  }
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
