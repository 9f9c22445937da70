// Keeps a device's recording (device_api.hpp) to the thread that records: what other threads
// ask of the device meanwhile (a download of a tensor's values) would land in the recording, so
// they wait for its end at the gate.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace kiln::detail::device {

class RecordingGate {
 public:
  // Called by the recording thread; a recording inside another on the same thread is refused.
  bool begin() {
    if (here()) return false;
    held_ = std::unique_lock(mutex_);
    thread_.store(std::this_thread::get_id(), std::memory_order_release);
    return true;
  }
  void end() {
    if (!here()) return;
    thread_.store(std::thread::id{}, std::memory_order_release);
    held_.unlock();
  }
  // Whether a thread is recording.
  bool active() const { return thread_.load(std::memory_order_acquire) != std::thread::id{}; }
  // Whether the calling thread is recording.
  bool here() const { return thread_.load(std::memory_order_acquire) == std::this_thread::get_id(); }
  // For a device call on any thread: waits while another thread records, and keeps a recording
  // from beginning until the call is done. Nothing is locked on the recording thread.
  std::unique_lock<std::mutex> pass() {
    if (here()) return {};
    return std::unique_lock(mutex_);
  }

 private:
  std::mutex mutex_;
  std::unique_lock<std::mutex> held_;
  std::atomic<std::thread::id> thread_{};
};

}  // namespace kiln::detail::device
