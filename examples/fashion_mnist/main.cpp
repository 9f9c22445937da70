// Trains the "2 Conv+pooling" CNN of the Fashion-MNIST benchmark table with kiln::nn:
//   conv 5x5x32 same + ReLU, max-pool 2, conv 5x5x64 same + ReLU, max-pool 2, flatten,
//   dense 1024 + ReLU, dropout 0.4, dense 10; Adam (lr 1e-3, times 0.7 after each epoch),
//   batch 64.
// Under an MPI launcher (`mpirun -np N fashion_mnist`) it trains data-parallel: every rank takes
// its shard of each epoch (DistributedSampler) and --batch-size examples per step, gradients are
// averaged across ranks (nn::DistributedDataParallel), and rank 0 alone prints, tests and writes.
// Prints a progress bar per epoch (plain lines when stdout is not a terminal), the test accuracy
// after each epoch, and writes the per-epoch numbers to a CSV file and the curves to a PNG.
#include <kiln/data.hpp>
#include <kiln/distributed.hpp>
#include <kiln/executor.hpp>
#include <kiln/kiln.hpp>
#include <kiln/nn.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "plot.hpp"

namespace {

namespace nn = kiln::nn;
using kiln::Tensor;
using Clock = std::chrono::steady_clock;

struct Options {
  int epochs = 1;
  std::int64_t batch_size = 64;
  int threads = 0;  // 0: kiln's default
  std::uint64_t seed = 1;
  bool small = false;
  std::int64_t limit = -1;
  std::int64_t test_limit = -1;
  double lr = 1e-3;
  double lr_decay = 0.7;  // a decaying rate reaches the published accuracy within 5 epochs
  std::string data = kiln::data::fashion_mnist_default_dir;
  std::string csv = "fashion_mnist.csv";
  std::string plot = "fashion_mnist.png";
  std::string save;
  std::string backend;  // empty: kiln's default executor (KILN_EXECUTOR, else cpu)
  kiln::DType dtype = kiln::DType::f32;  // the layers' type; bf16/f16: mixed precision
};

void usage(std::ostream& os) {
  os << "usage: fashion_mnist [options]\n"
        "  --epochs N        training epochs (default 1)\n"
        "  --batch-size N    batch size (default 64; under mpirun, per rank)\n"
        "  --threads N       CPU threads (default: all cores, or KILN_NUM_THREADS)\n"
        "  --seed N          seed for initialisation, shuffling and dropout (default 1)\n"
        "  --small           a smaller model: conv 8 and 16 channels, dense 128\n"
        "  --limit N         train on the first N training images only (0: all, the default)\n"
        "  --test-limit N    evaluate on the first N test images only (0: all, the default)\n"
        "  --lr X            Adam's learning rate (default 0.001)\n"
        "  --lr-decay F      multiply the learning rate by F after each epoch (default 0.7;\n"
        "                    1 keeps it constant)\n"
        "  --data DIR        directory of the IDX files (default "
     << kiln::data::fashion_mnist_default_dir
     << ")\n"
        "  --csv PATH        per-epoch results (default fashion_mnist.csv)\n"
        "  --plot PATH       PNG of the training curves (default fashion_mnist.png)\n"
        "  --save PATH       save the trained parameters (kiln::nn::save format)\n"
        "  --backend NAME    the executor to train on: cpu, opencl or reference (default: cpu,\n"
        "                    or KILN_EXECUTOR)\n"
        "  --dtype T         f32 (default), or bf16 / f16: mixed precision (kiln::nn::Autocast),\n"
        "                    activations and products in T, parameters and loss in f32\n"
        "                    (f16 with dynamic loss scaling)\n";
}

Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) {
      std::cerr << "fashion_mnist: " << argv[i] << " needs a value\n";
      std::exit(2);
    }
    return argv[++i];
  };
  auto integer = [&](int& i, long long min) {
    const std::string flag = argv[i], s = value(i);
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0' || v < min) {
      std::cerr << "fashion_mnist: " << flag << " needs an integer >= " << min << ", got '" << s
                << "'\n";
      std::exit(2);
    }
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs") o.epochs = static_cast<int>(integer(i, 1));
    else if (a == "--batch-size") o.batch_size = integer(i, 1);
    else if (a == "--threads") o.threads = static_cast<int>(integer(i, 1));
    else if (a == "--seed") o.seed = static_cast<std::uint64_t>(integer(i, 0));
    else if (a == "--small") o.small = true;
    else if (a == "--limit") o.limit = integer(i, 0);
    else if (a == "--test-limit") o.test_limit = integer(i, 0);
    else if (a == "--lr") o.lr = std::atof(value(i).c_str());
    else if (a == "--lr-decay") o.lr_decay = std::atof(value(i).c_str());
    else if (a == "--data") o.data = value(i);
    else if (a == "--csv") o.csv = value(i);
    else if (a == "--plot") o.plot = value(i);
    else if (a == "--save") o.save = value(i);
    else if (a == "--backend") o.backend = value(i);
    else if (a == "--dtype") {
      const std::string t = value(i);
      if (t == "f32") o.dtype = kiln::DType::f32;
      else if (t == "bf16") o.dtype = kiln::DType::bf16;
      else if (t == "f16") o.dtype = kiln::DType::f16;
      else {
        std::cerr << "fashion_mnist: --dtype is f32, bf16 or f16, got '" << t << "'\n";
        std::exit(2);
      }
    }
    else if (a == "--help" || a == "-h") {
      usage(std::cout);
      std::exit(0);
    } else {
      std::cerr << "fashion_mnist: unknown option '" << a << "'\n";
      usage(std::cerr);
      std::exit(2);
    }
  }
  if (!(o.lr_decay > 0)) {
    std::cerr << "fashion_mnist: --lr-decay needs a factor > 0\n";
    std::exit(2);
  }
  return o;
}

nn::Sequential make_model(bool small) {
  const std::int64_t c1 = small ? 8 : 32, c2 = small ? 16 : 64, hidden = small ? 128 : 1024;
  return nn::Sequential(nn::Conv2d(1, c1, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Conv2d(c1, c2, 5, 1, /*padding=*/2), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Flatten(), nn::Linear(c2 * 7 * 7, hidden), nn::ReLU(), nn::Dropout(0.4),
                        nn::Linear(hidden, 10));
}

std::string clock_string(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// Progress of one epoch: a bar redrawn in place on a terminal, a line every 10% otherwise.
class Progress {
 public:
  Progress(int epoch, int epochs, std::int64_t batches)
      : epoch_(epoch), epochs_(epochs), batches_(batches), tty_(isatty(STDOUT_FILENO) != 0),
        start_(Clock::now()) {}

  void update(std::int64_t done, double mean_loss, std::int64_t images) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double rate = elapsed > 0 ? images / elapsed : 0;
    const double left = done > 0 ? elapsed / done * (batches_ - done) : NAN;
    char stats[160];
    std::snprintf(stats, sizeof stats, "loss %.4f  %.0f img/s  %s left", mean_loss, rate,
                  clock_string(left).c_str());
    if (tty_) {
      if (done != batches_ && elapsed - last_draw_ < 0.1) return;
      last_draw_ = elapsed;
      constexpr int width = 30;
      const int filled = static_cast<int>(width * done / std::max<std::int64_t>(1, batches_));
      std::string bar(static_cast<std::size_t>(filled), '=');
      if (filled < width) bar += '>';
      bar.resize(width, ' ');
      std::printf("\repoch %d/%d [%s] %lld/%lld  %s\x1b[K", epoch_, epochs_, bar.c_str(),
                  static_cast<long long>(done), static_cast<long long>(batches_), stats);
      if (done == batches_) std::printf("\n");
      std::fflush(stdout);
    } else {
      const std::int64_t step = std::max<std::int64_t>(1, batches_ / 10);
      if (done % step != 0 && done != batches_) return;
      if (done == batches_ && done % step == 0 && done / step > 10) return;
      std::printf("epoch %d/%d: %lld/%lld batches (%3.0f%%)  %s\n", epoch_, epochs_,
                  static_cast<long long>(done), static_cast<long long>(batches_),
                  100.0 * done / batches_, stats);
      std::fflush(stdout);
    }
  }

 private:
  int epoch_, epochs_;
  std::int64_t batches_;
  bool tty_;
  Clock::time_point start_;
  double last_draw_ = -1;
};

struct EpochResult {
  int epoch;
  double train_loss, test_loss, test_accuracy, seconds, images_per_second;
};

// Test loss and accuracy in evaluation mode, in batches.
std::pair<double, double> evaluate(nn::Module& model, const kiln::data::Dataset& test,
                                   kiln::DType dtype) {
  model.eval();
  std::optional<nn::Autocast> mixed;
  if (dtype != kiln::DType::f32) mixed.emplace(dtype);
  kiln::data::BatchIterator batches(test, 500, /*shuffle=*/false);
  kiln::data::Batch b;
  double loss_sum = 0;
  std::int64_t correct = 0;
  while (batches.next(b)) {
    const Tensor logits = model(b.images);
    const Tensor loss = nn::cross_entropy(logits, b.labels);
    const Tensor right = nn::correct_count(logits, b.labels);
    kiln::eval_all({loss, right});
    loss_sum += loss.item<double>() * static_cast<double>(b.labels.size(0));
    correct += right.item<std::int64_t>();
  }
  model.train();
  const double n = static_cast<double>(std::max<std::int64_t>(1, test.size()));
  return {loss_sum / n, static_cast<double>(correct) / n};
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  namespace dist = kiln::distributed;
  try {
    const bool distributed = dist::launched();
    if (distributed) {
      dist::init();
      if (o.dtype == kiln::DType::f16) {
        std::fprintf(stderr, "fashion_mnist: --dtype f16 needs loss scaling, which data-parallel "
                             "training does not do yet: use bf16\n");
        return 2;
      }
      // One voice: the other ranks train silently (their errors still go to stderr).
      if (dist::rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
    }
    const int rank = distributed ? dist::rank() : 0;
    const int ranks = distributed ? dist::world_size() : 1;
    if (o.threads > 0) kiln::set_num_threads(o.threads);
    if (!o.backend.empty()) kiln::set_executor(kiln::find_executor(o.backend));
    std::printf("executor: %s\n", std::string(kiln::current_executor()->name()).c_str());
    nn::manual_seed(o.seed);

    auto t0 = Clock::now();
    kiln::data::Dataset train = kiln::data::take(kiln::data::load_mnist_split(o.data, "train"),
                                                 o.limit > 0 ? o.limit : -1);
    kiln::data::Dataset test = kiln::data::take(kiln::data::load_mnist_split(o.data, "test"),
                                                o.test_limit > 0 ? o.test_limit : -1);
    std::printf("Fashion-MNIST from %s: %lld training and %lld test images (%.1f s to load)\n",
                o.data.c_str(), static_cast<long long>(train.size()),
                static_cast<long long>(test.size()),
                std::chrono::duration<double>(Clock::now() - t0).count());

    nn::Sequential model = make_model(o.small);
    std::printf("%s model:\n%s", o.small ? "small" : "full", model.summary().c_str());
    // Every rank starts from rank 0's parameters; dropout masks differ per rank (its own seed).
    std::optional<nn::DistributedDataParallel> ddp;
    if (distributed) {
      ddp.emplace(model);
      nn::manual_seed(o.seed + static_cast<std::uint64_t>(rank));
      std::printf("data-parallel over %d ranks: batch %lld per rank, %lld per step\n", ranks,
                  static_cast<long long>(o.batch_size),
                  static_cast<long long>(o.batch_size * ranks));
    }
    nn::Adam optimizer(model.parameters(), {.lr = o.lr});
    // f16's gradients underflow without it; bf16 has f32's range.
    if (o.dtype == kiln::DType::f16) optimizer.set_loss_scaling({});
    std::printf("Adam (lr %g, times %g after each epoch), batch size %lld, %d epoch%s, "
                "%d thread%s, seed %llu, layers in %s\n",
                o.lr, o.lr_decay, static_cast<long long>(o.batch_size), o.epochs,
                o.epochs == 1 ? "" : "s", kiln::num_threads(), kiln::num_threads() == 1 ? "" : "s",
                static_cast<unsigned long long>(o.seed), kiln::dtype_name(o.dtype));
    std::fflush(stdout);

    // Batches gathered on a background thread two steps ahead, in the order BatchIterator
    // would give them (the same seed gives the same epochs).
    kiln::data::DataLoaderOptions loading{
        .batch_size = o.batch_size, .shuffle = true, .seed = o.seed, .prefetch = 2};
    if (distributed) {
      loading.shuffle = false;  // the sampler shuffles, the same way on every rank
      loading.sampler = kiln::data::DistributedSampler::make(
          train.size(), {.num_replicas = ranks, .rank = rank, .shuffle = true, .seed = o.seed});
    }
    kiln::data::DataLoader batches(kiln::data::TensorDataset{{train.images, train.labels}},
                                   loading);
    std::vector<EpochResult> results;
    std::vector<double> curve_x, curve_loss;  // mean loss over each 1/20 of an epoch
    const std::int64_t n_batches = batches.num_batches();
    const std::int64_t segment = std::max<std::int64_t>(1, n_batches / 20);

    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
      batches.start_epoch(epoch - 1);
      model.train();
      Progress progress(epoch, o.epochs, n_batches);
      const auto start = Clock::now();
      double loss_sum = 0, segment_sum = 0;
      std::int64_t images = 0, segment_images = 0;
      const double waited_before = batches.wait_seconds();
      std::vector<Tensor> b;  // images, labels
      for (std::int64_t index = 0; batches.next(b); ++index) {
        Tensor loss;
        {
          kiln::GradientContext gradients;
          std::optional<nn::Autocast> mixed;
          if (o.dtype != kiln::DType::f32) mixed.emplace(o.dtype);
          loss = nn::cross_entropy(ddp ? (*ddp)(b[0]) : model(b[0]), b[1]);
        }
        if (ddp) {
          optimizer.zero_grad();
          ddp->backward(loss);  // gradients averaged over the ranks
          optimizer.step();
        } else {
          optimizer.step(loss);  // forward, backward and the Adam update in one pass
        }
        const double l = loss.item<double>();
        const std::int64_t n = b[1].size(0);
        if (!std::isfinite(l)) throw kiln::Error(kiln::ErrorCode::internal_error,
                                                 "the training loss is not finite");
        loss_sum += l * n;
        segment_sum += l * n;
        images += n;
        segment_images += n;
        if ((index + 1) % segment == 0 || index + 1 == n_batches) {
          curve_x.push_back(epoch - 1 + static_cast<double>(index + 1) / n_batches);
          curve_loss.push_back(segment_sum / segment_images);
          segment_sum = 0;
          segment_images = 0;
        }
        progress.update(index + 1, loss_sum / images, images * ranks);
      }
      double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (distributed) {
        // The epoch's loss over every rank's examples, and the slowest rank's time.
        const std::vector<double> totals =
            dist::all_reduce(Tensor::from(std::vector<double>{loss_sum, static_cast<double>(images)}))
                .to_vector<double>();
        loss_sum = totals[0];
        images = static_cast<std::int64_t>(totals[1]);
        seconds = dist::all_reduce(Tensor::from(std::vector<double>{seconds}),
                                   dist::ReduceOp::max).item<double>();
      }
      const auto eval_start = Clock::now();
      // Every rank has the same parameters: rank 0 tests them.
      const auto [test_loss, test_accuracy] =
          rank == 0 ? evaluate(model, test, o.dtype) : std::pair<double, double>{0, 0};
      const double eval_seconds =
          std::chrono::duration<double>(Clock::now() - eval_start).count();
      results.push_back({epoch, loss_sum / images, test_loss, test_accuracy, seconds,
                         images / seconds});
      if (optimizer.loss_scale() > 0)
        std::printf("loss scale %g, %lld steps skipped so far\n", optimizer.loss_scale(),
                    static_cast<long long>(optimizer.skipped_steps()));
      std::printf("epoch %d/%d: train loss %.4f, test loss %.4f, test accuracy %.4f "
                  "(%.1f s training, %.0f img/s, %.3f s of it waiting for data; %.1f s "
                  "testing)\n",
                  epoch, o.epochs, loss_sum / images, test_loss, test_accuracy, seconds,
                  images / seconds, batches.wait_seconds() - waited_before, eval_seconds);
      std::fflush(stdout);
      optimizer.set_lr(optimizer.lr() * o.lr_decay);
    }

    if (rank != 0) {
      dist::finalize();
      return 0;  // rank 0 writes the outputs
    }
    if (!o.save.empty()) {
      nn::save(model, o.save);
      std::printf("saved the parameters to %s\n", o.save.c_str());
    }

    // Each output is checked to the end (the last buffer is written by flush and close), and a
    // failure makes the run fail: a results file that silently lacks its numbers is worse than
    // none.
    bool outputs_ok = true;
    std::ofstream csv(o.csv);
    csv << "epoch,train_loss,test_loss,test_accuracy,epoch_seconds,images_per_second\n";
    for (const auto& r : results)
      csv << r.epoch << ',' << r.train_loss << ',' << r.test_loss << ',' << r.test_accuracy << ','
          << r.seconds << ',' << r.images_per_second << '\n';
    csv.flush();
    csv.close();
    if (!csv) {
      std::fprintf(stderr, "fashion_mnist: could not write %s\n", o.csv.c_str());
      outputs_ok = false;
    } else {
      std::printf("wrote %s\n", o.csv.c_str());
    }

    plot::Chart chart;
    chart.title = std::string("Fashion-MNIST, ") + (o.small ? "small CNN" : "2 Conv+pooling CNN");
    chart.x_label = "epoch";
    chart.left_label = "training loss";
    chart.right_label = "test accuracy";
    chart.x_lo = 0;
    chart.x_hi = o.epochs;
    chart.left_lo = 0;
    chart.left_hi = *std::max_element(curve_loss.begin(), curve_loss.end());
    plot::Series loss_series{"training loss (mean per 1/20 epoch)", curve_x, curve_loss,
                             {31, 119, 180}};
    plot::Series acc_series{"test accuracy (after each epoch)", {}, {}, {230, 110, 20}, true, true};
    for (const auto& r : results) {
      acc_series.x.push_back(r.epoch);
      acc_series.y.push_back(r.test_accuracy);
    }
    chart.series = {loss_series, acc_series};
    if (!plot::write_chart_png(chart, o.plot)) {
      std::fprintf(stderr, "fashion_mnist: could not write %s\n", o.plot.c_str());
      outputs_ok = false;
    } else {
      std::printf("wrote %s\n", o.plot.c_str());
    }
    if (std::fflush(stdout) != 0) outputs_ok = false;
    if (distributed) dist::finalize();
    return outputs_ok ? 0 : 1;
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "\nfashion_mnist: error (%s): %s\n", kiln::error_code_name(e.code()),
                 e.what());
    return 1;
  }
}
