// libtorch runs its own kernels on an OpenMP pool (torch::set_num_threads) but hands matmul (and
// the im2col convolution) to OpenBLAS, which keeps a separate pthread pool of its own size. With
// both pools at 2 threads, BLAS calls made from inside libtorch's parallel loops can put four
// busy threads on two cores; OpenBLAS on 1 thread avoids that but runs a single large gemm on
// one core. Neither is best everywhere, so for the workloads that reach BLAS both are timed and
// the table reports libtorch's best (and which configuration it was).
#include "torch_threads.hpp"

#include <torch/torch.h>

#ifdef KILN_BENCH_HAVE_OPENBLAS
extern "C" void openblas_set_num_threads(int threads);
#endif

namespace bench {

std::vector<TorchConfig> torch_configs(int threads, bool uses_blas) {
  const std::string n = std::to_string(threads);
#ifdef KILN_BENCH_HAVE_OPENBLAS
  std::vector<TorchConfig> configs{{threads, threads, "torch " + n + ", blas " + n}};
  if (uses_blas && threads > 1) configs.push_back({threads, 1, "torch " + n + ", blas 1"});
  return configs;
#else
  (void)uses_blas;
  return {{threads, 0, "torch " + n}};
#endif
}

void apply(const TorchConfig& config) {
  torch::set_num_threads(config.torch_threads);
#ifdef KILN_BENCH_HAVE_OPENBLAS
  if (config.blas_threads > 0) openblas_set_num_threads(config.blas_threads);
#endif
}

}  // namespace bench
