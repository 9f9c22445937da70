#include "exec/cpu/bf16_gemm.hpp"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <map>
#include <mutex>
#include <optional>

#include "exec/cpu/onednn_engine.hpp"

namespace kiln::detail::cpu {

namespace {

using dnnl::memory;

struct Product {
  memory::desc a, b, c;
  dnnl::matmul primitive;
};

// Made once per geometry (a training loop repeats its shapes) and per thread count, which oneDNN
// fixes when it makes a primitive; none where oneDNN has no bf16 matmul for this CPU.
const std::optional<Product>& product(bool ta, bool tb, std::int64_t m, std::int64_t n,
                                      std::int64_t k, std::int64_t lda, std::int64_t ldb) {
  static std::mutex mutex;
  static std::map<std::array<std::int64_t, 8>, std::optional<Product>> cache;
  const std::array<std::int64_t, 8> key{ta, tb, m, n, k, lda, ldb, omp_get_max_threads()};
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::optional<Product> p;
  try {
    const auto bf16 = memory::data_type::bf16;
    const memory::desc a({m, k}, bf16, ta ? memory::dims{1, lda} : memory::dims{lda, 1});
    const memory::desc b({k, n}, bf16, tb ? memory::dims{1, ldb} : memory::dims{ldb, 1});
    const memory::desc c({m, n}, bf16, memory::dims{n, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), onednn_engine());
    p = Product{a, b, c, dnnl::matmul(pd)};
  } catch (const dnnl::error&) {
    p.reset();  // no bf16 implementation here: the caller computes in f32
  }
  return cache.emplace(key, std::move(p)).first->second;
}

}  // namespace

bool bf16_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
               const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b, std::int64_t ldb,
               std::uint16_t* c) {
  const std::optional<Product>& p = product(ta, tb, m, n, k, lda, ldb);
  if (!p) return false;
  dnnl::stream stream(onednn_engine());
  memory am(p->a, onednn_engine(), const_cast<std::uint16_t*>(a));
  memory bm(p->b, onednn_engine(), const_cast<std::uint16_t*>(b));
  memory cm(p->c, onednn_engine(), c);
  p->primitive.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
  return true;
}

}  // namespace kiln::detail::cpu
