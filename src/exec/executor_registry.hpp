// kiln's registry of executors: each executor's name and how to open it, in one table that
// executors(), find_executor(), KILN_EXECUTOR, the C API's GPU functions and the tests read. A new
// backend adds its row here (and its folder under exec/).
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "kiln/executor.hpp"

namespace kiln::detail {

struct ExecutorEntry {
  std::string_view name;  // as KILN_EXECUTOR names it
  bool device;            // runs on a device other than the host (a GPU's first)
  // The executor, opened on first use; throws device_error where it cannot run here.
  std::shared_ptr<Executor> (*open)();
};

std::span<const ExecutorEntry> executor_registry();

}  // namespace kiln::detail
