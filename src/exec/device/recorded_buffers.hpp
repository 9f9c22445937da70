// The buffers a device allocates while recording (device_api.hpp): they belong to the recording,
// so that the recorded work's addresses stay valid for every run of it. A recording runs in a
// straight line on one queue, so a buffer nothing but the recording holds any more (a result
// released after its last reader) serves a later allocation of its size within the same
// recording, as the device's pool would serve it outside one.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "exec/device/device_api.hpp"

namespace kiln::detail::device {

class RecordedBuffers {
 public:
  // A buffer of exactly `size` bytes (the pool's rounded size) that only the recording holds, or
  // null.
  std::shared_ptr<DeviceBuffer> reuse(std::size_t size) const {
    for (const auto& b : buffers_)
      if (b.use_count() == 1 && b->bytes() == size) return b;
    return nullptr;
  }
  const std::shared_ptr<DeviceBuffer>& add(std::shared_ptr<DeviceBuffer> b) {
    buffers_.push_back(std::move(b));
    return buffers_.back();
  }
  std::vector<std::shared_ptr<DeviceBuffer>> take() { return std::move(buffers_); }

 private:
  std::vector<std::shared_ptr<DeviceBuffer>> buffers_;
};

}  // namespace kiln::detail::device
