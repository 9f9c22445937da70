// The generated-kernel backend, written once against the device interface (device_api.hpp): each
// kernel of the runtime's schedule that the renderer has a form for runs as one kernel rendered
// in the device's dialect, compiled once (program_cache.hpp) and launched on the device. Results
// stay in device memory until a host reads them. A backend (OpenCL, CUDA) is an instance that
// names itself, says what it fuses, and may hand kernels to its own libraries (BLAS products).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "exec/backend.hpp"
#include "exec/device/device_api.hpp"
#include "exec/device/program_cache.hpp"
#include "exec/matrix_layout.hpp"

namespace kiln::detail::device {

class GeneratedBackend : public Backend {
 public:
  explicit GeneratedBackend(std::shared_ptr<DeviceApi> device);
  ~GeneratedBackend() override;

  std::string setup() const override {
    return device_->name() + ", " + device_->driver() +
           (dialect_.nan_rule ? ", NaN rule spelled out" : "");
  }
  bool supports(const Kernel& k, std::string& reason) const override;
  KernelOutcome run(const KernelRun& r) override;
  void synchronize() override { device_->finish(); }
  void place(const Buffer& values) override;
  bool holds(const Buffer& values) const override;

  // Recorded schedules (recorded_schedule.cpp): the device records an evaluation (a CUDA graph,
  // or a list of launches) that reads copies of its inputs and writes buffers of its own, and
  // each replay copies this evaluation's inputs in, runs the recording and copies the results
  // that outlive the evaluation out to new buffers. Whether the backend records is its own
  // choice (records_).
  bool records() const override { return records_; }
  bool begin_recording(const GraphStructure& structure, SchedulePlan& plan) override;
  bool end_recording(const GraphStructure& structure, SchedulePlan& plan,
                     std::span<const int> keep, bool ran) override;
  bool replay(const GraphStructure& structure, SchedulePlan& plan,
              std::span<const int> keep) override;
  // How many evaluations every generated backend recorded and replayed (for tests).
  static std::uint64_t recordings();
  static std::uint64_t replays();

  DeviceApi& device() const { return *device_; }
  const ProgramCache& programs() const { return programs_; }
  // The dialect kernels are rendered in: the device's, spelling out the NaN rule where the
  // device's arithmetic does not follow it by itself.
  const Dialect& dialect() const { return dialect_; }

 protected:
  // Whether the backend's libraries compute kernel `k` (say why not in `reason`); the renderer
  // takes the kernels they do not.
  virtual bool library_supports(const Kernel& k, std::string& reason) const {
    reason = "no library of the backend takes it";
    static_cast<void>(k);
    return false;
  }
  // Computes the kernel with the backend's libraries; false leaves it to the generated kernel.
  virtual bool library_kernel(const KernelRun& r) {
    static_cast<void>(r);
    return false;
  }

  // Where an output's values go: the memory the plan lets it reuse, or new memory.
  struct Output {
    std::shared_ptr<DeviceBuffer> memory;
    std::shared_ptr<Buffer> reused;
  };
  Output output(const KernelRun& r, std::size_t i, const Node& n);
  void publish(Node& n, Output o);
  // The buffer's copy on this device, uploaded now if it has none.
  std::shared_ptr<DeviceBuffer> on_device(const Buffer& b);

  // For library_kernel: the matmul kernel `r` through the backend's BLAS. Where both operands lie
  // as a BLAS reads them (library_layout), `call` gets their device buffers and layouts and the
  // result's buffer, and the result is published when it succeeds; otherwise false (KILN_DEBUG
  // names the reason) leaves the product to the generated kernel.
  using ProductCall =
      std::function<bool(const DeviceBuffer& a, MatrixLayout a_layout, const DeviceBuffer& b,
                         MatrixLayout b_layout, const DeviceBuffer& out, std::string& why)>;
  bool library_product(const KernelRun& r, const ProductCall& call);
  // Whether the environment variable `name` is set to `value` (unset counts as "").
  static bool environment_is(const char* name, std::string_view value);
  // KILN_DEBUG: name each kernel a library refused.
  const bool debug_ = !environment_is("KILN_DEBUG", "") && !environment_is("KILN_DEBUG", "0");
  // Whether schedules are recorded (set by the backend).
  bool records_ = false;
  // Counts the times the backend's libraries dropped state a recording may use (cuFFT's plans):
  // a recording made before is not replayed.
  virtual std::uint64_t library_epoch() const { return 0; }

 private:
  struct Prepared;
  const Prepared& prepare(const KernelRun& r);

  struct Recorded;
  struct Recording;
  // The results the nodes at `keep` need, copied out of the recording's buffers.
  void copy_out(const GraphStructure& structure, const Recorded& recorded,
                std::span<const int> keep);
  // An input's values into the recording's copy of it.
  void fill_copy(const Buffer& values, const DeviceBuffer& copy, std::size_t bytes);
  // Whether the last run of a recording found an index out of range (its flag).
  bool index_out_of_range(const Recorded& recorded);
  std::unique_ptr<Recording> recording_;  // while an evaluation is recorded
  std::shared_ptr<DeviceBuffer> zero_;    // 4 bytes of zero, a recording's flag's first value
  // Bytes held by the recordings alive.
  std::shared_ptr<std::atomic<std::size_t>> recorded_bytes_ =
      std::make_shared<std::atomic<std::size_t>>(0);

  // Whether the device's arithmetic gives the host's NaN bits by itself (one small kernel).
  bool follows_nan_rule();

  std::shared_ptr<DeviceApi> device_;
  ProgramCache programs_;  // declared after device_: programs go before the device
  Dialect dialect_;
  DeviceTraits traits_;  // the device's, as kernels are rendered for it
};

}  // namespace kiln::detail::device
