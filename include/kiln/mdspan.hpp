/// @file
/// std::mdspan interop where the standard library has it (C++23's `<mdspan>`: g++ 14 and later's
/// libstdc++ with -std=c++23, or libc++ 17 and later). Elsewhere this header declares nothing.
///
///   as_mdspan<float, 2>(t)  a read-only mdspan over an evaluated tensor's values: no copy.
///   from_mdspan(m)          a new tensor holding a row-major (layout_right) mdspan's values.
#pragma once

#if __has_include(<mdspan>)
#include <mdspan>
#endif

#if defined(__cpp_lib_mdspan)
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

template <class T, std::size_t Rank>
using TensorSpan = std::mdspan<const T, std::dextents<std::int64_t, Rank>>;

/// The values of `t` (evaluated if needed) as a row-major mdspan of rank Rank, which must be t's
/// rank (else illegal_dimensionality); T must be its element type (else wrong_type). Valid while
/// `t` lives.
template <class T, std::size_t Rank> TensorSpan<T, Rank> as_mdspan(const Tensor& t) {
  if (t.rank() != static_cast<int>(Rank))
    throw Error(ErrorCode::illegal_dimensionality,
                "as_mdspan: rank " + std::to_string(Rank) + " asked for a tensor of shape " +
                    shape_to_string(t.shape()));
  const T* values = t.data<T>().data();
  std::array<std::int64_t, Rank> extents{};
  for (std::size_t d = 0; d < Rank; ++d) extents[d] = t.shape()[d];
  return TensorSpan<T, Rank>(values, extents);
}
/// A temporary tensor would leave the span dangling: keep the tensor in a variable.
template <class T, std::size_t Rank> void as_mdspan(const Tensor&& t) = delete;

/// A new tensor (a copy) with the values and extents of a row-major mdspan.
template <class T, class Extents, class Accessor>
Tensor from_mdspan(std::mdspan<T, Extents, std::layout_right, Accessor> m) {
  Shape shape(Extents::rank());
  for (std::size_t d = 0; d < Extents::rank(); ++d)
    shape[d] = static_cast<std::int64_t>(m.extent(d));
  return Tensor::from(static_cast<const std::remove_cv_t<T>*>(m.data_handle()), std::move(shape));
}

}  // namespace kiln
#endif
