// data::DataLoader: batches of any number of tensors or of a function's examples, every example
// once per epoch in an order fixed by (seed, epoch), the last partial batch dropped on request,
// errors of the background thread thrown by next(), and prefetching that hides a slow source.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::Tensor;
using kiln::data::DataLoader;
using kiln::data::DataLoaderOptions;
using kiln::data::TensorDataset;

TensorDataset three_fields(std::int64_t n) {
  std::vector<float> x;
  std::vector<std::int64_t> y;
  for (std::int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(-i));
    y.push_back(i * 10);
  }
  return {{Tensor::from(x, {n, 2}), Tensor::from(y, {n}), kiln::arange(n).reshape({n, 1, 1})}};
}

// The examples of an epoch, by the first field's column 0.
std::vector<std::int64_t> epoch_rows(DataLoader& loader) {
  std::vector<std::int64_t> rows;
  std::vector<Tensor> batch;
  while (loader.next(batch)) {
    const std::vector<float> values = batch[0].to_vector<float>();
    const auto width = static_cast<std::size_t>(batch[0].numel() / batch[0].size(0));
    for (std::size_t i = 0; i < values.size(); i += width)
      rows.push_back(static_cast<std::int64_t>(values[i]));
  }
  return rows;
}

TEST(DataLoader, BatchesEveryFieldInOrder) {
  for (int prefetch : {0, 2}) {
    DataLoader loader(three_fields(10), {.batch_size = 4, .prefetch = prefetch});
    EXPECT_EQ(loader.num_batches(), 3);
    std::vector<Tensor> batch;
    std::vector<std::int64_t> sizes;
    std::int64_t row = 0;
    while (loader.next(batch)) {
      ASSERT_EQ(batch.size(), 3u);
      sizes.push_back(batch[0].size(0));
      const std::vector<std::int64_t> labels = batch[1].to_vector<std::int64_t>();
      const std::vector<std::int64_t> third = batch[2].to_vector<std::int64_t>();
      EXPECT_EQ(batch[2].shape(), (kiln::Shape{batch[0].size(0), 1, 1}));
      for (std::size_t i = 0; i < labels.size(); ++i, ++row) {
        EXPECT_EQ(labels[i], row * 10);
        EXPECT_EQ(third[i], row);
      }
    }
    EXPECT_EQ(sizes, (std::vector<std::int64_t>{4, 4, 2})) << "prefetch " << prefetch;
    EXPECT_FALSE(loader.next(batch));
  }
  DataLoader dropping(three_fields(10), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(dropping.num_batches(), 2);
  EXPECT_EQ(epoch_rows(dropping).size(), 8u);
}

TEST(DataLoader, ShufflesByEpochTheSameWithAndWithoutPrefetch) {
  DataLoader a(three_fields(23), {.batch_size = 5, .shuffle = true, .seed = 7, .prefetch = 3});
  DataLoader b(three_fields(23), {.batch_size = 5, .shuffle = true, .seed = 7, .prefetch = 0});
  const std::vector<std::int64_t> first = epoch_rows(a);
  EXPECT_EQ(first, epoch_rows(b));
  std::vector<std::int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 23; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);
  a.start_epoch(1);
  const std::vector<std::int64_t> second = epoch_rows(a);
  EXPECT_NE(second, first);
  a.start_epoch(0);
  EXPECT_EQ(epoch_rows(a), first);
  // Restarting in the middle of an epoch drops what was prepared for it.
  std::vector<Tensor> batch;
  b.start_epoch(0);
  ASSERT_TRUE(b.next(batch));
  b.start_epoch(1);
  EXPECT_EQ(epoch_rows(b), second);
}

TEST(DataLoader, StacksTheExamplesOfAFunction) {
  auto example = [](std::int64_t i) {
    return std::vector<Tensor>{kiln::full({2}, static_cast<float>(i)),
                               kiln::scalar(i * 3, kiln::DType::i64)};
  };
  DataLoader loader(7, example, {.batch_size = 3});
  std::vector<Tensor> batch;
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(batch[0].shape(), (kiln::Shape{3, 2}));
  EXPECT_EQ(batch[0].to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(batch[1].to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 3, 6}));
  EXPECT_EQ(epoch_rows(loader), (std::vector<std::int64_t>{3, 4, 5, 6}));
}

TEST(DataLoader, ErrorsReachTheCaller) {
  EXPECT_EQ(kiln_test::code_of([] { DataLoader(TensorDataset{}, {}); }),
            kiln::ErrorCode::incompatible_shapes);
  EXPECT_EQ(kiln_test::code_of([] {
              DataLoader(TensorDataset{{kiln::zeros({3}), kiln::zeros({4})}}, {});
            }),
            kiln::ErrorCode::incompatible_shapes);
  EXPECT_EQ(kiln_test::code_of([] { DataLoader(three_fields(3), {.batch_size = 0}); }),
            kiln::ErrorCode::illegal_dimension);
  EXPECT_EQ(kiln_test::code_of([] { DataLoader(three_fields(3), {.prefetch = -1}); }),
            kiln::ErrorCode::illegal_dimension);
  for (int prefetch : {0, 2}) {
    bool broken = true;
    auto example = [&broken](std::int64_t i) {
      if (broken && i == 4) throw kiln::Error(kiln::ErrorCode::io_error, "example 4 is unreadable");
      return std::vector<Tensor>{kiln::full({1}, static_cast<float>(i))};
    };
    DataLoader loader(8, example, {.batch_size = 2, .prefetch = prefetch});
    std::vector<Tensor> batch;
    ASSERT_TRUE(loader.next(batch));
    ASSERT_TRUE(loader.next(batch));
    const kiln::Error e = kiln_test::error_of([&] { loader.next(batch); });
    EXPECT_EQ(e.code(), kiln::ErrorCode::io_error) << e.what();
    EXPECT_FALSE(loader.next(batch));  // the epoch ended with the error
    broken = false;
    loader.start_epoch(1);
    EXPECT_EQ(epoch_rows(loader).size(), 8u);
  }
  // Examples that do not stack.
  DataLoader ragged(4, [](std::int64_t i) { return std::vector<Tensor>{kiln::zeros({i + 1})}; },
                    {.batch_size = 2});
  std::vector<Tensor> batch;
  EXPECT_EQ(kiln_test::code_of([&] { ragged.next(batch); }), kiln::ErrorCode::incompatible_shapes);
}

// A source that takes 12 ms per batch and a training step of 30 ms: with two batches prefetched
// only the first batch is waited for; without, every one would be.
TEST(DataLoader, PrefetchingHidesASlowSource) {
  auto slow = [](std::int64_t i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    return std::vector<Tensor>{kiln::full({4}, static_cast<float>(i))};
  };
  DataLoader loader(32, slow, {.batch_size = 4, .prefetch = 2});
  std::vector<Tensor> batch;
  int batches = 0;
  double first_wait = 0;  // the first batch is waited for (with a device's first kernel builds)
  while (loader.next(batch)) {
    if (++batches == 1) first_wait = loader.wait_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the training step
  }
  EXPECT_EQ(batches, 8);
  EXPECT_EQ(loader.batches_returned(), 8);
  // Waiting for the other seven batches would be about 7 x 12 = 84 ms.
  EXPECT_LT(loader.wait_seconds() - first_wait, 0.04) << loader.wait_seconds() << " in all, "
                                                      << first_wait << " for the first batch";
}

}  // namespace
