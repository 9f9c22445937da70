// Recorded work (device_api.hpp) for a device API without graphs of its own: the launches and
// copies made while recording, queued again one by one through the device. It still saves what
// the runtime and the backend do per kernel (choosing buffers, binding arguments).
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "exec/device/device_api.hpp"

namespace kiln::detail::device {

class LaunchList final : public RecordedWork {
 public:
  explicit LaunchList(DeviceApi& device) : device_(device) {}

  // The buffers named by the arguments must outlive the list (they are the recording's own, or
  // held with it).
  void add_launch(void* entry, std::span<const KernelArgument> arguments, std::size_t global,
                  std::size_t local) {
    steps_.push_back({entry, {arguments.begin(), arguments.end()}, global, local, nullptr, nullptr});
  }
  void add_copy(const DeviceBuffer& from, const DeviceBuffer& to, std::size_t bytes) {
    steps_.push_back({nullptr, {}, bytes, 0, &from, &to});
  }

  // The argument of the last launch added.
  std::size_t value(std::size_t argument) {
    values_.emplace_back(steps_.size() - 1, argument);
    return values_.size() - 1;
  }
  void set_value(std::size_t value, std::uint64_t to) override {
    const auto [step, argument] = values_.at(value);
    steps_[step].arguments.at(argument).value = to;
  }

  void run() override {
    for (const Step& s : steps_) {
      if (s.entry != nullptr) device_.launch(s.entry, s.arguments, s.global, s.local);
      else device_.copy(*s.from, *s.to, s.global);
    }
  }

 private:
  struct Step {
    void* entry;  // null for a copy
    std::vector<KernelArgument> arguments;
    std::size_t global, local;  // a copy's bytes in `global`
    const DeviceBuffer* from;
    const DeviceBuffer* to;
  };
  DeviceApi& device_;
  std::vector<Step> steps_;
  std::vector<std::pair<std::size_t, std::size_t>> values_;  // named arguments: step, argument
};

}  // namespace kiln::detail::device
