// The device interface under every generated-kernel backend (OpenCL now, CUDA next): what a
// device API must offer for kiln's generated kernels to run on it. GeneratedBackend
// (generated_backend.hpp) is written once against it; a backend's folder implements it with its
// API's calls and adds only what is truly its own (a BLAS library's products). No type of a
// device API appears here: handles are opaque to everything above the backend's folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "exec/codegen/dialect.hpp"
#include "exec/codegen/render.hpp"
#include "graph/device_memory.hpp"
#include "kiln/types.hpp"

namespace kiln::detail::device {

// One allocation of device memory, from the device's pool; back to the pool when the last holder
// lets go.
class DeviceBuffer : public DeviceMemory {
 public:
  virtual std::size_t bytes() const = 0;
};

// A compiled program: its entry points, and the binary the disk cache keeps.
class DeviceProgram {
 public:
  virtual ~DeviceProgram() = default;
  // The entry point `name`, as the handle DeviceApi::launch takes; the program owns it.
  virtual void* entry(const std::string& name) = 0;
  // The device's binary of the program; empty where the API gives none.
  virtual std::vector<unsigned char> binary() const = 0;
};

// Work a device recorded (DeviceApi::begin_recording) and queues again as a whole: a CUDA graph,
// or the list of launches an API without graphs queues one by one. It runs on the buffers it was
// recorded with, which it keeps allocated as long as it lives.
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  virtual void run() = 0;
  // Sets a value argument the recording named (DeviceApi::recorded_value) for the runs after.
  virtual void set_value(std::size_t value, std::uint64_t to) = 0;
  // The bytes of the buffers allocated while recording.
  std::size_t bytes() const {
    std::size_t total = 0;
    for (const auto& b : buffers) total += b->bytes();
    return total;
  }
  std::vector<std::shared_ptr<DeviceBuffer>> buffers;
};

// One argument of a launch: a device buffer, or (buffer null) a 64-bit unsigned value.
struct KernelArgument {
  const DeviceBuffer* buffer = nullptr;
  std::uint64_t value = 0;
};

class DeviceApi : public Device {
 public:
  // The API's name ("opencl"): the kernel cache's folder and the start of messages.
  virtual std::string_view api() const = 0;
  virtual const std::string& name() const = 0;    // the device's
  virtual const std::string& driver() const = 0;  // the driver's version
  virtual const DeviceTraits& traits() const = 0;
  // The language kernels are rendered in, and the options every compilation gets (the dialect's
  // and the device's own).
  virtual const Dialect& dialect() const = 0;
  virtual const std::string& compile_options() const = 0;

  // The bytes of `numel` values; out_of_memory when they exceed the device's largest buffer.
  virtual std::size_t bytes_of(DType dtype, std::int64_t numel) const = 0;
  // A buffer of at least `bytes` bytes (contents undefined). Throws out_of_memory when the
  // device has no room even after its pool gave back what it keeps.
  virtual std::shared_ptr<DeviceBuffer> allocate(std::size_t bytes) = 0;
  virtual void upload(const DeviceBuffer& to, const void* from, std::size_t bytes) = 0;
  virtual void download(const DeviceBuffer& from, void* to, std::size_t bytes) = 0;

  // `source` compiled with compile_options(); a source the compiler refuses is an
  // internal_error carrying the compiler's log and the source.
  virtual std::unique_ptr<DeviceProgram> compile(const std::string& source) = 0;
  // A program from a binary an earlier compile() gave (the disk cache), or null when the driver
  // refuses it (another driver version, a damaged file): the caller compiles the source then.
  virtual std::unique_ptr<DeviceProgram> load(const std::vector<unsigned char>& binary) = 0;
  // Queues `entry` over `global` work-items in groups of `local` (0: the device chooses).
  virtual void launch(void* entry, std::span<const KernelArgument> arguments, std::size_t global,
                      std::size_t local) = 0;
  // Waits for everything queued.
  virtual void finish() = 0;
  // Queues a copy of `bytes` bytes between two buffers of the device.
  virtual void copy(const DeviceBuffer& from, const DeviceBuffer& to, std::size_t bytes) = 0;

  // Recording: from begin_recording to end_recording, launches and copies are recorded, not run
  // (nothing recorded has run when end_recording returns), and every buffer allocated meanwhile
  // belongs to the recording, so that its address stays the work's. Uploads, downloads and waits
  // need work done, so they throw while recording: the caller then ends the recording and
  // discards it. end_recording gives null where the API could not keep what it recorded.
  // records_libraries(): whether the API also records what the backend's libraries queue (CUDA's
  // stream capture does; an API that lists only its own launches does not).
  virtual void begin_recording() = 0;
  virtual std::unique_ptr<RecordedWork> end_recording() = 0;
  // While recording: names the value argument `argument` of the launch just recorded (a random
  // seed, which each evaluation has its own of), for RecordedWork::set_value.
  virtual std::size_t recorded_value(std::size_t argument) = 0;
  virtual bool records_libraries() const = 0;

  // A device that stops answering (a driver reset, a GPU fallen off the bus) is lost for good:
  // every later use throws device_error naming it, without asking the driver again. Values that
  // lived only on it are gone; host copies stay readable and the other executors keep working.
  virtual bool lost() const = 0;
  virtual void usable() const = 0;  // throws device_error once the device is lost
};

}  // namespace kiln::detail::device
