// The discrete Fourier transform along one axis (the fft row), with KISS FFT: every executor runs
// this host code, as the linalg rows run LAPACK, and the tests hold it to a direct sum of the
// definition. The transform is computed in the precision of the node's parts (float for c64,
// double for c128), forward as X[k] = sum_j x[j] exp(-2 pi i jk / n), inverse with the opposite
// sign and a factor 1/n; the lines are spread over kiln's threads.
#include <complex>
#include <kissfft.hh>
#include <vector>

#include "exec/cpu/parallel.hpp"
#include "exec/operand.hpp"
#include "exec/reduction_geometry.hpp"
#include "exec/reference_kernels.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

template <class R>
void transform_lines(const Node& n, const Operand& a, Buffer& out) {
  using C = std::complex<R>;
  const AxisLines l(n);
  const kissfft<R> transform(static_cast<std::size_t>(l.len), n.attrs.inverse);
  const R scale = n.attrs.inverse ? R{1} / static_cast<R>(l.len) : R{1};
  // An input of the node's type in row-major memory is read directly; any other (a view, a real
  // or narrow type) through its Operand.
  const C* direct = a.view == nullptr && a.dtype == n.dtype ? a.buffer->as<C>() : nullptr;
  C* o = out.as<C>();
  // parallel_for passes an exception (an allocation failing) on to the caller.
  parallel_for(l.outer * l.inner, grain_for(l.len), [&](std::int64_t begin, std::int64_t end) {
    std::vector<C> line(static_cast<std::size_t>(l.len)), result(line.size());
    for (std::int64_t index = begin; index < end; ++index) {
      const std::int64_t i = index / l.inner, k = index % l.inner;
      for (std::int64_t j = 0; j < l.len; ++j)
        line[j] = direct != nullptr ? direct[l.at(i, k, j)] : a.get<C>(l.at(i, k, j));
      transform.transform(line.data(), result.data());
      for (std::int64_t j = 0; j < l.len; ++j) o[l.at(i, k, j)] = result[j] * scale;
    }
  });
}

}  // namespace

void run_spectral_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const AxisLines l(n);
  if (l.len == 0 || l.outer * l.inner == 0) return;
  if (n.dtype == DType::c64) return transform_lines<float>(n, a, out);
  if (n.dtype == DType::c128) return transform_lines<double>(n, a, out);
  throw Error(ErrorCode::internal_error,
              "fft: a result of type " + std::string(dtype_name(n.dtype)));
}

}  // namespace kiln::detail
