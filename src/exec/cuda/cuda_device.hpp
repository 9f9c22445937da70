// One CUDA device as kiln uses it, the CUDA instance of the device interface
// (exec/device/device_api.hpp): the device's primary context and one stream, a caching allocator
// of device memory, uploads and downloads, CUDA C compiled by NVRTC to a cubin for the device's
// architecture, launches. NVIDIA's driver (libcuda.so.1) and NVRTC are loaded when the executor is
// first asked for, not linked: libkiln loads on machines without them, and the executor then says
// which is missing. Only the CUDA backend's files include this header.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "exec/device/device_api.hpp"
#include "exec/device/recorded_buffers.hpp"
#include "exec/device/recording_gate.hpp"

namespace kiln::detail::cuda {

struct DriverApi;  // the driver's and NVRTC's entry points (cuda_device.cpp)

class CudaDevice;

// Device memory from the device's pool; back to the pool when the last holder lets go.
class CudaMemory final : public device::DeviceBuffer {
 public:
  CudaMemory(std::shared_ptr<CudaDevice> device, CUdeviceptr ptr, std::size_t bytes)
      : device_(std::move(device)), ptr_(ptr), bytes_(bytes) {}
  ~CudaMemory() override;
  const Device& device() const override;
  void download(void* to, std::size_t bytes) const override;
  CUdeviceptr handle() const { return ptr_; }
  void* native_handle() const override { return reinterpret_cast<void*>(ptr_); }
  std::size_t bytes() const override { return bytes_; }

 private:
  std::shared_ptr<CudaDevice> device_;
  CUdeviceptr ptr_;
  std::size_t bytes_;
};

class CudaDevice final : public device::DeviceApi,
                         public std::enable_shared_from_this<CudaDevice> {
 public:
  // Device KILN_CUDA_DEVICE (an index), else device 0. Throws device_error when the driver or
  // NVRTC cannot be loaded or there is no CUDA device.
  static std::shared_ptr<CudaDevice> open();
  ~CudaDevice() override;

  std::string_view api() const override { return "cuda"; }
  const std::string& name() const override { return name_; }
  const std::string& driver() const override { return driver_; }
  const DeviceTraits& traits() const override { return traits_; }
  const Dialect& dialect() const override { return kCudaC; }
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
  // A recording is a CUDA graph: the stream's work captured (cuBLAS's, cuDNN's and cuFFT's too),
  // instantiated once and launched as a whole each time it runs.
  void begin_recording() override;
  std::unique_ptr<device::RecordedWork> end_recording() override;
  std::size_t recorded_value(std::size_t argument) override;
  bool records_libraries() const override { return true; }
  // Whether the driver has the graph calls recording needs (CUDA 12.3 and later).
  bool records() const { return api_has_graphs_; }
  bool lost() const override { return lost_.load(std::memory_order_acquire); }
  void usable() const override;
  void bind() const;  // makes the device's context current on the calling thread
  CUstream stream() const { return stream_; }
  // Bytes allocated to buffers now, kept by the pool, and the most allocated at once.
  std::size_t allocated_bytes() const { return allocated_.load(std::memory_order_relaxed); }
  std::size_t pooled_bytes() const;
  std::size_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }

 private:
  friend class CudaMemory;
  friend class CudaGraph;
  CudaDevice() = default;
  void checked(CUresult status, const char* call);  // throws, noting a lost device first
  void give_back(CUdeviceptr ptr, std::size_t bytes);
  void release_pool();
  // A buffer from the pool or the driver; `may_release`: whether running out of memory may
  // give the pool's buffers back to the driver first (not while capturing: the stream cannot be
  // waited for, and work queued before the capture may still use them).
  std::shared_ptr<device::DeviceBuffer> unrecorded_allocation(std::size_t bytes,
                                                              bool may_release = true);
  void not_while_recording(const char* what);  // throws on the recording thread

  const DriverApi* api_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::atomic<bool> lost_{false};
  bool api_has_graphs_ = false;
  std::string name_, driver_, options_, architecture_;
  DeviceTraits traits_;
  std::size_t total_memory_ = 0;

  std::atomic<std::size_t> allocated_{0}, peak_{0};
  void count_allocation(std::size_t bytes);
  mutable std::mutex pool_mutex_;
  std::multimap<std::size_t, CUdeviceptr> pool_;
  std::size_t pooled_bytes_ = 0;

  // Host-to-device copies go through pinned staging buffers: the host copies the values there
  // and goes on while the copy engine reads them, in stream order. Uploads fill the current
  // buffer one after another; a full one is left for the next, which is written again once the
  // copies that last read it are done (its event), so the host waits for queued work only when
  // it is a whole ring of uploads ahead. Made on first use; KILN_CUDA_STAGING=0, or a failed
  // allocation of pinned memory, leaves uploads to the driver's own staging of pageable memory.
  struct Staging {
    void* host = nullptr;    // kStagingBytes of pinned memory
    CUevent read = nullptr;  // recorded after each copy that reads it
  };
  static constexpr std::size_t kStagingBytes = std::size_t{8} << 20;
  std::mutex staging_mutex_;
  std::array<Staging, 4> staging_;
  std::size_t current_staging_ = 0, staging_used_ = 0;  // the buffer being filled, its bytes used
  bool use_staging_ = true;
  void free_staging();

  // While the stream captures a graph: the gate keeps other threads' calls out of it, and the
  // buffers allocated meanwhile go with the graph.
  device::RecordingGate gate_;
  device::RecordedBuffers recorded_buffers_;
  // A launch as cuGraphExecKernelNodeSetParams takes it again, and the captured launches whose
  // value arguments the graph's runs change (recorded_value).
  struct KernelLaunch {
    CUfunction function = nullptr;
    unsigned grid = 0, block = 0;
    std::vector<std::uint64_t> values;  // every argument, as the kernel reads it
  };
  struct RecordedValue {
    CUgraphNode node;
    KernelLaunch launch;
    std::size_t argument;
  };
  KernelLaunch last_launch_;  // while capturing
  std::vector<RecordedValue> recorded_values_;
};

}  // namespace kiln::detail::cuda
