// A character-level language model: a small decoder-only Transformer (char_model.hpp) trained
// with Adam on the licence texts in /usr/share/common-licenses, then sampled. Prints the loss
// curve, tokens per second and peak memory; --csv and --plot write the curve. Exits with 1 when
// the loss does not fall, so a short run is a test.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../fashion_mnist/plot.hpp"
#include "char_model.hpp"

namespace {

namespace nn = kiln::nn;

struct Options {
  int steps = 3000;
  int print_every = 50;
  std::int64_t batch = 32;
  int threads = 0;  // 0: kiln's default
  std::uint64_t seed = 1;
  double lr = 3e-3;
  int sample = 300;  // characters generated at the end
  std::string corpus = char_lm::kDefaultCorpusDir;
  std::string csv, plot;
};

void usage() {
  std::puts(
      "usage: char_lm [--steps N] [--print-every N] [--batch N] [--threads N] [--seed N]\n"
      "               [--lr X] [--sample N] [--corpus DIR] [--csv PATH] [--plot PATH.png]");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--steps")
      o.steps = std::stoi(value());
    else if (a == "--print-every")
      o.print_every = std::max(1, std::stoi(value()));
    else if (a == "--batch")
      o.batch = std::stoll(value());
    else if (a == "--threads")
      o.threads = std::stoi(value());
    else if (a == "--seed")
      o.seed = std::stoull(value());
    else if (a == "--lr")
      o.lr = std::stod(value());
    else if (a == "--sample")
      o.sample = std::stoi(value());
    else if (a == "--corpus")
      o.corpus = value();
    else if (a == "--csv")
      o.csv = value();
    else if (a == "--plot")
      o.plot = value();
    else {
      usage();
      std::exit(a == "--help" ? 0 : 2);
    }
  }
  return o;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

// Continues `prompt` by sampling one character at a time from the model's softmax.
std::string sample(char_lm::CharTransformer& model, const char_lm::Corpus& corpus,
                   const std::string& prompt, int count, std::uint64_t seed) {
  std::vector<std::int64_t> context;
  for (unsigned char ch : prompt) {
    const auto at = std::find(corpus.vocabulary.begin(), corpus.vocabulary.end(), ch);
    context.push_back(at == corpus.vocabulary.end() ? 0 : at - corpus.vocabulary.begin());
  }
  std::mt19937_64 gen(seed);
  std::string out = prompt;
  const std::int64_t window = model.config().context;
  for (int i = 0; i < count; ++i) {
    const std::size_t from =
        context.size() > static_cast<std::size_t>(window) ? context.size() - window : 0;
    const std::vector<std::int64_t> last(context.begin() + static_cast<std::ptrdiff_t>(from),
                                         context.end());
    const auto T = static_cast<std::int64_t>(last.size());
    const kiln::Tensor logits = model(kiln::Tensor::from(last, {T, 1}));
    const std::vector<float> p = kiln::softmax(logits[T - 1][0], -1).to_vector<float>();
    std::discrete_distribution<std::int64_t> pick(p.begin(), p.end());
    const std::int64_t next = pick(gen);
    context.push_back(next);
    out += static_cast<char>(corpus.vocabulary[static_cast<std::size_t>(next)]);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.threads > 0) kiln::set_num_threads(o.threads);
  nn::manual_seed(o.seed);
  const char_lm::Corpus corpus = char_lm::Corpus::load(o.corpus);
  char_lm::ModelConfig config;
  config.vocabulary = static_cast<std::int64_t>(corpus.vocabulary.size());
  char_lm::CharTransformer model(config);
  nn::Adam optimizer(model.parameters(), {.lr = o.lr});
  char_lm::Batches batches(corpus, o.batch, config.context, o.seed);
  std::printf("corpus %zu characters, vocabulary %ld; %s, %ld parameters; batch %ld x %ld\n",
              corpus.tokens.size(), static_cast<long>(config.vocabulary), model.describe().c_str(),
              static_cast<long>(model.num_parameters()), static_cast<long>(o.batch),
              static_cast<long>(config.context));

  std::vector<double> curve_x, curve_y;
  std::vector<std::int64_t> inputs, targets;
  double window_sum = 0, first = 0, last = 0;
  int window_count = 0;
  const kiln::Shape shape{config.context, o.batch};
  const auto start = std::chrono::steady_clock::now();
  for (int step = 1; step <= o.steps; ++step) {
    batches.next(inputs, targets);
    kiln::Tensor loss;
    {
      kiln::GradientContext gradients;
      loss = char_lm::next_token_loss(model, kiln::Tensor::from(inputs, shape),
                                      kiln::Tensor::from(targets, shape));
    }
    optimizer.step(loss);
    const double value = loss.item<double>();
    if (!std::isfinite(value)) {
      std::printf("the loss is not finite at step %d\n", step);
      return 1;
    }
    window_sum += value;
    ++window_count;
    if (step % o.print_every == 0 || step == o.steps) {
      const double mean = window_sum / window_count;
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf(
          "step %5d  loss %.4f  %8.0f tokens/s\n", step, mean,
          static_cast<double>(step) * static_cast<double>(o.batch * config.context) / seconds);
      if (curve_x.empty()) first = mean;
      last = mean;
      curve_x.push_back(step);
      curve_y.push_back(mean);
      window_sum = 0;
      window_count = 0;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "trained %d steps in %.1f s: %.0f tokens/s, peak memory %.0f MiB\n", o.steps, seconds,
      static_cast<double>(o.steps) * static_cast<double>(o.batch * config.context) / seconds,
      peak_rss_mb());
  if (o.sample > 0)
    std::printf("sample:\n%s\n", sample(model, corpus, "This License", o.sample, o.seed).c_str());

  if (!o.csv.empty()) {
    std::ofstream csv(o.csv);
    csv << "step,loss\n";
    for (std::size_t i = 0; i < curve_x.size(); ++i) csv << curve_x[i] << "," << curve_y[i] << "\n";
  }
  if (!o.plot.empty()) {
    plot::Chart chart;
    chart.title = "char_lm: training loss";
    chart.x_label = "step";
    chart.left_label = "training loss (nats per character)";
    chart.series.push_back({"mean loss per " + std::to_string(o.print_every) + " steps",
                            curve_x,
                            curve_y,
                            {30, 100, 200}});
    if (!plot::write_chart_png(chart, o.plot)) {
      std::printf("could not write %s\n", o.plot.c_str());
      return 1;
    }
  }
  // A model that learns at all gets well below the first loss within a few dozen steps.
  const bool learned = last < first - 0.3;
  if (!learned) std::printf("THE LOSS DID NOT FALL: %.4f -> %.4f\n", first, last);
  return learned ? 0 : 1;
}
