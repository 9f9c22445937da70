// Operand: how a kernel reads one input, through the input's view map when it is a view.
#pragma once

#include "graph/node.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

struct Operand {
  const Buffer* buffer = nullptr;
  const ViewMap* view = nullptr;  // null: the buffer is read in row-major order
  DType dtype = DType::f32;
  Shape shape;

  // An input of a node whose dependencies are computed: a computed node, or a view of one.
  static Operand of(const Node& input) {
    if (input.result) return Operand{input.result.get(), nullptr, input.dtype, input.shape};
    if (input.is_view() && input.view_base && input.view_base->result)
      return Operand{input.view_base->result.get(), &input.view, input.dtype, input.shape};
    throw Error(ErrorCode::internal_error,
                std::string(input.info().name) + ": input read before it was computed");
  }

  // The element at row-major `position` converted to T.
  template <class T> T get(std::int64_t position) const {
    if (view != nullptr) {
      std::int64_t base = 0;
      const Scalar* fill = nullptr;
      if (!view->locate(position, &base, &fill)) return fill->as<T>();
      return buffer->get<T>(base);
    }
    return buffer->get<T>(position);
  }
  bool nonzero(std::int64_t position) const {
    if (is_complex(dtype)) return get<std::complex<double>>(position) != 0.0;
    return is_float(dtype) ? get<double>(position) != 0.0 : get<std::int64_t>(position) != 0;
  }
};

// Calls f.template operator()<T>() with T the C++ type of `t`. The narrow types have no C++
// arithmetic type of their own: a kernel computes them in f32 (16-bit floats) or i32 (bool)
// (arithmetic_type) and converts where it loads and stores, or runs widened
// (run_reference_kernel); reaching here with one is kiln's bug.
template <class F> decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::i32: return f.template operator()<std::int32_t>();
    case DType::i64: return f.template operator()<std::int64_t>();
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    case DType::f16:
    case DType::bf16:
    case DType::boolean:
    case DType::u8:
    case DType::i8:
    case DType::i16:
    case DType::c64:
    case DType::c128: break;
  }
  throw Error(ErrorCode::internal_error,
              std::string("a typed loop of ") + dtype_name(t) +
                  " (narrow types are computed in their arithmetic type, complex types have "
                  "kernels of their own)");
}

// dispatch() with the narrow integers as well (std::uint8_t, std::int8_t, std::int16_t), for
// loops that only convert values between types.
template <class F> decltype(auto) dispatch_stored(DType t, F&& f) {
  if (t == DType::u8) return f.template operator()<std::uint8_t>();
  if (t == DType::i8) return f.template operator()<std::int8_t>();
  if (t == DType::i16) return f.template operator()<std::int16_t>();
  return dispatch(t, std::forward<F>(f));
}

// dispatch() with the complex types as well, for the kernels that also compute complex values
// (the reference executor's elementwise, reduction, matmul, scan and data-movement kernels).
template <class F> decltype(auto) dispatch_with_complex(DType t, F&& f) {
  if (t == DType::c64) return f.template operator()<std::complex<float>>();
  if (t == DType::c128) return f.template operator()<std::complex<double>>();
  return dispatch(t, std::forward<F>(f));
}

}  // namespace kiln::detail
