// One OpenCL device as kiln uses it, the OpenCL instance of the device interface
// (exec/device/device_api.hpp): context, in-order queue, the device's traits, a caching allocator
// of device buffers, uploads and downloads, programs compiled from OpenCL C or loaded from a
// binary, launches. Only the OpenCL backend's files include this header: nothing outside them sees
// an OpenCL type.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/device/device_api.hpp"
#include "exec/device/launch_list.hpp"
#include "exec/device/recorded_buffers.hpp"
#include "exec/device/recording_gate.hpp"

namespace kiln::detail::opencl {

// Throws kiln::Error for an OpenCL failure: out_of_memory for the allocation failures,
// device_error otherwise, naming the call.
void check(cl_int status, const char* call);
// Every device of every platform, as kiln::opencl_devices() lists them.
std::vector<std::string> device_list();
const char* status_name(cl_int status);

// For tests: the OpenCL executor's device behaves as lost (see OpenClDevice::lost), or no longer.
// Defined with the executor (opencl_backend.cpp); does nothing where no device was opened.
void simulate_device_loss(bool lost);

class OpenClDevice;

// A device buffer from the device's pool; back to the pool when the last holder lets go.
class ClMemory final : public device::DeviceBuffer {
 public:
  ClMemory(std::shared_ptr<OpenClDevice> device, cl_mem mem, std::size_t bytes)
      : device_(std::move(device)), mem_(mem), bytes_(bytes) {}
  ~ClMemory() override;
  const Device& device() const override;
  void download(void* to, std::size_t bytes) const override;
  cl_mem handle() const { return mem_; }
  void* native_handle() const override { return mem_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  std::shared_ptr<OpenClDevice> device_;
  cl_mem mem_;
  std::size_t bytes_;
};

// The OpenCL device as the generated-kernel backend sees it (device_api.hpp).
class OpenClDevice final : public device::DeviceApi,
                           public std::enable_shared_from_this<OpenClDevice> {
 public:
  // The device KILN_OPENCL_DEVICE names (a part of its name, or "platform:device" indices), or
  // else the first GPU, or else the first device of any kind. Throws device_error when there is
  // none.
  static std::shared_ptr<OpenClDevice> open();
  ~OpenClDevice() override;

  std::string_view api() const override { return "opencl"; }
  const std::string& name() const override { return name_; }
  const std::string& driver() const override { return driver_; }
  const DeviceTraits& traits() const override { return traits_; }
  const Dialect& dialect() const override { return kOpenClC; }
  const std::string& compile_options() const override { return options_; }

  std::size_t bytes_of(DType dtype, std::int64_t numel) const override;
  std::shared_ptr<device::DeviceBuffer> allocate(std::size_t bytes) override;
  void upload(const device::DeviceBuffer& to, const void* from, std::size_t bytes) override;
  void download(const device::DeviceBuffer& from, void* to, std::size_t bytes) override;
  std::unique_ptr<device::DeviceProgram> compile(const std::string& source) override;
  std::unique_ptr<device::DeviceProgram> load(const std::vector<unsigned char>& binary) override;
  void launch(void* entry, std::span<const device::KernelArgument> arguments, std::size_t global,
              std::size_t local) override;
  void finish() override;
  void copy(const device::DeviceBuffer& from, const device::DeviceBuffer& to,
            std::size_t bytes) override;
  // OpenCL has no graphs: a recording is the list of kiln's own launches and copies (a library's
  // commands end it, see enqueued()).
  void begin_recording() override;
  std::unique_ptr<device::RecordedWork> end_recording() override;
  std::size_t recorded_value(std::size_t argument) override;
  bool records_libraries() const override { return false; }

  // The in-order queue, for a library that queues its own kernels (CLBlast); it calls
  // enqueued() for each call it makes, so that the host still waits every so many commands. While
  // recording it throws: the library's commands would run before the recorded ones they follow.
  cl_command_queue queue() const { return queue_; }
  void enqueued();

  // A lost device (a call reported CL_DEVICE_NOT_AVAILABLE) stays lost (device_api.hpp). Tests
  // simulate a loss, and end it.
  bool lost() const override { return lost_.load(std::memory_order_acquire); }
  void simulate_loss(bool lost) { lost_.store(lost, std::memory_order_release); }
  void usable() const override;

 private:
  friend class ClMemory;
  OpenClDevice() = default;
  std::shared_ptr<device::DeviceBuffer> unrecorded_allocation(std::size_t bytes);
  void give_back(cl_mem mem, std::size_t bytes);
  void release_pool();
  void checked(cl_int status, const char* call);  // check(), noting a loss first
  void built();  // see finish_at_exit in opencl_device.cpp
  void not_while_recording(const char* what);  // throws on the recording thread

  std::unique_ptr<device::LaunchList> recording_;  // while gate_.here() (evaluations are serialised)
  device::RecordedBuffers recorded_buffers_;
  device::RecordingGate gate_;

  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::atomic<bool> lost_{false};
  bool first_kernel_waited_ = false;  // see finish_at_exit in opencl_device.cpp
  std::string name_, driver_, options_;
  DeviceTraits traits_;
  std::uint64_t max_alloc_ = 0;
  // Kernels queued since the host last waited for the queue (evaluations are serialised).
  static constexpr int kMostQueued = 256;
  int queued_ = 0;
  std::atomic<std::size_t> programs_made_{0};

  std::mutex pool_mutex_;
  std::multimap<std::size_t, cl_mem> pool_;  // free buffers by size
  std::size_t pooled_bytes_ = 0;

  // The arguments last set on each kernel: the driver keeps them between launches, so a launch
  // sets only those that changed (launches are serialised, like the evaluations that make
  // them). A buffer given back to the driver may come back under the same handle: `releases_`
  // counts the buffers released, and a kernel's arguments set before the last release are set
  // again.
  struct SetArguments {
    std::uint64_t releases = 0;
    std::vector<std::uint64_t> values;  // buffer handles and values, in argument order
  };
  std::unordered_map<cl_kernel, SetArguments> set_arguments_;
  std::atomic<std::uint64_t> releases_{0};
};

}  // namespace kiln::detail::opencl
