#include "data/epoch_order.hpp"

#include <limits>
#include <random>
#include <utility>

namespace kiln::data {

std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed,
                                      std::int64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  if (!shuffle) return order;
  // Fisher-Yates with our own index draws, so the order is the same with every standard library
  // (std::shuffle and the distributions are implementation-defined).
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(epoch) + 1);
  for (std::int64_t i = n - 1; i > 0; --i) {
    const std::uint64_t bound = static_cast<std::uint64_t>(i) + 1;
    const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                                std::numeric_limits<std::uint64_t>::max() % bound;
    std::uint64_t r;
    do r = rng();
    while (r >= limit);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(r % bound)]);
  }
  return order;
}

}  // namespace kiln::data
