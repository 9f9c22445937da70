// The workloads of issue 6's benchmark table and their input data.
#include <cmath>
#include <random>

#include "bench.hpp"

namespace bench {

namespace {

constexpr double kF32 = 4.0;  // bytes per element

double count(const Dims& d) {
  double n = 1;
  for (auto x : d) n *= static_cast<double>(x);
  return n;
}

Workload memory_bound(std::string name, Kind kind, std::vector<Dims> inputs, double bytes) {
  return Workload{std::move(name), kind, std::move(inputs), bytes, 0, 0, false};
}

// `flops`: two per multiply-add.
Workload compute_bound(std::string name, Kind kind, std::vector<Dims> inputs, double flops) {
  return Workload{std::move(name), kind, std::move(inputs), 0, flops, 0, true};
}

}  // namespace

std::vector<Workload> all_workloads() {
  std::vector<Workload> w;
  const double n10m = 10'000'000;
  // Three reads and one write.
  w.push_back(memory_bound("exp(sin(a)*b+c)/2 10M", Kind::expression,
                           {{10'000'000}, {10'000'000}, {10'000'000}}, 4 * n10m * kF32));
  // Read the matrix and the row, write the result.
  w.push_back(memory_bound("row add [1000,1000]+[1000]", Kind::row_add, {{1000, 1000}, {1000}},
                           (2 * 1e6 + 1000) * kF32));
  // One read (the small output is counted too).
  const Dims big{4096, 4096};
  w.push_back(memory_bound("sum [4096,4096] axis 0", Kind::sum_axis0, {big},
                           (count(big) + 4096) * kF32));
  w.push_back(memory_bound("sum [4096,4096] axis 1", Kind::sum_axis1, {big},
                           (count(big) + 4096) * kF32));
  w.push_back(memory_bound("sum [4096,4096] all", Kind::sum_all, {big}, count(big) * kF32));
  for (std::int64_t n : {256, 512, 1024, 2048, 4096}) {
    const std::string s = std::to_string(n);
    const double d = static_cast<double>(n);
    w.push_back(
        compute_bound("matmul " + s + "x" + s, Kind::matmul, {{n, n}, {n, n}}, 2 * d * d * d));
  }
  w.push_back(compute_bound("matmul [64,128,128]@[64,128,128]", Kind::matmul,
                            {{64, 128, 128}, {64, 128, 128}}, 64 * 2 * 128.0 * 128 * 128));
  // Outputs (padding 1 keeps the image size) times input channels times the 3x3 window.
  w.push_back(compute_bound("conv2d [8,64,56,56]*[64,64,3,3] pad 1", Kind::conv2d,
                            {{8, 64, 56, 56}, {64, 64, 3, 3}}, 2 * (8 * 64 * 56 * 56.0) * 64 * 9));
  w.push_back(compute_bound("conv2d [32,3,64,64]*[16,3,3,3] pad 1", Kind::conv2d,
                            {{32, 3, 64, 64}, {16, 3, 3, 3}}, 2 * (32 * 16 * 64 * 64.0) * 3 * 9));
  // Rows of 4 KB stay in L1 between the passes: one read and one write.
  const Dims logits{4096, 1000};
  w.push_back(memory_bound("softmax [4096,1000]", Kind::softmax, {logits},
                           2 * count(logits) * kF32));
  w.push_back(memory_bound("log_softmax [4096,1000]", Kind::log_softmax, {logits},
                           2 * count(logits) * kF32));
  const Dims image{32, 16, 62, 62};
  w.push_back(memory_bound("max_pool2d 2x2 [32,16,62,62]", Kind::max_pool2d, {image},
                           1.25 * count(image) * kF32));
  // Complex values (c64): the two f32 parts read, the c64 result written.
  w.push_back(memory_bound("c64 exp(z)*z+z 4M", Kind::complex_expression,
                           {{4'000'000}, {4'000'000}}, 4e6 * (2 * kF32 + 2 * kF32)));
  // A complex multiply-add is 8 real flops.
  w.push_back(compute_bound("c64 matmul 512x512", Kind::complex_matmul,
                            {{512, 512}, {512, 512}, {512, 512}, {512, 512}},
                            8 * 512.0 * 512 * 512));
  // 5 n log2(n) flops per transform of n points (the radix-2 count).
  w.push_back(compute_bound("c64 fft [256,4096] last dim", Kind::fft, {{256, 4096}, {256, 4096}},
                            256 * 5 * 4096.0 * 12));
  // A length of mixed factors (2^3 5^3), and lines longer than a work-group's local memory.
  w.push_back(compute_bound("c64 fft [256,1000] last dim", Kind::fft, {{256, 1000}, {256, 1000}},
                            256 * 5 * 1000.0 * std::log2(1000.0)));
  w.push_back(compute_bound("c64 fft [16,65536] last dim", Kind::fft, {{16, 65536}, {16, 65536}},
                            16 * 5 * 65536.0 * 16));
  // A prime length (Bluestein's method on the device), counted as a transform of n points.
  w.push_back(compute_bound("c64 fft [256,1009] last dim", Kind::fft, {{256, 1009}, {256, 1009}},
                            256 * 5 * 1009.0 * std::log2(1009.0)));
  w.push_back(Workload{"10k x=x+1 on [4], one eval (us/op)", Kind::op_chain_lazy, {{4}}, 0, 0,
                       10'000, false});
  w.push_back(Workload{"10k x=x+1 on [4], eval each (us/op)", Kind::op_chain_eager, {{4}}, 0, 0,
                       10'000, false});
  // Inputs x [32,64], then w1 [64,64], b1 [64], w2 [64,10], b2 [10]: the cost of a step is almost
  // all per-op overhead (graph building, differentiation, scheduling), not arithmetic.
  w.push_back(Workload{"MLP step 32x64-64-10, SGD (us/step)", Kind::mlp_step,
                       {{32, 64}, {64, 64}, {64}, {64, 10}, {10}}, 0, 0, 1, false});
  w.push_back(Workload{"MLP step compiled, SGD (us/step)", Kind::mlp_step_compiled,
                       {{32, 64}, {64, 64}, {64}, {64, 10}, {10}}, 0, 0, 1, false});
  return w;
}

Inputs make_inputs(const Workload& w) {
  std::mt19937 gen(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Inputs in;
  for (const Dims& d : w.inputs) {
    std::vector<float> v(static_cast<std::size_t>(count(d)));
    for (float& x : v) x = dist(gen);
    in.push_back(std::move(v));
  }
  return in;
}

}  // namespace bench
