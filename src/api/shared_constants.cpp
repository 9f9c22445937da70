#include "api/shared_constants.hpp"

#include <algorithm>
#include <bit>
#include <vector>

#include "graph/node.hpp"
#include "kiln/ops.hpp"

namespace kiln::detail {

namespace {

struct View {
  Shape shape;
  bool inverse;
  Tensor view;
};

struct Constant {
  DType dtype;
  std::uint64_t bits;
  std::uint64_t imag_bits;  // of a complex value
  Tensor leaf;
  std::vector<View> views;  // most recently used last
};

// Most recently used last; a few of each, so a program's handful of constants stay cached
// while one that makes ever new values or shapes keeps only a bounded number alive.
constexpr std::size_t kConstants = 32;
constexpr std::size_t kViewsPerConstant = 8;

std::vector<Constant>& constants() {
  thread_local std::vector<Constant> cache;
  return cache;
}

std::uint64_t bits_of(const Scalar& s) {
  return is_inexact(s.dtype()) ? std::bit_cast<std::uint64_t>(s.as<double>())
                               : static_cast<std::uint64_t>(s.as<std::int64_t>());
}
std::uint64_t imag_bits_of(const Scalar& s) {
  return is_complex(s.dtype()) ? std::bit_cast<std::uint64_t>(s.as<std::complex<double>>().imag())
                               : 0;
}

}  // namespace

const Tensor& shared_constant(Scalar value) {
  auto& cache = constants();
  const std::uint64_t bits = bits_of(value), imag_bits = imag_bits_of(value);
  auto it = std::find_if(cache.begin(), cache.end(), [&](const Constant& c) {
    return c.dtype == value.dtype() && c.bits == bits && c.imag_bits == imag_bits;
  });
  if (it != cache.end()) {
    std::rotate(it, it + 1, cache.end());
    return cache.back().leaf;
  }
  if (cache.size() == kConstants) cache.erase(cache.begin());
  Tensor leaf = scalar(value, value.dtype());
  // A literal of the program: marked, so that graph passes may take its value as known.
  leaf.node()->attrs.store_kind = StoreKind::constant;
  cache.push_back({value.dtype(), bits, imag_bits, std::move(leaf), {}});
  return cache.back().leaf;
}

const Tensor* shared_broadcast(const Tensor& t, const Shape& shape, bool inverse) {
  auto& cache = constants();
  auto c = std::find_if(cache.begin(), cache.end(),
                        [&](const Constant& k) { return k.leaf.node() == t.node(); });
  if (c == cache.end()) return nullptr;
  auto& views = c->views;
  auto v = std::find_if(views.begin(), views.end(), [&](const View& view) {
    return view.inverse == inverse && view.shape == shape;
  });
  // A view someone evaluated (found through graph introspection) holds a full-size buffer now:
  // it leaves the cache with them, and a new view takes its place.
  if (v != views.end() && v->view.is_evaluated()) {
    views.erase(v);
    v = views.end();
  }
  if (v != views.end()) {
    std::rotate(v, v + 1, views.end());
    return &views.back().view;
  }
  if (views.size() == kViewsPerConstant) views.erase(views.begin());
  Tensor view = broadcast_to(t, shape, inverse);  // before the push: `t` may live in the cache
  views.push_back({shape, inverse, std::move(view)});
  return &views.back().view;
}

}  // namespace kiln::detail
