// One OpenCL device as kiln uses it: context, in-order queue, the device's traits, a caching
// allocator of device buffers, uploads and downloads, and programs built from source (kept in
// memory by source). Only the OpenCL backend's files include this header: nothing outside them
// sees an OpenCL type.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/codegen/render.hpp"
#include "exec/opencl/kernel_cache.hpp"
#include "graph/device_memory.hpp"

namespace kiln::detail::opencl {

// Throws kiln::Error for an OpenCL failure: out_of_memory for the allocation failures,
// ocl_error otherwise, naming the call.
void check(cl_int status, const char* call);
// Every device of every platform, as kiln::opencl_devices() lists them.
std::vector<std::string> device_list();
const char* status_name(cl_int status);

// For tests: the OpenCL executor's device behaves as lost (see OpenClDevice::lost), or no longer.
// Defined with the executor (opencl_backend.cpp); does nothing where no device was opened.
void simulate_device_loss(bool lost);

class OpenClDevice;

// A device buffer from the device's pool; back to the pool when the last holder lets go.
class ClMemory final : public DeviceMemory {
 public:
  ClMemory(std::shared_ptr<OpenClDevice> device, cl_mem mem, std::size_t bytes)
      : device_(std::move(device)), mem_(mem), bytes_(bytes) {}
  ~ClMemory() override;
  const Device& device() const override;
  void download(void* to, std::size_t bytes) const override;
  cl_mem handle() const { return mem_; }
  void* native_handle() const override { return mem_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<OpenClDevice> device_;
  cl_mem mem_;
  std::size_t bytes_;
};

class OpenClDevice final : public Device, public std::enable_shared_from_this<OpenClDevice> {
 public:
  // The device KILN_OPENCL_DEVICE names (a part of its name, or "platform:device" indices), or
  // else the first GPU, or else the first device of any kind. Throws ocl_error when there is none.
  static std::shared_ptr<OpenClDevice> open();
  ~OpenClDevice() override;

  const std::string& name() const { return name_; }
  const std::string& driver() const { return driver_; }
  const DeviceTraits& traits() const { return traits_; }
  std::size_t max_group() const { return max_group_; }

  // The bytes of `numel` values; out_of_memory when they exceed the device's largest buffer.
  std::size_t bytes_of(DType dtype, std::int64_t numel) const;
  // A buffer of at least `bytes` bytes (contents undefined). Throws out_of_memory when the
  // device has no room even after the pool gave back what it keeps.
  std::shared_ptr<ClMemory> allocate(std::size_t bytes);
  void upload(const ClMemory& to, const void* from, std::size_t bytes);
  void download(const ClMemory& from, void* to, std::size_t bytes);
  // Waits for everything queued.
  void finish();

  // The kernel `entry` of `source`, built once per source (the program cache).
  cl_kernel kernel(const std::string& source, const std::string& entry);
  void run(cl_kernel kernel, std::size_t global, std::size_t local);
  // The in-order queue, for a library that queues its own kernels (CLBlast); it calls
  // enqueued() for each call it makes, so that the host still waits every so many commands.
  cl_command_queue queue() const { return queue_; }
  void enqueued();
  // Compilations from source so far and the seconds they took, and programs loaded from the
  // disk cache instead (for KILN_DEBUG, benchmarks and tests).
  std::uint64_t builds() const { return builds_; }
  double build_seconds() const { return build_seconds_; }
  std::uint64_t cache_loads() const { return cache_loads_; }
  const KernelCache& disk_cache() const { return cache_; }

  // A device that stops answering (a driver reset, a GPU fallen off the bus: a call reports
  // CL_DEVICE_NOT_AVAILABLE) is lost for good: every later use throws ocl_error naming it, without
  // asking the driver again. Values that lived only on it are gone; host copies stay readable and
  // the other executors keep working. Tests simulate a loss, and end it.
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  void simulate_loss(bool lost) { lost_.store(lost, std::memory_order_release); }
  void usable() const;  // throws ocl_error once the device is lost

 private:
  friend class ClMemory;
  OpenClDevice() = default;
  void give_back(cl_mem mem, std::size_t bytes);
  cl_program build(const std::string& source, const std::string& key);
  void release_pool();
  void checked(cl_int status, const char* call);  // check(), noting a loss first

  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::atomic<bool> lost_{false};
  bool first_kernel_waited_ = false;  // see finish_at_exit in opencl_device.cpp
  std::string name_, driver_, platform_, options_;
  DeviceTraits traits_;
  std::size_t max_group_ = 1;
  std::uint64_t max_alloc_ = 0;
  bool debug_ = false;  // KILN_DEBUG: say what each build took
  // Kernels queued since the host last waited for the queue (evaluations are serialised).
  static constexpr int kMostQueued = 256;
  int queued_ = 0;

  std::mutex pool_mutex_;
  std::multimap<std::size_t, cl_mem> pool_;  // free buffers by size
  std::size_t pooled_bytes_ = 0;

  struct Program {
    cl_program program = nullptr;
    std::unordered_map<std::string, cl_kernel> kernels;
  };
  std::mutex programs_mutex_;
  std::unordered_map<std::string, Program> programs_;
  KernelCache cache_;
  std::uint64_t builds_ = 0;
  std::uint64_t cache_loads_ = 0;
  double build_seconds_ = 0;
};

}  // namespace kiln::detail::opencl
