// The runtime every backend shares. One evaluation: the structure of the graph below the targets
// is walked and keyed, the schedule for that structure is found in the cache (or made), bound to
// this graph's nodes, and its kernels run in order on the backend; a result no later kernel, no
// handle and no caller needs is released after its last reader.
#include "exec/runtime.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "exec/evaluate.hpp"
#include "exec/fallback_log.hpp"
#include "exec/kernel_profile.hpp"
#include "exec/memory_policy.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/result_watch.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

bool debug_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_DEBUG");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

namespace {

class Runtime final : public Executor {
 public:
  explicit Runtime(std::unique_ptr<Backend> backend)
      : backend_(std::move(backend)), cache_(backend_->fusion()),
        policy_(backend_->fusion()) {}

  std::string_view name() const override { return backend_->name(); }
  void synchronize() override { backend_->synchronize(); }
  void place(std::span<Node* const> targets) override {
    for (Node* t : targets) {
      if (!t->result)
        throw Error(ErrorCode::internal_error,
                    std::string(t->info().name) + ": placed before it was evaluated");
      backend_->place(*t->result);
    }
  }
  bool holds(const Node& node) const override {
    return node.result != nullptr && backend_->holds(*node.result);
  }

  void execute(std::span<Node* const> targets) override {
    if (std::all_of(targets.begin(), targets.end(), [](Node* t) { return t->result != nullptr; }))
      return;
    backend_->begin_evaluation();
    SchedulePlan& plan = schedule(targets, structure_);
    plan.bind(structure_, kernels_);
    debug_print(kernels_, plan_was_cached_);
    evaluate_plan(structure_, plan, kernels_);
  }

  std::unique_ptr<Prepared> prepare(std::span<Node* const> targets) override;

  void run_prepared(const GraphStructure& structure, SchedulePlan& plan,
                    const std::vector<Kernel>& kernels) {
    backend_->begin_evaluation();
    evaluate_plan(structure, plan, kernels);
  }

  // The evaluation of `plan`: replayed where the backend recorded it, recorded when it comes back
  // for the kRecordedAt-th time, its kernels run one by one otherwise.
  void evaluate_plan(const GraphStructure& structure, SchedulePlan& plan,
                     const std::vector<Kernel>& kernels) {
    if (!plan.unrecordable && backend_->records() && ResultWatch::current() == nullptr &&
        !profiling_enabled()) {
      if (plan.recording) {
        if (replay(structure, plan)) return debug_note("replayed its recording");
      } else if (++plan.evaluations >= kRecordedAt) {
        if (record(structure, plan, kernels)) return debug_note("recorded it");
        if (plan.unrecordable) debug_note("cannot record it: it runs kernel by kernel");
      }
    }
    run_kernels(structure, plan, kernels, /*in_place=*/true);
  }

  // The first evaluation compiles the kernels; a second says the schedule is repeated.
  static constexpr int kRecordedAt = 3;
  // A replay copies inputs in and results out: for a schedule of fewer kernels than this, those
  // copies cost about what launching its kernels one by one does (`x = x + 1; x.eval()`).
  // KILN_GRAPH_MIN_KERNELS changes it (tests record every schedule with 1).
  const std::size_t fewest_kernels_recorded_ = [] {
    const char* v = std::getenv("KILN_GRAPH_MIN_KERNELS");
    return v != nullptr && *v != '\0' ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10))
                                       : std::size_t{4};
  }();

  bool record(const GraphStructure& structure, SchedulePlan& plan,
              const std::vector<Kernel>& kernels) {
    // An empty result is made on the host, not by a kernel; a kernel the backend leaves to the
    // host reads values the recording has not computed (and would wait for the device).
    const bool on_device = std::all_of(kernels.begin(), kernels.end(), [&](const Kernel& k) {
      return k.root->numel() != 0 && !left_to_host(*k.root, policy_) &&
             backend_->supports(k, reason_);
    });
    bool began = false;
    if (on_device && kernels.size() >= fewest_kernels_recorded_) {
      try {
        began = backend_->begin_recording(structure, plan);
      } catch (...) {
        // A device that cannot record now still evaluates the ordinary way.
      }
    }
    if (!began) {
      plan.unrecordable = true;
      return false;
    }
    const std::vector<Node*>& nodes = structure.nodes();
    bool ran = false;
    keep_.clear();
    try {
      run_kernels(structure, plan, kernels, /*in_place=*/false);
      for (std::size_t s = 0; s < nodes.size(); ++s)
        if (plan.computed[s] && nodes[s]->result) keep_.push_back(static_cast<int>(s));
      ran = true;
    } catch (const std::exception& e) {
      // What cannot be recorded (a download, a host kernel) throws while recording; a true error
      // comes again below.
      if (debug_enabled()) std::cerr << "[kiln] not recorded: " << e.what() << "\n";
    } catch (...) {
    }
    if (backend_->end_recording(structure, plan, keep_, ran)) return true;
    // Kept or not, the recording gave no values: they come from an ordinary run.
    plan.unrecordable = plan.recording == nullptr;
    for (std::size_t s = 0; s < nodes.size(); ++s)
      if (plan.computed[s]) nodes[s]->result.reset();
    return false;
  }

  bool replay(const GraphStructure& structure, SchedulePlan& plan) {
    // The nodes whose results outlive the evaluation (run_kernels releases the others).
    const std::vector<Node*>& nodes = structure.nodes();
    keep_.clear();
    for (std::size_t s = 0; s < nodes.size(); ++s)
      if (plan.computed[s] &&
          (plan.requested[s] || plan.readers[s] == 0 || nodes[s]->handles.load() != 0))
        keep_.push_back(static_cast<int>(s));
    return backend_->replay(structure, plan, keep_);
  }

  // The kernels of `plan`, bound to the nodes of `structure`, in order on the backend; with
  // in-place updates where `in_place` (the memory plan's, of an output into a buffer it may take
  // over).
  void run_kernels(const GraphStructure& structure, SchedulePlan& plan,
                   const std::vector<Kernel>& kernels, bool in_place) {
    reuse_.clear();  // an evaluation that threw may have left offers behind
    references_.reset();
    // Results of kernels are released after their last reader unless a handle or a target
    // needs them.
    std::vector<int>& readers = readers_;
    readers.assign(plan.readers.begin(), plan.readers.end());
    const std::vector<Node*>& nodes = structure.nodes();
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
      } else {
        if (k.kind == Kernel::Kind::elementwise && in_place)
          reusable(k, structure, plan, readers, references_, reuse_);
        KernelOutcome outcome = KernelOutcome::unsupported;
        if (left_to_host(*k.root, policy_)) [[unlikely]] {
          reason_ = "the executor computes no values of this type";
        } else if (backend_->supports(k, reason_)) [[likely]] {
          outcome = backend_->run({k, p, structure, reuse_});
          if (outcome != KernelOutcome::ran) [[unlikely]]
            reason_ = outcome == KernelOutcome::fell_back
                          ? "the executor ran the reference code for these operands"
                          : "the executor's kernel does not take these operands";
        }
        if (outcome == KernelOutcome::unsupported) host_fallback(k);
        if (!reuse_.empty()) release_taken_targets(k);
        fell_back = outcome != KernelOutcome::ran;
        if (fell_back) [[unlikely]]
          fallen_back(k);
      }
      if (timer.on()) profile_kernel(k, backend_->name(), timer.seconds(), fell_back);
      if (ResultWatch* watch = ResultWatch::current(); watch != nullptr) [[unlikely]] {
        watch->computed(*k.root);
        for (const Node* s : k.stored) watch->computed(*s);
      }
      for (int slot : p.reads) {
        const auto s = static_cast<std::size_t>(slot);
        Node* n = nodes[s];
        if (--readers[s] == 0 && plan.computed[s] && !plan.requested[s] && n->handles.load() == 0)
          n->result.reset();
      }
    }
  }

 private:
  // The walk of the graph below the targets into `structure`, and its schedule from the cache.
  SchedulePlan& schedule(std::span<Node* const> targets, GraphStructure& structure) {
    const ProfileTimer scheduling;
    structure.build(targets);
    SchedulePlan& plan = cache_.plan(targets, structure, plan_was_cached_);
    if (scheduling.on()) profile_scheduling(scheduling.seconds());
    return plan;
  }

  void debug_print(const std::vector<Kernel>& kernels, bool cached) const {
    if (!debug_enabled() || kernels.empty()) return;
    const std::string setup = backend_->setup();
    std::cerr << "[kiln] schedule (" << backend_->name() << (setup.empty() ? "" : ", ") << setup
              << (cached ? ", cached" : "") << "):\n"
              << describe(kernels);
  }

  static void debug_note(const char* what) {
    if (debug_enabled()) std::cerr << "[kiln] the schedule above: " << what << "\n";
  }

  // Notes a kernel the backend left to the reference code (executor_report, KILN_DEBUG).
  [[gnu::noinline]] void fallen_back(const Kernel& k) {
    note_fallback(backend_->name(), k, reason_);
    if (debug_enabled())
      std::cerr << "[kiln] reference kernel: " << k.root->info().name << " "
                << dtype_name(k.root->dtype) << shape_to_string(k.root->shape) << " (the "
                << backend_->name() << " executor: " << reason_ << ")\n";
  }

  // The reference kernel of a one-node kernel the backend does not run, on the host.
  void host_fallback(const Kernel& k) {
    if (!k.body.empty() || !k.stored.empty())
      throw Error(ErrorCode::internal_error,
                  std::string("the ") + std::string(backend_->name()) + " backend left a fused " +
                      kind_name(k.kind) + " kernel of " + std::string(k.root->info().name) +
                      " undone");
    auto out = std::make_shared<Buffer>(k.root->dtype, k.root->numel());
    run_reference_kernel(*k.root, *out);
    k.root->result = std::move(out);
  }

  // An assign that took over its target's buffer leaves the target without values: a graph
  // kept for gradients that reads the target again finds nothing, rather than the new values.
  void release_taken_targets(const Kernel& k) {
    for (std::size_t i = 0; i < reuse_.size(); ++i) {
      if (!reuse_[i]) continue;
      Node* out = i == 0 ? k.root : k.stored[i - 1];
      Node* target = assign_target(*out);
      if (target != nullptr && out->result == reuse_[i] && target->result == reuse_[i])
        target->result.reset();
    }
    reuse_.clear();
  }

  std::unique_ptr<Backend> backend_;
  GraphStructure structure_;
  ScheduleCache cache_;
  FusionPolicy policy_;  // which types the backend computes (the host computes the others)
  // Per-evaluation scratch kept between evaluations (they are serialised), so that a repeated
  // small graph allocates nothing here.
  std::vector<Kernel> kernels_;
  bool plan_was_cached_ = false;
  std::vector<int> readers_;
  std::vector<int> keep_;
  std::vector<std::shared_ptr<Buffer>> reuse_;
  EvaluationReferences references_;
  std::string reason_;  // why the last kernel left to the host was
};

// A schedule with its own copy of the walk and the plan (the cache may drop its entry) and the
// kernels bound once; each run only executes them.
class PreparedSchedule final : public Executor::Prepared {
 public:
  PreparedSchedule(Runtime& runtime, GraphStructure structure, SchedulePlan plan)
      : runtime_(runtime), structure_(std::move(structure)), plan_(std::move(plan)) {
    plan_.bind(structure_, kernels_);
  }
  void run() override { runtime_.run_prepared(structure_, plan_, kernels_); }
  const std::vector<Kernel>& kernels() const { return kernels_; }

 private:
  Runtime& runtime_;
  GraphStructure structure_;
  SchedulePlan plan_;
  std::vector<Kernel> kernels_;
};

std::unique_ptr<Executor::Prepared> Runtime::prepare(std::span<Node* const> targets) {
  GraphStructure structure;
  SchedulePlan plan = schedule(targets, structure);
  auto prepared = std::make_unique<PreparedSchedule>(*this, std::move(structure), std::move(plan));
  debug_print(prepared->kernels(), plan_was_cached_);
  prepared->run();
  return prepared;
}

}  // namespace

std::shared_ptr<Executor> make_runtime(std::unique_ptr<Backend> backend) {
  return std::make_shared<Runtime>(std::move(backend));
}

}  // namespace kiln::detail
