// The order in which an epoch visits a data set's examples, shared by BatchIterator and
// DataLoader: 0..n-1, or with shuffling a permutation that depends only on (seed, epoch).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::data {

std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed,
                                      std::int64_t epoch);

}  // namespace kiln::data
