// What GeneratedBackend keeps of a recorded schedule (recorded_schedule.cpp), and what it notes
// while recording one. Only the generated backend's files include this header.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "exec/device/generated_backend.hpp"
#include "graph/buffer.hpp"

namespace kiln::detail::device {

struct GeneratedBackend::Recorded final : PreparedKernel {
  // A node whose values the evaluation reads as they are at its start, and the recording's copy.
  struct Input {
    int node;
    std::shared_ptr<DeviceBuffer> copy;
    std::size_t bytes;
  };
  explicit Recorded(std::shared_ptr<std::atomic<std::size_t>> held) : held_(std::move(held)) {}
  ~Recorded() override { *held_ -= counted; }
  Recorded(const Recorded&) = delete;
  Recorded& operator=(const Recorded&) = delete;

  std::vector<Input> inputs;
  // Nodes that read the same buffer as an earlier input when recorded (its position in inputs):
  // the recording reads one copy for both, so it serves only evaluations where they still do.
  std::vector<std::pair<int, std::size_t>> aliases;
  // Per node position: the recording's buffer the node's values end in, or null. Only the nodes
  // whose results outlived the recorded evaluation keep theirs: a result released within it may
  // have had its buffer reused by a later kernel of the recording.
  std::vector<const DeviceBuffer*> results;
  // The random kernels' seeds: the work's name of the argument, and the node whose seed it is.
  struct Seed {
    std::size_t value;
    int node;
  };
  std::vector<Seed> seeds;
  // Set by a kernel that met an index out of range (a buffer of the work's), or null.
  const DeviceBuffer* flag = nullptr;
  std::uint64_t epoch = 0;  // GeneratedBackend::library_epoch() when recording began
  std::size_t bytes = 0;    // the inputs' copies and the work's buffers
  std::size_t counted = 0;  // of them, what the backend counts as held (once kept)
  std::unique_ptr<RecordedWork> work;  // last: it goes before the buffers it names

 private:
  // The backend's recorded_bytes_ (a compiled function's recording may outlive the backend, and
  // go on any thread).
  std::shared_ptr<std::atomic<std::size_t>> held_;
};

struct GeneratedBackend::Recording {
  const GraphStructure* structure = nullptr;
  std::shared_ptr<Recorded> recorded;
  std::shared_ptr<DeviceBuffer> flag;  // recorded->flag, held while recording (not reused)
  // The buffers of the inputs, and their copies the recorded kernels read instead.
  std::unordered_map<const Buffer*, std::shared_ptr<DeviceBuffer>> copies;
};

}  // namespace kiln::detail::device
