// The oneDNN CPU engine that kiln's convolution and bf16 product primitives run on: one per
// process, made on first use.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace kiln::detail::cpu {

inline dnnl::engine& onednn_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

}  // namespace kiln::detail::cpu
