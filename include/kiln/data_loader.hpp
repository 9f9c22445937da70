/// @file
/// DataLoader: batches of a data set of any number of tensors (or of examples a function makes,
/// such as files decoded on demand), shuffled per epoch, with the last partial batch dropped on
/// request, prepared ahead on a background thread so that the training loop does not wait for
/// them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::data {

/// Examples of any number of tensors sharing their first dimension (PyTorch's TensorDataset):
/// example i is every tensor's row i.
struct TensorDataset {
  std::vector<Tensor> tensors;
  std::int64_t size() const { return tensors.empty() ? 0 : tensors.front().size(0); }
};

struct DataLoaderOptions {
  std::int64_t batch_size = 1;
  bool shuffle = false;
  std::uint64_t seed = 0;  ///< with shuffle, epoch e's order depends only on (seed, e)
  bool drop_last = false;  ///< leave out a last batch smaller than batch_size
  /// Batches a background thread prepares ahead (built and computed, so that the training step
  /// reads ready values); 0 prepares each batch when next() asks for it, on the caller's thread.
  int prefetch = 2;
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

  /// Starts epoch `epoch` (0-based): reshuffles, rewinds, and drops batches prepared for the old
  /// one. The constructor starts epoch 0.
  void start_epoch(std::int64_t epoch);
  /// The next batch of the epoch, one tensor per field ([B, ...]); false when the epoch is done.
  /// An error preparing the batch (the example function's, a stacking error) is thrown here.
  bool next(std::vector<Tensor>& batch);
  std::int64_t num_batches() const;
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
