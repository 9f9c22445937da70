// DataLoader: a producer thread prepares the batches of the current epoch into a bounded queue;
// next() takes them in order. Starting an epoch stops the producer, empties the queue and starts
// it again, so nothing of an old epoch is ever returned.
#include "kiln/data_loader.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "data/epoch_order.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/error.hpp"
#include "kiln/indexing.hpp"

namespace kiln::data {

namespace {

// Batches of values already in memory are assembled there: no graph, no kernel, and so no wait
// for the graph lock that a training step holds while it is evaluated.
Tensor gather_rows(const Tensor& t, const std::vector<std::int64_t>& rows) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(t.numel() / std::max<std::int64_t>(t.size(0), 1)) *
      size_of(t.dtype());
  const auto* source = static_cast<const std::byte*>(t.data_ptr(t.dtype()));
  std::vector<std::byte> bytes(rows.size() * row_bytes);
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::memcpy(bytes.data() + i * row_bytes,
                source + static_cast<std::size_t>(rows[i]) * row_bytes, row_bytes);
  Shape shape = t.shape();
  shape[0] = static_cast<std::int64_t>(rows.size());
  return Tensor::from_bytes(bytes.data(), t.dtype(), std::move(shape));
}

// The examples' tensors of one field, stacked into [B, ...].
Tensor stacked(const std::vector<Tensor>& parts) {
  const Tensor& first = parts.front();
  const bool in_memory = std::all_of(parts.begin(), parts.end(), [&](const Tensor& p) {
    return p.defined() && p.is_evaluated() && p.dtype() == first.dtype() &&
           p.shape() == first.shape();
  });
  if (!in_memory) return stack(parts, 0);
  const std::size_t part_bytes = static_cast<std::size_t>(first.numel()) * size_of(first.dtype());
  std::vector<std::byte> bytes(parts.size() * part_bytes);
  for (std::size_t i = 0; i < parts.size(); ++i)
    std::memcpy(bytes.data() + i * part_bytes, parts[i].data_ptr(first.dtype()), part_bytes);
  Shape shape = first.shape();
  shape.insert(shape.begin(), static_cast<std::int64_t>(parts.size()));
  return Tensor::from_bytes(bytes.data(), first.dtype(), std::move(shape));
}

}  // namespace

struct DataLoader::State {
  TensorDataset data;
  ExampleFunction example;  // set for a function data set
  std::int64_t size = 0;
  DataLoaderOptions options;

  std::vector<std::int64_t> order;
  std::int64_t epoch = 0;
  std::int64_t next_to_make = 0;  // batch index the producer makes next (or next() without one)

  struct Item {
    std::vector<Tensor> batch;
    std::exception_ptr error;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Item> queue;
  std::int64_t made = 0;   // batches the producer finished this epoch (queued or taken)
  std::int64_t taken = 0;  // batches next() returned this epoch
  bool stop = false;
  std::thread producer;

  double waited = 0;
  std::int64_t returned = 0;

  std::int64_t batches() const {
    const std::int64_t b = options.batch_size;
    const auto n = static_cast<std::int64_t>(order.size());
    return options.drop_last ? n / b : (n + b - 1) / b;
  }

  // Batch `index` of the current order, computed when prefetching.
  std::vector<Tensor> make(std::int64_t index) const {
    const std::int64_t first = index * options.batch_size;
    const std::int64_t count =
        std::min(options.batch_size, static_cast<std::int64_t>(order.size()) - first);
    const std::vector<std::int64_t> rows(order.begin() + first, order.begin() + first + count);
    std::vector<Tensor> batch;
    if (!example) {
      const Tensor indices = Tensor::from(rows, {count});
      for (const Tensor& t : data.tensors)
        batch.push_back(t.is_evaluated() ? gather_rows(t, rows) : index_select(t, 0, indices));
    } else {
      std::vector<std::vector<Tensor>> fields;
      for (std::int64_t row : rows) {
        std::vector<Tensor> e = example(row);
        if (fields.empty()) fields.resize(e.size());
        if (e.size() != fields.size() || e.empty())
          throw Error(ErrorCode::incompatible_shapes,
                      "data::DataLoader: example " + std::to_string(row) + " has " +
                          std::to_string(e.size()) + " fields, the first of its batch " +
                          std::to_string(fields.size()));
        for (std::size_t f = 0; f < e.size(); ++f) fields[f].push_back(std::move(e[f]));
      }
      for (const auto& parts : fields) batch.push_back(stacked(parts));
    }
    // Only what is not in memory yet: an evaluation takes the graph lock, and would wait for
    // the training step's evaluation (and hold up its next one) for nothing.
    std::vector<Tensor> lazy;
    for (const Tensor& t : batch)
      if (!t.is_evaluated()) lazy.push_back(t);
    if (options.prefetch > 0 && !lazy.empty()) eval_all(lazy);
    return batch;
  }

  void produce() {
    const std::int64_t total = batches();
    for (;;) {
      std::int64_t index;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock,
                     [&] { return stop || static_cast<int>(queue.size()) < options.prefetch; });
        if (stop || next_to_make >= total) return;
        index = next_to_make++;
      }
      Item item;
      try {
        item.batch = make(index);
      } catch (...) {
        item.error = std::current_exception();
      }
      std::lock_guard lock(mutex);
      queue.push_back(std::move(item));
      ++made;
      changed.notify_all();
      if (queue.back().error) return;  // the epoch ends with the error
    }
  }

  void stop_producer() {
    {
      std::lock_guard lock(mutex);
      stop = true;
      changed.notify_all();
    }
    if (producer.joinable()) producer.join();
  }
};

namespace {

void check_options(const DataLoaderOptions& o) {
  if (o.batch_size < 1)
    throw Error(
        ErrorCode::illegal_dimension,
        "data::DataLoader: batch_size must be at least 1, got " + std::to_string(o.batch_size));
  if (o.prefetch < 0)
    throw Error(ErrorCode::illegal_dimension,
                "data::DataLoader: prefetch must be 0 or more, got " + std::to_string(o.prefetch));
  if (o.sampler && o.shuffle)
    throw Error(ErrorCode::invalid_select,
                "data::DataLoader: shuffle with a sampler (the sampler decides the order: leave "
                "shuffle false)");
}

}  // namespace

DataLoader::DataLoader(TensorDataset data, DataLoaderOptions options)
    : s_(std::make_unique<State>()) {
  check_options(options);
  if (data.tensors.empty())
    throw Error(ErrorCode::incompatible_shapes, "data::DataLoader: the data set has no tensors");
  for (const Tensor& t : data.tensors)
    if (!t.defined() || t.rank() < 1 || t.size(0) != data.tensors.front().size(0))
      throw Error(ErrorCode::incompatible_shapes,
                  "data::DataLoader: every tensor needs the same first dimension; got " +
                      (t.defined() ? shape_to_string(t.shape()) : std::string("an empty handle")) +
                      " beside " + shape_to_string(data.tensors.front().shape()));
  s_->size = data.size();
  s_->data = std::move(data);
  s_->options = options;
  start_epoch(0);
}

DataLoader::DataLoader(std::int64_t size, ExampleFunction example, DataLoaderOptions options)
    : s_(std::make_unique<State>()) {
  check_options(options);
  if (size < 0 || !example)
    throw Error(ErrorCode::illegal_dimension,
                "data::DataLoader: needs a size of 0 or more and an example function");
  s_->size = size;
  s_->example = std::move(example);
  s_->options = options;
  start_epoch(0);
}

DataLoader::~DataLoader() { s_->stop_producer(); }

void DataLoader::start_epoch(std::int64_t epoch, std::int64_t first_batch) {
  State& s = *s_;
  if (epoch < 0)
    throw Error(ErrorCode::invalid_select,
                "data::DataLoader::start_epoch: epoch " + std::to_string(epoch) + " is negative");
  s.stop_producer();
  if (s.options.sampler) {
    std::vector<std::int64_t> order = s.options.sampler->indices(epoch);
    for (std::int64_t i : order)
      if (i < 0 || i >= s.size)
        throw Error(ErrorCode::invalid_select,
                    "data::DataLoader: the sampler gave example " + std::to_string(i) +
                        " of a data set of " + std::to_string(s.size));
    s.order = std::move(order);
  } else {
    s.order = epoch_order(s.size, s.options.shuffle, s.options.seed, epoch);
  }
  s.epoch = epoch;
  s.queue.clear();
  if (first_batch < 0 || first_batch > s.batches()) {
    s.next_to_make = s.made = s.taken = s.batches();  // no batch of a half-started epoch
    throw Error(ErrorCode::invalid_select,
                "data::DataLoader::start_epoch: batch " + std::to_string(first_batch) +
                    " outside the epoch's " + std::to_string(s.batches()) + " batches");
  }
  s.next_to_make = first_batch;
  s.made = first_batch;
  s.taken = first_batch;
  s.stop = false;
  if (s.options.prefetch > 0) s.producer = std::thread([&s] { s.produce(); });
}

bool DataLoader::next(std::vector<Tensor>& batch) {
  State& s = *s_;
  if (s.taken >= s.batches()) return false;
  if (s.options.prefetch == 0) {
    try {
      batch = s.make(s.next_to_make++);
    } catch (...) {
      s.taken = s.batches();  // the epoch ends with the error, as with prefetching
      throw;
    }
    ++s.taken;
    ++s.returned;
    return true;
  }
  State::Item item;
  {
    std::unique_lock lock(s.mutex);
    if (s.queue.empty()) {
      const auto start = std::chrono::steady_clock::now();
      s.changed.wait(lock, [&] { return !s.queue.empty(); });
      s.waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    item = std::move(s.queue.front());
    s.queue.pop_front();
    s.changed.notify_all();
  }
  if (item.error) {
    s.taken = s.batches();  // the epoch is over; start_epoch begins another
    std::rethrow_exception(item.error);
  }
  batch = std::move(item.batch);
  ++s.taken;
  ++s.returned;
  return true;
}

std::int64_t DataLoader::num_batches() const { return s_->batches(); }
std::int64_t DataLoader::epoch() const { return s_->epoch; }
std::int64_t DataLoader::position() const { return s_->taken; }

std::vector<std::pair<std::string, Tensor>> DataLoader::state_dict() const {
  return {{"loader.epoch", Tensor::from(std::vector<std::int64_t>{s_->epoch})},
          {"loader.batch", Tensor::from(std::vector<std::int64_t>{s_->taken})}};
}

void DataLoader::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state) {
  const auto value = [&](const char* name) {
    for (const auto& [n, t] : state)
      if (n == name) {
        if (!t.defined() || t.dtype() != DType::i64 || t.numel() != 1)
          throw Error(ErrorCode::invalid_select, std::string("data::DataLoader::load_state_dict: '") +
                                                     name + "' must be one i64");
        return t.item<std::int64_t>();
      }
    throw Error(ErrorCode::invalid_select,
                std::string("data::DataLoader::load_state_dict: no '") + name + "' entry");
  };
  const std::int64_t epoch = value("loader.epoch"), batch = value("loader.batch");
  start_epoch(epoch, batch);
}
std::int64_t DataLoader::size() const { return s_->size; }
double DataLoader::wait_seconds() const { return s_->waited; }
std::int64_t DataLoader::batches_returned() const { return s_->returned; }

}  // namespace kiln::data
