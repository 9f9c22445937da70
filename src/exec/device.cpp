// Devices (executors seen as places) and the scoped guard that picks the executor of unplaced
// computations on one thread.
#include "kiln/device.hpp"

#include <ostream>
#include <utility>

#include "exec/evaluate.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail {
namespace {
std::shared_ptr<Executor>& guarded_slot() {
  thread_local std::shared_ptr<Executor> executor;
  return executor;
}
}  // namespace

const std::shared_ptr<Executor>& guarded_executor() { return guarded_slot(); }
}  // namespace detail

Device::Device(std::string_view name) : executor_(find_executor(name)) {}

Device::Device(std::shared_ptr<Executor> executor) : executor_(std::move(executor)) {
  if (executor_ == nullptr)
    throw Error(ErrorCode::invalid_select, "Device: an empty executor pointer names no device");
}

std::string Device::name() const { return std::string(executor_->name()); }

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.name(); }

DeviceGuard::DeviceGuard(const Device& device)
    : previous_(std::exchange(detail::guarded_slot(), device.executor())) {}

DeviceGuard::~DeviceGuard() { detail::guarded_slot() = std::move(previous_); }

}  // namespace kiln
