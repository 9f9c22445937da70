// The runtime: an Executor made of a Backend and what every backend shares (see backend.hpp).
#pragma once

#include <memory>

#include "exec/backend.hpp"
#include "kiln/executor.hpp"

namespace kiln::detail {

// An executor that runs the fused schedule on `backend`.
std::shared_ptr<Executor> make_runtime(std::unique_ptr<Backend> backend);

}  // namespace kiln::detail
