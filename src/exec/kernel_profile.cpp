#include "exec/kernel_profile.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/error.hpp"
#include "kiln/profile.hpp"

namespace kiln {

struct Profile::State {
  mutable std::mutex mutex;
  std::map<std::string, KernelStats> kernels;  // keyed by what the kernel computes and where
  double scheduling = 0;
  bool recording = true;
};

namespace {

// The recording profiles; `active` mirrors their count for the runtime's per-kernel check.
struct Recorders {
  std::mutex mutex;
  std::vector<std::shared_ptr<Profile::State>> states;
  std::atomic<int> active{0};
};

Recorders& recorders() {
  static Recorders instance;
  return instance;
}

void start_recording(const std::shared_ptr<Profile::State>& state) {
  Recorders& r = recorders();
  std::lock_guard lock(r.mutex);
  r.states.push_back(state);
  r.active.store(static_cast<int>(r.states.size()), std::memory_order_relaxed);
}

void stop_recording(const std::shared_ptr<Profile::State>& state) {
  Recorders& r = recorders();
  {
    std::lock_guard lock(r.mutex);
    if (std::find(r.states.begin(), r.states.end(), state) == r.states.end()) return;
    std::erase(r.states, state);
    r.active.store(static_cast<int>(r.states.size()), std::memory_order_relaxed);
  }
  std::lock_guard lock(state->mutex);
  state->recording = false;
}

template <class F> void for_each_recorder(F f) {
  Recorders& r = recorders();
  std::lock_guard lock(r.mutex);
  for (const auto& state : r.states) {
    std::lock_guard state_lock(state->mutex);
    f(*state);
  }
}

// KILN_PROFILE=1: a profile of the whole program, printed when it exits. Made on the first
// kernel (after the recorders, so it is destroyed before them).
struct ProgramProfile {
  Profile profile;
  ~ProgramProfile() {
    profile.stop();
    std::fputs(profile.table().c_str(), stderr);
  }
};

bool env_profile() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_PROFILE");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

double elements_read(const detail::KernelInput& in) {
  const double stored = static_cast<double>(in.node->numel());
  return in.through ? std::min(stored, static_cast<double>(in.through->numel())) : stored;
}

// Floating-point (or integer) operations per call, where the kernel's kind says them.
double flops_of(const detail::Kernel& k) {
  using Kind = detail::Kernel::Kind;
  const detail::Node& root = *k.root;
  const double out = static_cast<double>(root.numel());
  switch (k.kind) {
    case Kind::elementwise: return out * static_cast<double>(k.body.size());
    case Kind::reduce: {
      const double in = static_cast<double>(root.inputs[0]->numel());
      return in * static_cast<double>(1 + k.body.size());
    }
    case Kind::matmul: return 2 * out * static_cast<double>(root.inputs[0]->shape.back());
    case Kind::single:
      if (root.op == detail::Op::conv2d) {
        const detail::Node& w = *root.inputs[1];
        return 2 * out * static_cast<double>(w.numel()) / static_cast<double>(w.shape[0]);
      }
      return 0;
    case Kind::materialize: return 0;
  }
  return 0;
}

}  // namespace

Profile::Profile() : state_(std::make_shared<State>()) { start_recording(state_); }
Profile::~Profile() { stop(); }
void Profile::stop() { stop_recording(state_); }

bool Profile::recording() const {
  std::lock_guard lock(state_->mutex);
  return state_->recording;
}

std::vector<KernelStats> Profile::kernels() const {
  std::vector<KernelStats> out;
  {
    std::lock_guard lock(state_->mutex);
    for (const auto& [key, stats] : state_->kernels) out.push_back(stats);
  }
  double total = 0;
  for (const KernelStats& k : out) total += k.seconds;
  for (KernelStats& k : out) k.share = total > 0 ? k.seconds / total : 0;
  std::stable_sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.seconds > b.seconds;
  });
  return out;
}

double Profile::kernel_seconds() const {
  std::lock_guard lock(state_->mutex);
  double total = 0;
  for (const auto& [key, stats] : state_->kernels) total += stats.seconds;
  return total;
}

double Profile::scheduling_seconds() const {
  std::lock_guard lock(state_->mutex);
  return state_->scheduling;
}

std::string Profile::table() const {
  const std::vector<KernelStats> rows = kernels();
  long calls = 0;
  for (const KernelStats& k : rows) calls += k.calls;
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line,
                "[kiln] profile: %.3f ms in %ld kernel calls, %.3f ms finding schedules\n",
                kernel_seconds() * 1e3, calls, scheduling_seconds() * 1e3);
  out += line;
  std::snprintf(line, sizeof line, "%10s %6s %8s %10s %8s %8s  %-9s %s\n", "ms", "%", "calls",
                "us/call", "GB/s", "GFLOP/s", "backend", "kernel  [reads from memory because]");
  out += line;
  for (const KernelStats& k : rows) {
    std::string kernel =
        k.kind + " " + k.op + " " + dtype_name(k.dtype) + shape_to_string(k.shape);
    if (!k.fused.empty()) {
      kernel += " (";
      for (std::size_t i = 0; i < k.fused.size(); ++i) kernel += (i ? " " : "") + k.fused[i];
      kernel += ")";
    }
    if (k.reference) kernel += " reference kernel";
    if (!k.boundary.empty()) kernel += "  [" + k.boundary + "]";
    char gflops[16] = "-";
    if (k.flops > 0) std::snprintf(gflops, sizeof gflops, "%.2f", k.gflops());
    std::snprintf(line, sizeof line, "%10.3f %6.1f %8ld %10.1f %8.2f %8s  %-9s ", k.seconds * 1e3,
                  100 * k.share, k.calls, k.mean_seconds() * 1e6, k.gbytes_per_second(), gflops,
                  k.backend.c_str());
    out += line + kernel + "\n";
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Profile& profile) {
  return os << profile.table();
}

namespace detail {

bool profiling_enabled() {
  if (env_profile()) {
    static ProgramProfile program;
    return true;
  }
  return recorders().active.load(std::memory_order_relaxed) > 0;
}

void profile_kernel(const Kernel& k, std::string_view backend, double seconds,
                    bool reference_fallback) {
  KernelStats stats;
  stats.kind = kind_name(k.kind);
  stats.op = std::string(k.root->info().name);
  if (k.body.size() > 1 || (k.body.size() == 1 && k.body[0] != k.root)) {
    for (const Node* n : k.body) stats.fused.emplace_back(n->info().name);
    if (k.body.back() != k.root) stats.fused.push_back(stats.op);  // a reduction's own op
  }
  stats.dtype = k.root->dtype;
  stats.shape = k.root->shape;
  stats.backend = std::string(backend);
  stats.reference = reference_fallback;
  std::set<std::string> reasons;
  for (const KernelInput& in : k.inputs) {
    if (in.reason != nullptr && in.reason[0] != '\0' && reasons.insert(in.reason).second)
      stats.boundary += (stats.boundary.empty() ? "" : "; ") + std::string(in.reason);
    stats.bytes += elements_read(in) * static_cast<double>(size_of(in.node->dtype));
  }
  stats.bytes += static_cast<double>(k.root->numel()) * static_cast<double>(size_of(k.root->dtype));
  for (const Node* s : k.stored)
    stats.bytes += static_cast<double>(s->numel()) * static_cast<double>(size_of(s->dtype));
  stats.flops = flops_of(k);

  std::string key = stats.kind + '|' + stats.op + '|' + dtype_name(stats.dtype) +
                    shape_to_string(stats.shape) + '|' + stats.backend + '|' +
                    (stats.reference ? "r" : "") + '|' + stats.boundary + '|';
  for (const std::string& f : stats.fused) key += f + ' ';
  for_each_recorder([&](Profile::State& state) {
    auto [it, fresh] = state.kernels.try_emplace(key, stats);
    it->second.calls += 1;
    it->second.seconds += seconds;
  });
}

void profile_scheduling(double seconds) {
  for_each_recorder([&](Profile::State& state) { state.scheduling += seconds; });
}

}  // namespace detail

}  // namespace kiln
