// DistributedSampler: one rank's shard of each epoch, as PyTorch's DistributedSampler makes it.
#include <string>

#include "data/epoch_order.hpp"
#include "kiln/data_loader.hpp"
#include "kiln/error.hpp"

namespace kiln::data {

DistributedSampler::DistributedSampler(std::int64_t dataset_size, DistributedSamplerOptions options)
    : size_(dataset_size), options_(options) {
  if (dataset_size < 0)
    throw Error(ErrorCode::illegal_dimension, "data::DistributedSampler: a negative data set size " +
                                                  std::to_string(dataset_size));
  if (options.num_replicas < 1 || options.rank < 0 || options.rank >= options.num_replicas)
    throw Error(ErrorCode::invalid_select,
                "data::DistributedSampler: rank " + std::to_string(options.rank) +
                    " of num_replicas " + std::to_string(options.num_replicas) +
                    " (needs num_replicas >= 1 and 0 <= rank < num_replicas)");
  const std::int64_t r = options.num_replicas;
  num_samples_ = options.drop_last ? size_ / r : (size_ + r - 1) / r;
}

std::vector<std::int64_t> DistributedSampler::indices(std::int64_t epoch) const {
  std::vector<std::int64_t> order = epoch_order(size_, options_.shuffle, options_.seed, epoch);
  const auto total = static_cast<std::size_t>(num_samples_ * options_.num_replicas);
  if (order.size() > total) {
    order.resize(total);
  } else if (!order.empty()) {
    // Padded with the order's own first examples, as many rounds as it takes.
    for (std::size_t i = 0; order.size() < total; ++i) order.push_back(order[i]);
  }
  std::vector<std::int64_t> shard;
  shard.reserve(static_cast<std::size_t>(num_samples_));
  for (std::size_t i = static_cast<std::size_t>(options_.rank); i < order.size();
       i += static_cast<std::size_t>(options_.num_replicas))
    shard.push_back(order[i]);
  return shard;
}

}  // namespace kiln::data
