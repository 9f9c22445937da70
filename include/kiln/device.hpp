/// @file
/// kiln::Device names where tensors live and computations run, as libtorch's torch::Device does:
/// a tensor moved with `x.to(device)` lives there, every op of tensors that live on a device runs
/// on it, and an op whose operands live on two different devices is an error naming both.
/// Tensors no one moved follow the others: they run where their placed operands live, and alone
/// on this thread's DeviceGuard's device, else on current_executor().
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace kiln {

class Executor;

/// One executor seen as a device: Device("cpu"), Device("opencl"), Device("cuda"),
/// Device("reference"), or any executor (kiln::executors() lists those that run here). Devices
/// are equal when they are the same executor.
class Device {
 public:
  /// The executor named (as find_executor: invalid_select for an unknown name, device_error for a
  /// known one that cannot run here).
  Device(std::string_view name);  // NOLINT: implicit, as torch::Device("cuda") is
  Device(const char* name) : Device(std::string_view(name)) {}  // NOLINT
  Device(const std::string& name) : Device(std::string_view(name)) {}  // NOLINT
  /// `executor` itself (an empty pointer is invalid_select).
  Device(std::shared_ptr<Executor> executor);  // NOLINT

  const std::shared_ptr<Executor>& executor() const { return executor_; }
  /// The executor's name: "cpu", "opencl", ...
  std::string name() const;
  friend bool operator==(const Device& a, const Device& b) { return a.executor_ == b.executor_; }

 private:
  std::shared_ptr<Executor> executor_;
};
std::ostream& operator<<(std::ostream& out, const Device& device);

/// Runs this thread's computations of unplaced tensors (those that `to(device)` never moved, nor
/// their operands) on `device` while it lives, and makes current_executor() give it on this
/// thread; guards nest. Tensors placed on a device keep computing there, and other threads are
/// not affected (set_executor changes the process-wide default).
class DeviceGuard {
 public:
  explicit DeviceGuard(const Device& device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  std::shared_ptr<Executor> previous_;
};

}  // namespace kiln
