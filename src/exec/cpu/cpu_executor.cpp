// The fast CPU executor: runs the schedule's kernels. Schedules and compiled fused kernels are
// cached by the graph's structure (schedule_cache.hpp), so a repeated graph is only bound and
// run. Each kind of kernel has its file: fused elementwise kernels (fused_program.cpp,
// elementwise_kernels.cpp), reductions (reduce.cpp), matmul (gemm.cpp: oneDNN for f32, OpenBLAS
// for f64 and small f32 products), convolution and pooling (window2d.cpp), softmax, gather and
// scatter_add, scans and argsort (sorting.cpp), and the linalg ops through LAPACK (the
// reference's own kernel); every other op runs its reference kernel, which KILN_DEBUG names.
// Work is split over OpenMP's thread team (parallel.hpp).
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <vector>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cpu/float_loops.hpp"
#include "exec/cpu/gemm.hpp"
#include "exec/cpu/indexing.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/cpu/softmax.hpp"
#include "exec/cpu/sorting.hpp"
#include "exec/cpu/window2d.hpp"
#include "exec/fusion.hpp"
#include "exec/kernel_profile.hpp"
#include "exec/memory_policy.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/schedule_cache.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail::cpu {

namespace {

// Returns whether it fell back to the reference kernel (integer products).
bool run_matmul(const Kernel& k) {
  Node& root = *k.root;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  const bool fast = matmul_with_library(root, k.inputs[0], k.inputs[1], *out);
  if (!fast) run_reference_kernel(root, *out);
  root.result = std::move(out);
  return !fast;
}

// Runs the ops without a fused kernel: CPU kernels where there are, else the reference kernel,
// which KILN_DEBUG reports and KILN_PROFILE labels. Returns whether it fell back.
bool run_single(const Kernel& k) {
  Node& root = *k.root;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  const OpKind kind = root.info().kind;
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
  if (!fast) run_reference_kernel(root, *out);
  root.result = std::move(out);
  return !fast;
}

bool debug_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_DEBUG");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

class CpuExecutor final : public Executor {
 public:
  std::string_view name() const override { return "cpu"; }

  void execute(std::span<Node* const> targets) override {
    if (std::all_of(targets.begin(), targets.end(), [](Node* t) { return t->result != nullptr; }))
      return;
    use_thread_count();
    const ProfileTimer scheduling;
    structure_.build(targets);
    bool cached = false;
    SchedulePlan& plan = cache_.plan(targets, structure_, cached);
    plan.bind(structure_, kernels_);
    const std::vector<Kernel>& kernels = kernels_;
    if (scheduling.on()) profile_label(cached ? "scheduling (cached)" : "scheduling", scheduling.seconds());
    if (debug_enabled() && !kernels.empty())
      std::cerr << "[kiln] schedule (" << float_loops().isa << ", " << thread_count()
                << " threads" << (cached ? ", cached" : "") << "):\n"
                << describe(kernels);
    // Results of kernels are released after their last reader unless a handle or a target
    // needs them.
    std::vector<int>& readers = readers_;
    readers.assign(plan.readers.begin(), plan.readers.end());
    const std::vector<Node*>& nodes = structure_.nodes();
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& k = kernels[i];
      KernelPlan& p = plan.kernels[i];
      const ProfileTimer timer;
      bool fell_back = false;
      // A result with no elements needs no kernel, however large the other sizes of its shape:
      // kernels that loop over those (concat's outer rows, a copy through a permutation) would
      // spend time and memory on them for nothing.
      if (k.root->numel() == 0) {
        k.root->result = std::make_shared<Buffer>(k.root->dtype, 0);
        for (Node* s : k.stored) s->result = std::make_shared<Buffer>(s->dtype, 0);
      } else switch (k.kind) {
        case Kernel::Kind::elementwise:
          reusable(k, structure_, plan, readers, reuse_);
          run_elementwise(k, code_of(p, k, structure_), structure_, reuse_);
          reuse_.clear();
          break;
        case Kernel::Kind::reduce: fell_back = run_reduce(k, p, structure_); break;
        case Kernel::Kind::matmul: fell_back = run_matmul(k); break;
        case Kernel::Kind::materialize: run_materialize(k); break;
        case Kernel::Kind::single: fell_back = run_single(k); break;
      }
      if (fell_back && debug_enabled())
        std::cerr << "[kiln] reference kernel: " << k.root->info().name << " "
                  << dtype_name(k.root->dtype) << shape_to_string(k.root->shape)
                  << " (the cpu executor has no kernel of its own for it)\n";
      if (timer.on()) profile_kernel(k, timer.seconds(), fell_back);
      for (int slot : p.reads) {
        const auto s = static_cast<std::size_t>(slot);
        Node* n = nodes[s];
        if (--readers[s] == 0 && plan.computed[s] && !plan.requested[s] && n->handles.load() == 0)
          n->result.reset();
      }
    }
  }

 private:
  GraphStructure structure_;
  ScheduleCache cache_;
  // Per-evaluation scratch kept between evaluations (they are serialised), so that a repeated
  // small graph allocates nothing here.
  std::vector<Kernel> kernels_;
  std::vector<int> readers_;
  std::vector<std::shared_ptr<Buffer>> reuse_;
};

}  // namespace

}  // namespace detail::cpu

std::shared_ptr<Executor> cpu_executor() {
  static const auto instance = std::make_shared<detail::cpu::CpuExecutor>();
  return instance;
}

}  // namespace kiln
