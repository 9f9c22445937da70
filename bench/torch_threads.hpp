// Thread settings of libtorch (and of the OpenBLAS it calls for matmul).
#pragma once

#include <string>
#include <vector>

namespace bench {

struct TorchConfig {
  int torch_threads;
  int blas_threads;  // 0: left as it is (OpenBLAS could not be linked)
  std::string label;
};

// The configurations tried for libtorch at `threads` threads; the table reports the fastest.
std::vector<TorchConfig> torch_configs(int threads, bool uses_blas);
void apply(const TorchConfig& config);

}  // namespace bench
