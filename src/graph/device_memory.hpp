// DeviceMemory: a buffer's copy in the memory of a device other than the host (an OpenCL or CUDA
// allocation), as its backend implements it. The graph knows only this interface: which device
// holds the copy and how to bring the bytes to the host; what the handle is and how kernels use it
// stays inside the backend.
#pragma once

#include <cstddef>

namespace kiln::detail {

// A device, as backends name themselves to the buffers they place values on. Compared by
// address: each backend object is one device.
struct Device {
  virtual ~Device() = default;
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual const Device& device() const = 0;
  // Copies the first `bytes` bytes to host memory at `to`, waiting until the device has written
  // them. Throws kiln::Error when the device fails.
  virtual void download(void* to, std::size_t bytes) const = 0;
  // The backend's own handle of the allocation (an OpenCL cl_mem), which the C API shows as
  // FResultData::mem_id; null where the backend has none to show.
  virtual void* native_handle() const { return nullptr; }
};

}  // namespace kiln::detail
