// Recorded schedules on a generated-kernel backend. A training step evaluates a graph of the same
// structure every time; from its third evaluation the device records one evaluation (a CUDA graph
// captures the stream's work, libraries' kernels included; an API without graphs lists kiln's
// launches), and later evaluations replay the recording instead of choosing buffers and binding
// arguments kernel by kernel.
//
// A recording runs on buffers of its own: it reads copies of the evaluation's inputs and writes
// buffers allocated while recording, which it keeps. Each replay copies this evaluation's inputs
// in, runs the recording, and copies the results that outlive the evaluation (targets, nodes the
// program holds) out to new buffers, so that no result a program holds is ever overwritten by a
// later replay. Random kernels' seeds, values of each evaluation rather than of the structure, are
// set anew before each replay. An upload, a download or a kernel left to the host make the
// schedule one that is not recorded. Kernels that check their indices (gather, scatter_add) set a
// flag of the recording's, read after each run: where it is set, nothing is copied out and the
// evaluation runs again the ordinary way, which reports the index as the reference does.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "exec/device/recorded_schedule.hpp"
#include "graph/node.hpp"

namespace kiln::detail::device {

namespace {

std::atomic<std::uint64_t> recorded{0}, replayed{0};

// What the recordings of one backend may hold together: a recording costs as much memory as the
// evaluation it recorded, held between evaluations; a step past this runs the ordinary way.
constexpr std::size_t kMostRecordedBytes = std::size_t{2} << 30;

}  // namespace

std::uint64_t GeneratedBackend::recordings() { return recorded.load(std::memory_order_relaxed); }
std::uint64_t GeneratedBackend::replays() { return replayed.load(std::memory_order_relaxed); }

bool GeneratedBackend::begin_recording(const GraphStructure& structure, SchedulePlan& plan) {
  if (!records_ || recording_) return false;
  const std::vector<Node*>& nodes = structure.nodes();
  auto recording = std::make_unique<Recording>();
  recording->structure = &structure;
  recording->recorded = std::make_shared<Recorded>(recorded_bytes_);
  Recorded& r = *recording->recorded;
  r.results.assign(nodes.size(), nullptr);
  // Each node the schedule reads and does not compute: copied, before recording, to a buffer
  // of the recording's.
  std::vector<char> seen(nodes.size(), 0);
  for (const KernelPlan& k : plan.kernels) {
    for (int slot : k.reads) {
      const auto s = static_cast<std::size_t>(slot);
      if (plan.computed[s] || seen[s]) continue;
      seen[s] = 1;
      const Buffer* values = nodes[s]->result.get();
      if (values == nullptr) return false;
      if (auto found = recording->copies.find(values); found != recording->copies.end()) {
        const auto first = std::find_if(r.inputs.begin(), r.inputs.end(), [&](const auto& in) {
          return in.copy == found->second;
        });
        r.aliases.emplace_back(slot, static_cast<std::size_t>(first - r.inputs.begin()));
        continue;
      }
      const std::size_t bytes = device_->bytes_of(values->dtype(), values->numel());
      auto copy = device_->allocate(bytes);
      fill_copy(*values, *copy, bytes);
      r.bytes += copy->bytes();
      recording->copies.emplace(values, copy);
      r.inputs.push_back({slot, std::move(copy), bytes});
    }
  }
  if (*recorded_bytes_ + r.bytes > kMostRecordedBytes) return false;
  r.epoch = library_epoch();
  if (!zero_) {
    const std::int32_t zero = 0;
    zero_ = device_->allocate(sizeof zero);
    device_->upload(*zero_, &zero, sizeof zero);
  }
  device_->begin_recording();
  recording_ = std::move(recording);
  return true;
}

bool GeneratedBackend::end_recording(const GraphStructure& structure, SchedulePlan& plan,
                                     std::span<const int> keep, bool ran) {
  // The device's recording ends whatever happened (a CUDA stream stops capturing).
  std::unique_ptr<RecordedWork> work = device_->end_recording();
  std::unique_ptr<Recording> recording = std::move(recording_);
  if (!ran || !work || !recording) return false;
  std::shared_ptr<Recorded> r = std::move(recording->recorded);
  r->bytes += work->bytes();
  r->work = std::move(work);
  // A library that dropped state while recording (cuFFT's plans) leaves the work stale.
  if (r->epoch != library_epoch()) return false;
  // A result the backend did not publish (none is expected) cannot be copied out.
  std::vector<const DeviceBuffer*> kept(r->results.size(), nullptr);
  for (int slot : keep) {
    const auto s = static_cast<std::size_t>(slot);
    if (r->results[s] == nullptr) return false;
    kept[s] = r->results[s];
  }
  r->results = std::move(kept);
  if (*recorded_bytes_ + r->bytes > kMostRecordedBytes) return false;
  *recorded_bytes_ += r->bytes;
  r->counted = r->bytes;
  recorded.fetch_add(1, std::memory_order_relaxed);
  plan.recording = r;
  // Nothing recorded has run: this evaluation's values come from its first run.
  r->work->run();
  if (index_out_of_range(*r)) return false;
  copy_out(structure, *r, keep);
  return true;
}

bool GeneratedBackend::replay(const GraphStructure& structure, SchedulePlan& plan,
                              std::span<const int> keep) {
  const auto& r = static_cast<const Recorded&>(*plan.recording);
  if (r.epoch != library_epoch()) {
    plan.recording.reset();  // recorded again when it comes back
    plan.evaluations = 0;
    return false;
  }
  const std::vector<Node*>& nodes = structure.nodes();
  // A node the program holds now whose result the recorded evaluation released (its buffer may
  // have served a later kernel) makes this evaluation an ordinary one, as does a missing input.
  for (int slot : keep)
    if (r.results[static_cast<std::size_t>(slot)] == nullptr) return false;
  for (const auto& in : r.inputs)
    if (!nodes[static_cast<std::size_t>(in.node)]->result) return false;
  for (const auto& [slot, first] : r.aliases) {
    const Buffer* values = nodes[static_cast<std::size_t>(slot)]->result.get();
    if (values == nullptr ||
        values != nodes[static_cast<std::size_t>(r.inputs[first].node)]->result.get())
      return false;
  }
  device_->usable();
  for (const auto& in : r.inputs)
    fill_copy(*nodes[static_cast<std::size_t>(in.node)]->result, *in.copy, in.bytes);
  for (const auto& seed : r.seeds)
    r.work->set_value(seed.value, nodes[static_cast<std::size_t>(seed.node)]->attrs.seed);
  r.work->run();
  if (index_out_of_range(r)) return false;
  copy_out(structure, r, keep);
  replayed.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void GeneratedBackend::fill_copy(const Buffer& values, const DeviceBuffer& copy, std::size_t bytes) {
  // Values the device holds are copied there; host values (a scalar operand, a new batch) are
  // uploaded straight into the copy.
  if (const auto held = values.copy_on(*device_))
    device_->copy(static_cast<const DeviceBuffer&>(*held), copy, bytes);
  else
    device_->upload(copy, values.data(), bytes);
}

bool GeneratedBackend::index_out_of_range(const Recorded& recorded) {
  if (recorded.flag == nullptr) return false;
  std::int32_t flagged = 0;
  device_->download(*recorded.flag, &flagged, sizeof flagged);
  return flagged != 0;
}

void GeneratedBackend::copy_out(const GraphStructure& structure, const Recorded& recorded,
                                std::span<const int> keep) {
  const std::vector<Node*>& nodes = structure.nodes();
  for (int slot : keep) {
    Node& n = *nodes[static_cast<std::size_t>(slot)];
    const std::size_t bytes = device_->bytes_of(n.dtype, n.numel());
    auto out = device_->allocate(bytes);
    device_->copy(*recorded.results[static_cast<std::size_t>(slot)], *out, bytes);
    n.result = std::make_shared<Buffer>(n.dtype, n.numel(), std::move(out));
  }
}

}  // namespace kiln::detail::device
