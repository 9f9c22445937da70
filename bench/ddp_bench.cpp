// kiln_ddp_bench: images per second of data-parallel training of the Fashion-MNIST CNN
// (examples/fashion_mnist's model, dropout included), one kiln thread per rank, on synthetic
// batches already in memory (so that only the training step and its communication are timed).
//   kiln_ddp_bench [--steps N] [--batch-size B] [--no-overlap] [--bucket-mb X] [--plain]
// Under `mpirun -np N` every rank trains on its own batch of B (N * B images per step); alone,
// --plain times one process's Optimizer::step(loss) instead of the data-parallel step.
// bench/ddp_scaling.sh runs the configurations of bench/RESULTS.md and prints the ratios.
#include <kiln/distributed.hpp>
#include <kiln/kiln.hpp>
#include <kiln/nn.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace {

namespace dist = kiln::distributed;
namespace nn = kiln::nn;
using kiln::Tensor;
using Clock = std::chrono::steady_clock;

struct Options {
  int steps = 30;
  std::int64_t batch = 64;
  bool overlap = true;
  double bucket_mb = 25;
  bool plain = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kiln_ddp_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--steps") o.steps = std::atoi(value().c_str());
    else if (a == "--batch-size") o.batch = std::atoll(value().c_str());
    else if (a == "--no-overlap") o.overlap = false;
    else if (a == "--bucket-mb") o.bucket_mb = std::atof(value().c_str());
    else if (a == "--plain") o.plain = true;
    else {
      std::fprintf(stderr,
                   "usage: kiln_ddp_bench [--steps N] [--batch-size B] [--no-overlap] "
                   "[--bucket-mb X] [--plain]\n");
      std::exit(2);
    }
  }
  if (o.steps < 1 || o.batch < 1 || !(o.bucket_mb > 0)) {
    std::fprintf(stderr, "kiln_ddp_bench: steps, batch size and bucket size must be positive\n");
    std::exit(2);
  }
  return o;
}

nn::Sequential make_model() {
  return nn::Sequential(nn::Conv2d(1, 32, 5, 1, 2), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Conv2d(32, 64, 5, 1, 2), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                        nn::Linear(64 * 7 * 7, 1024), nn::ReLU(), nn::Dropout(0.4),
                        nn::Linear(1024, 10));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    if (o.plain && dist::launched()) {
      std::fprintf(stderr, "kiln_ddp_bench: --plain is one process, without mpirun\n");
      return 2;
    }
    if (!o.plain) dist::init();
    const int rank = o.plain ? 0 : dist::rank();
    const int ranks = o.plain ? 1 : dist::world_size();
    nn::manual_seed(1);
    nn::Sequential model = make_model();
    std::optional<nn::DistributedDataParallel> ddp;
    if (!o.plain) ddp.emplace(model, nn::DistributedDataParallelOptions{.bucket_cap_mb = o.bucket_mb,
                                                                        .overlap = o.overlap});
    nn::manual_seed(2 + static_cast<std::uint64_t>(rank));
    nn::Adam opt(model.parameters(), {.lr = 1e-3});
    // A few different batches, drawn once: the step, not the data, is timed.
    std::vector<std::pair<Tensor, Tensor>> batches;
    for (int b = 0; b < 4; ++b) {
      const Tensor x = nn::uniform({o.batch, 1, 28, 28}, 0.0, 1.0);
      std::vector<std::int64_t> y(static_cast<std::size_t>(o.batch));
      for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int64_t>((i * 7 + b) % 10);
      x.eval();
      batches.emplace_back(x, Tensor::from(y));
    }
    double waited = 0;
    auto step = [&](int s) {
      const auto& [x, y] = batches[static_cast<std::size_t>(s) % batches.size()];
      Tensor loss;
      {
        kiln::GradientContext context;
        loss = nn::cross_entropy(ddp ? (*ddp)(x) : model(x), y);
      }
      if (ddp) {
        opt.zero_grad();
        ddp->backward(loss);
        opt.step();
        waited += ddp->last_wait_seconds();
      } else {
        opt.step(loss);
      }
      return loss.item<double>();
    };
    for (int s = 0; s < 3; ++s) step(s);  // warm-up: schedules made, memory pooled
    waited = 0;
    if (!o.plain) dist::barrier();
    const auto start = Clock::now();
    for (int s = 0; s < o.steps; ++s) step(s);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (!o.plain)
      seconds = dist::all_reduce(Tensor::from(std::vector<double>{seconds}), dist::ReduceOp::max)
                    .item<double>();
    if (rank == 0) {
      const double images = static_cast<double>(o.steps) * static_cast<double>(o.batch) * ranks;
      std::printf("%s ranks %d  batch %lld/rank  %s  %.1f img/s  %.2f ms/step  %.1f%% of the "
                  "step waiting for communication after the backward pass  (%zu bucket%s)\n",
                  o.plain ? "plain" : "ddp", ranks, static_cast<long long>(o.batch),
                  o.plain ? "one process, step(loss)" : (o.overlap ? "overlap on " : "overlap off"),
                  images / seconds, 1e3 * seconds / o.steps, 100.0 * waited / seconds,
                  ddp ? ddp->buckets() : std::size_t{0}, ddp && ddp->buckets() == 1 ? "" : "s");
    }
    if (!o.plain) dist::finalize();
    return 0;
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln_ddp_bench: %s\n", e.what());
    return 1;
  }
}
