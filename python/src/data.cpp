// kiln.data for Python: the DataLoader over arrays (NumPy, tensors, anything kiln.tensor takes),
// iterated as PyTorch's is, and the Fashion-MNIST files.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "kiln/data.hpp"
#include "kiln/data_loader.hpp"

namespace kiln::python {

namespace {

// `for x, y in loader:` runs one epoch; each new iteration starts the next epoch.
class Loader {
 public:
  Loader(nb::handle arrays, std::int64_t batch_size, bool shuffle, std::uint64_t seed,
         bool drop_last, int prefetch) {
    data::TensorDataset set;
    for (nb::handle a : arrays) set.tensors.push_back(to_tensor(a));
    loader_ = std::make_unique<data::DataLoader>(
        std::move(set), data::DataLoaderOptions{.batch_size = batch_size, .shuffle = shuffle,
                                                .seed = seed, .drop_last = drop_last,
                                                .prefetch = prefetch});
  }
  Loader& start() {
    {
      nb::gil_scoped_release unlocked;
      loader_->start_epoch(epoch_++);
    }
    return *this;
  }
  nb::tuple next() {
    std::vector<Tensor> batch;
    bool more;
    {
      nb::gil_scoped_release unlocked;
      more = loader_->next(batch);
    }
    if (!more) throw nb::stop_iteration();
    return nb::tuple(nb::cast(batch));
  }
  std::int64_t batches() const { return loader_->num_batches(); }
  std::int64_t size() const { return loader_->size(); }
  std::int64_t epoch() const { return epoch_; }
  double waited() const { return loader_->wait_seconds(); }

 private:
  std::unique_ptr<data::DataLoader> loader_;
  std::int64_t epoch_ = 0;
};

}  // namespace

void bind_data(nb::module_& m) {
  nb::class_<Loader>(m, "DataLoader",
                     "Batches of arrays sharing their first dimension, shuffled per epoch by "
                     "(seed, epoch) and prepared ahead on a background thread.")
      .def(nb::init<nb::handle, std::int64_t, bool, std::uint64_t, bool, int>(),
           nb::arg("arrays"), nb::arg("batch_size") = 1, nb::arg("shuffle") = false,
           nb::arg("seed") = 0, nb::arg("drop_last") = false, nb::arg("prefetch") = 2)
      .def("__iter__", &Loader::start, nb::rv_policy::reference_internal,
           "Starts the next epoch (the first iteration epoch 0).")
      .def("__next__", &Loader::next)
      .def("__len__", &Loader::batches)
      .def_prop_ro("dataset_size", &Loader::size)
      .def_prop_ro("epochs_started", &Loader::epoch)
      .def_prop_ro("wait_seconds", &Loader::waited);
  m.def("load_fashion_mnist", [](const std::string& split, const std::string& dir) {
          data::Dataset d;
          {
            nb::gil_scoped_release unlocked;
            d = data::load_mnist_split(dir, split);
          }
          return nb::make_tuple(d.images, d.labels);
        }, nb::arg("split") = "train", nb::arg("dir") = data::fashion_mnist_default_dir,
        "(images f32 [N, 1, 28, 28] in [0, 1], labels int64 [N]) of the 'train' or 'test' split "
        "of the IDX files (Debian's dataset-fashion-mnist by default).");
}

}  // namespace kiln::python
