/// @file
/// DataLoader: batches of a data set of any number of tensors (or of examples a function makes,
/// such as files decoded on demand), shuffled per epoch, with the last partial batch dropped on
/// request, prepared ahead on a background thread so that the training loop does not wait for
/// them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::data {

/// Examples of any number of tensors sharing their first dimension (PyTorch's TensorDataset):
/// example i is every tensor's row i.
struct TensorDataset {
  std::vector<Tensor> tensors;
  std::int64_t size() const { return tensors.empty() ? 0 : tensors.front().size(0); }
};

/// Which examples an epoch visits, in which order (PyTorch's Sampler).
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The example indices of epoch `epoch`, each in [0, data set size).
  virtual std::vector<std::int64_t> indices(std::int64_t epoch) const = 0;
};

struct DistributedSamplerOptions {
  int num_replicas = 1;  ///< the number of ranks (distributed::world_size())
  int rank = 0;          ///< this rank (distributed::rank())
  bool shuffle = true;
  std::uint64_t seed = 0;  ///< the same on every rank: epoch e's order depends on (seed, e)
  /// Leave out the examples that do not divide among the ranks; otherwise (PyTorch's default)
  /// the epoch's order is padded with its own first examples up to a multiple of num_replicas.
  bool drop_last = false;
};

/// PyTorch's DistributedSampler: each rank visits its own shard of the epoch: the epoch's order
/// (shuffled by (seed, epoch), the same on every rank) padded or cut to a multiple of
/// num_replicas, then every num_replicas-th index starting at rank. The shards are disjoint
/// (apart from the padding) and together cover the epoch; every rank gets num_samples() indices,
/// so every rank takes the same number of steps.
class DistributedSampler final : public Sampler {
 public:
  /// num_replicas < 1, or rank outside [0, num_replicas): invalid_select; a negative size:
  /// illegal_dimension.
  DistributedSampler(std::int64_t dataset_size, DistributedSamplerOptions options);
  static std::shared_ptr<const DistributedSampler> make(std::int64_t dataset_size,
                                                        DistributedSamplerOptions options) {
    return std::make_shared<const DistributedSampler>(dataset_size, options);
  }
  std::vector<std::int64_t> indices(std::int64_t epoch) const override;
  std::int64_t num_samples() const { return num_samples_; }  ///< indices per rank and epoch

 private:
  std::int64_t size_;
  DistributedSamplerOptions options_;
  std::int64_t num_samples_;
};

struct DataLoaderOptions {
  std::int64_t batch_size = 1;
  bool shuffle = false;
  std::uint64_t seed = 0;  ///< with shuffle, epoch e's order depends only on (seed, e)
  bool drop_last = false;  ///< leave out a last batch smaller than batch_size
  /// Batches a background thread prepares ahead (built and computed, so that the training step
  /// reads ready values); 0 prepares each batch when next() asks for it, on the caller's thread.
  int prefetch = 2;
  /// The examples of each epoch, in order (a DistributedSampler's shard); shuffle must then be
  /// false (the sampler shuffles), as in PyTorch. Null: every example, shuffled or not.
  std::shared_ptr<const Sampler> sampler;
};

class DataLoader {
 public:
  /// Example i as one tensor per field; every example must give the same fields with the same
  /// shapes and types (a batch stacks them). Called on the background thread when prefetching.
  using ExampleFunction = std::function<std::vector<Tensor>(std::int64_t index)>;

  /// Errors (kiln::Error): no tensors or tensors of different first dimensions
  /// (incompatible_shapes), batch_size < 1 or prefetch < 0 (illegal_dimension).
  DataLoader(TensorDataset data, DataLoaderOptions options = {});
  DataLoader(std::int64_t size, ExampleFunction example, DataLoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Starts epoch `epoch` (0-based): reshuffles (or asks the sampler), rewinds, and drops batches prepared for the old
  /// one. The constructor starts epoch 0. With `first_batch`, the epoch starts there, as if that
  /// many batches had been taken (outside [0, num_batches()]: invalid_select).
  void start_epoch(std::int64_t epoch, std::int64_t first_batch = 0);
  std::int64_t epoch() const;     ///< the epoch started last
  std::int64_t position() const;  ///< the batches next() has returned in it
  /// The position as named i64 tensors ("loader.epoch", "loader.batch"), for a checkpoint's
  /// `extra`; load_state_dict starts that epoch at that batch (the order of an epoch depends only
  /// on the seed and the epoch, so the rest of the epoch is what it would have been). Entries of
  /// other names are ignored; missing entries or other types are an invalid_select error.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state);
  /// The next batch of the epoch, one tensor per field ([B, ...]); false when the epoch is done.
  /// An error preparing the batch (the example function's, a stacking error) is thrown here.
  bool next(std::vector<Tensor>& batch);
  std::int64_t num_batches() const;
  /// The number of examples of the data set (with a sampler, an epoch may visit fewer or more).
  std::int64_t size() const;
  /// How long next() has waited for prepared batches since construction, in seconds, and how many
  /// batches it has returned: the measure of whether training waits for data.
  double wait_seconds() const;
  std::int64_t batches_returned() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace kiln::data
