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
// This thread's guards, innermost last, each pointing at the executor its guard holds. Plain
// pointers, so that the thread-locals need no destructor: one that did made LeakSanitizer's
// tracer crash at exit in the OpenCL tests (the sanitizer build's dynamic-TLS bookkeeping).
constexpr int kMaxGuards = 64;
thread_local const std::shared_ptr<Executor>* guards[kMaxGuards];
thread_local int guard_count = 0;
}  // namespace

const std::shared_ptr<Executor>& guarded_executor() {
  static const std::shared_ptr<Executor> none;
  return guard_count > 0 ? *guards[guard_count - 1] : none;
}
}  // namespace detail

Device::Device(std::string_view name) : executor_(find_executor(name)) {}

Device::Device(std::shared_ptr<Executor> executor) : executor_(std::move(executor)) {
  if (executor_ == nullptr)
    throw Error(ErrorCode::invalid_select, "Device: an empty executor pointer names no device");
}

std::string Device::name() const { return std::string(executor_->name()); }

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.name(); }

// previous_ holds this guard's executor; the guard before it is the next one down the stack.
DeviceGuard::DeviceGuard(const Device& device) : previous_(device.executor()) {
  if (detail::guard_count == detail::kMaxGuards)
    throw Error(ErrorCode::invalid_select, "DeviceGuard: more than 64 guards nest on one thread");
  detail::guards[detail::guard_count++] = &previous_;
}

DeviceGuard::~DeviceGuard() { --detail::guard_count; }

}  // namespace kiln
