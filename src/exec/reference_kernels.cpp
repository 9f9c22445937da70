#include "exec/reference_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "exec/operand.hpp"
#include "exec/reduction_geometry.hpp"
#include "exec/semantics/elementwise.hpp"
#include "exec/semantics/reduction.hpp"
#include "exec/semantics/softmax.hpp"
#include "exec/semantics/sorting.hpp"

namespace kiln::detail {

namespace {

[[noreturn]] void unsupported(const Node& n) {
  throw Error(ErrorCode::internal_error,
              std::string(n.info().name) + ": no reference kernel for this op and type");
}

// ---- kernels -----------------------------------------------------------------------------------
// Runs body.template operator()<T, O>() with T the compute type and O the output type.
template <class F> void dispatch2(DType compute, DType output, F&& body) {
  dispatch_with_complex(compute, [&]<class T>() {
    dispatch_with_complex(output, [&]<class O>() { body.template operator()<T, O>(); });
  });
}

void copy_kernel(const Node& n, const Operand& in, Buffer& out) {
  dispatch_with_complex(n.dtype, [&]<class O>() {
    O* o = out.as<O>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = in.get<O>(i);
  });
}

void unary_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const bool keeps_input_type =
      n.info().type_rule == TypeRule::to_i32 || n.info().type_rule == TypeRule::to_real ||
      (n.info().type_rule == TypeRule::to_real_float && is_complex(a.dtype));
  dispatch2(keeps_input_type ? a.dtype : n.dtype, n.dtype, [&]<class T, class O>() {
    O* o = out.as<O>();
    for (std::int64_t i = 0; i < out.numel(); ++i)
      o[i] = convert_value<O>(unary_value<T>(n.op, a.get<T>(i)));
  });
}

void binary_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const Operand b = Operand::of(*n.inputs[1]);
  // complex(re, im) computes in its complex result type, every other op in the promoted type.
  const DType compute = n.info().type_rule == TypeRule::to_complex ? n.dtype
                                                                   : promote(a.dtype, b.dtype);
  dispatch2(compute, n.dtype, [&]<class T, class O>() {
    O* o = out.as<O>();
    for (std::int64_t i = 0; i < out.numel(); ++i)
      o[i] = convert_value<O>(binary_value<T>(n.op, a.get<T>(i), b.get<T>(i)));
  });
}

void where_kernel(const Node& n, Buffer& out) {
  const Operand c = Operand::of(*n.inputs[0]);
  const Operand a = Operand::of(*n.inputs[1]);
  const Operand b = Operand::of(*n.inputs[2]);
  dispatch_with_complex(n.dtype, [&]<class O>() {
    O* o = out.as<O>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = c.nonzero(i) ? a.get<O>(i) : b.get<O>(i);
  });
}

// Row-major offsets (in the input) of every position of the dimensions in `dims`.
std::vector<std::int64_t> offsets_over(const Shape& shape, const std::vector<std::int64_t>& dims) {
  // An empty dimension leaves no offsets: stop before the others multiply a table that is
  // never used (a [47014,3,13130,0] tensor would ask for 1.8G entries).
  for (auto d : dims)
    if (shape[d] == 0) return {};
  const auto strides = row_major_strides(shape);
  std::vector<std::int64_t> offsets{0};
  for (auto d : dims) {
    std::vector<std::int64_t> next;
    next.reserve(offsets.size() * static_cast<std::size_t>(shape[d]));
    for (auto base : offsets)
      for (std::int64_t j = 0; j < shape[d]; ++j) next.push_back(base + j * strides[d]);
    offsets = std::move(next);
  }
  return offsets;
}

void reduce_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  std::vector<std::int64_t> reduced(n.attrs.axes.begin(), n.attrs.axes.end()), kept;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(a.shape.size()); ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
  const auto outer = offsets_over(a.shape, kept);
  if (outer.empty()) return;  // an empty result, however many positions the reduced axes hold
  const auto inner = offsets_over(a.shape, reduced);
  const bool is_arg = n.op == Op::argmax || n.op == Op::argmin;
  dispatch2(is_arg ? a.dtype : n.dtype, n.dtype, [&]<class T, class O>() {
    O* o = out.as<O>();
    Reduction<T> reduction{n.op};
    for (std::size_t k = 0; k < outer.size(); ++k) {
      reduction.start();
      for (std::size_t j = 0; j < inner.size(); ++j)
        reduction.add(a.get<T>(outer[k] + inner[j]), static_cast<std::int64_t>(j));
      o[k] = reduction.template finish<O>(static_cast<std::int64_t>(inner.size()));
    }
  });
}

void matmul_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const Operand b = Operand::of(*n.inputs[1]);
  const std::size_t r = n.shape.size();
  const std::int64_t m = n.shape[r - 2], p = n.shape[r - 1], k = a.shape[r - 1];
  const std::int64_t batches = m * p == 0 ? 0 : n.numel() / (m * p);
  dispatch_with_complex(n.dtype, [&]<class T>() {
    using Acc = typename accumulator_of<T>::type;
    T* o = out.as<T>();
    for (std::int64_t bt = 0; bt < batches; ++bt)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < p; ++j) {
          Acc acc{0};
          for (std::int64_t l = 0; l < k; ++l) {
            const Acc x = static_cast<Acc>(a.get<T>((bt * m + i) * k + l));
            const Acc y = static_cast<Acc>(b.get<T>((bt * k + l) * p + j));
            if constexpr (std::is_integral_v<Acc>)
              acc = wrap_add(acc, wrap_mul(x, y));
            else
              acc += x * y;
          }
          o[(bt * m + i) * p + j] = static_cast<T>(acc);
        }
  });
}

void concat_kernel(const Node& n, Buffer& out) {
  const auto axis = static_cast<std::size_t>(n.attrs.axes[0]);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= n.shape[d];
  for (std::size_t d = axis + 1; d < n.shape.size(); ++d) inner *= n.shape[d];
  dispatch_with_complex(n.dtype, [&]<class T>() {
    T* o = out.as<T>();
    for (std::int64_t i = 0; i < outer; ++i)
      for (const auto& in : n.inputs) {
        const Operand part = Operand::of(*in);
        const std::int64_t chunk = part.shape[axis] * inner;
        for (std::int64_t j = 0; j < chunk; ++j) *o++ = part.get<T>(i * chunk + j);
      }
  });
}

// softmax / log_softmax along one axis. The line's maximum is subtracted first (0 when it is
// infinite, so that lines of -inf give NaN-free results where possible).
void softmax_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const auto axis = static_cast<std::size_t>(n.attrs.axes[0]);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= n.shape[d];
  for (std::size_t d = axis + 1; d < n.shape.size(); ++d) inner *= n.shape[d];
  const std::int64_t len = n.shape[axis];
  dispatch(n.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      T* o = out.as<T>();
      for (std::int64_t i = 0; i < outer; ++i)
        for (std::int64_t k = 0; k < inner; ++k) {
          auto at = [&](std::int64_t j) { return (i * len + j) * inner + k; };
          T m = -std::numeric_limits<T>::infinity();
          for (std::int64_t j = 0; j < len; ++j) m = std::max(m, a.get<T>(at(j)));
          m = softmax_shift(m);
          double total = 0;
          for (std::int64_t j = 0; j < len; ++j) total += std::exp(double(a.get<T>(at(j)) - m));
          for (std::int64_t j = 0; j < len; ++j) {
            const T shifted = a.get<T>(at(j)) - m;
            o[at(j)] = n.op == Op::softmax ? static_cast<T>(std::exp(double(shifted)) / total)
                                           : static_cast<T>(shifted - std::log(total));
          }
        }
    } else {
      unsupported(n);
    }
  });
}


// cumsum / cumprod: each line in order (semantics/sorting.hpp).
void scan_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const AxisLines l(n);
  dispatch_with_complex(n.dtype, [&]<class T>() {
    T* o = out.as<T>();
    for (std::int64_t i = 0; i < l.outer; ++i)
      for (std::int64_t k = 0; k < l.inner; ++k) {
        T running{};
        for (std::int64_t j = 0; j < l.len; ++j) {
          const T x = a.get<T>(l.at(i, k, j));
          running = j == 0 ? x : scan_step(n.op, running, x);
          o[l.at(i, k, j)] = running;
        }
      }
  });
}

// argsort: a stable sort of each line (semantics/sorting.hpp), descending when attrs.descending.
void sort_kernel(const Node& n, Buffer& out) {
  const Operand a = Operand::of(*n.inputs[0]);
  const AxisLines l(n);
  dispatch(a.dtype, [&]<class T>() {
    std::vector<T> line(static_cast<std::size_t>(l.len));
    std::vector<std::int64_t> order(static_cast<std::size_t>(l.len));
    std::int64_t* o = out.as<std::int64_t>();
    for (std::int64_t i = 0; i < l.outer; ++i)
      for (std::int64_t k = 0; k < l.inner; ++k) {
        for (std::int64_t j = 0; j < l.len; ++j) line[j] = a.get<T>(l.at(i, k, j));
        argsort_line(line.data(), order.data(), l.len, n.attrs.descending);
        for (std::int64_t j = 0; j < l.len; ++j) o[l.at(i, k, j)] = order[j];
      }
  });
}

void random_kernel(const Node& n, Buffer& out) {
  const std::int64_t count = out.numel();
  if (n.dtype == DType::f32) {
    float* o = out.as<float>();
    for (std::int64_t i = 0; i < count; ++i)
      o[i] = uniform_value_f32(n.attrs.seed, static_cast<std::uint64_t>(i));
  } else if (n.dtype == DType::f64) {
    double* o = out.as<double>();
    for (std::int64_t i = 0; i < count; ++i)
      o[i] = uniform_value(n.attrs.seed, static_cast<std::uint64_t>(i));
  } else {
    unsupported(n);
  }
}

std::uint64_t mix64(std::uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

double uniform_value(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = mix64(mix64(seed + 0x9e3779b97f4a7c15ULL) ^ index);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

float uniform_value_f32(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = mix64(mix64(seed + 0x9e3779b97f4a7c15ULL) ^ index);
  return static_cast<float>(bits >> 40) * 0x1.0p-24f;
}

void run_typed_reference_kernel(const Node& n, Buffer& out) {
  switch (n.info().kind) {
    case OpKind::source:
      if (n.op == Op::random_uniform) return random_kernel(n, out);
      if (n.op == Op::store && n.attrs.store_kind == StoreKind::placeholder)
        throw Error(ErrorCode::invalid_select,
                    "placeholder" + (n.name.empty() ? std::string() : " \"" + n.name + "\"") +
                        " " + dtype_name(n.dtype) + shape_to_string(n.shape) +
                        " has no values: a graph that reads it can be built, printed and "
                        "inspected, not evaluated");
      // A data leaf has no values only when an assign took its memory over; what reads it
      // again is a graph kept for gradients, built before the update.
      if (n.op == Op::store)
        throw Error(ErrorCode::illegal_derive,
                    std::string("store ") + dtype_name(n.dtype) + shape_to_string(n.shape) +
                        ": its values were updated in place (an optimiser step, assign) after "
                        "this graph was built; build the graph again to differentiate it");
      break;
    case OpKind::view: return copy_kernel(n, Operand::of(n), out);
    case OpKind::copy: return copy_kernel(n, Operand::of(*n.inputs[0]), out);
    case OpKind::unary: return unary_kernel(n, out);
    case OpKind::binary: return binary_kernel(n, out);
    case OpKind::ternary: return where_kernel(n, out);
    case OpKind::reduce: return reduce_kernel(n, out);
    case OpKind::matmul: return matmul_kernel(n, out);
    case OpKind::concat: return concat_kernel(n, out);
    case OpKind::indexing:
    case OpKind::custom: return run_reference_indexing_kernel(n, out);
    case OpKind::window2d: return run_reference_window2d_kernel(n, out);
    case OpKind::softmax: return softmax_kernel(n, out);
    case OpKind::scan: return scan_kernel(n, out);
    case OpKind::sort: return sort_kernel(n, out);
    case OpKind::linalg: return run_lapack_kernel(n, out);
    case OpKind::spectral: return run_spectral_kernel(n, out);
  }
  unsupported(n);
}

}  // namespace kiln::detail
