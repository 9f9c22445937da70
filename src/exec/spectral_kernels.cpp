// The discrete Fourier transform along one axis (the fft row), with KISS FFT: every executor runs
// this host code, as the linalg rows run LAPACK, and the tests hold it to a direct sum of the
// definition. The transform is computed in double whatever the node's precision (a c64 result is
// rounded once, at the end), forward as X[k] = sum_j x[j] exp(-2 pi i jk / n), inverse with the
// opposite sign and a factor 1/n.
#include <kissfft.hh>

#include <complex>
#include <vector>

#include "exec/operand.hpp"
#include "exec/reduction_geometry.hpp"
#include "exec/reference_kernels.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

void run_spectral_kernel(const Node& n, Buffer& out) {
  if (!is_complex(n.dtype))
    throw Error(ErrorCode::internal_error, "fft: a result of type " + std::string(dtype_name(n.dtype)));
  const Operand a = Operand::of(*n.inputs[0]);
  const AxisLines l(n);
  if (l.len == 0 || l.outer * l.inner == 0) return;
  const kissfft<double> transform(static_cast<std::size_t>(l.len), n.attrs.inverse);
  const double scale = n.attrs.inverse ? 1.0 / static_cast<double>(l.len) : 1.0;
  std::vector<std::complex<double>> line(static_cast<std::size_t>(l.len)), result(line.size());
  dispatch_with_complex(n.dtype, [&]<class T>() {
    if constexpr (is_complex_v<T>) {
      T* o = out.as<T>();
      for (std::int64_t i = 0; i < l.outer; ++i)
        for (std::int64_t k = 0; k < l.inner; ++k) {
          for (std::int64_t j = 0; j < l.len; ++j)
            line[j] = a.get<std::complex<double>>(l.at(i, k, j));
          transform.transform(line.data(), result.data());
          for (std::int64_t j = 0; j < l.len; ++j)
            o[l.at(i, k, j)] = convert_value<T>(result[j] * scale);
        }
    }
  });
}

}  // namespace kiln::detail
