// The runtime's side of anomaly mode (kiln/anomaly.hpp).
#pragma once

#include <span>

namespace kiln::detail {
struct Node;
// Throws kiln::Error naming the first op below `evaluated` that made NaN or infinity from finite
// inputs, when one of them holds such values. Called with the graph's write lock held.
void check_for_anomalies(std::span<Node* const> evaluated);
}  // namespace kiln::detail
