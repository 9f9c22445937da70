// The CPU backend's kernels of complex values (c64, c128). Complex nodes are never fused
// (FusionPolicy::complex_types is off): each elementwise op of complex values is a kernel of its
// own, computed here over operands in row-major memory with the registry's semantics
// (exec/semantics/elementwise.hpp, as the reference computes them), split over kiln's threads.
// So are copies (materialised views, contiguous) and sums, products and means over adjacent axes,
// with the reference's accumulator (semantics/reduction.hpp: complex<double>), one output per item
// of the split. Matrix products go to BLAS (gemm.cpp); the other complex kernels are left to the
// reference.
#include <complex>
#include <memory>
#include <vector>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/operand.hpp"
#include "exec/reduction_geometry.hpp"
#include "exec/semantics/elementwise.hpp"
#include "exec/semantics/reduction.hpp"

namespace kiln::detail::cpu {

namespace {

// The values of `in` as T in row-major order: its own memory where it holds exactly that, else a
// conversion (through its view, if any) into `storage`.
template <class T>
const T* values_as(const KernelInput& in, const Shape& shape, std::int64_t count,
                   std::vector<T>& storage) {
  const Buffer& buffer = *in.node->result;
  if (in.view == nullptr && in.node->dtype == dtype_of_v<T> && buffer.numel() == count)
    return buffer.as<T>();
  const Operand values{&buffer, in.view, in.node->dtype, shape};
  storage.resize(static_cast<std::size_t>(count));
  parallel_for(count, kParallelValues, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) storage[i] = values.get<T>(i);
  });
  return storage.data();
}

// The type the reference computes the node's op in (reference_kernels.cpp).
DType compute_type(const Node& n) {
  const TypeRule rule = n.info().type_rule;
  switch (n.info().kind) {
    case OpKind::unary: {
      const DType in = n.inputs[0]->dtype;
      const bool keeps_input = rule == TypeRule::to_i32 || rule == TypeRule::to_real ||
                               (rule == TypeRule::to_real_float && is_complex(in));
      return keeps_input ? in : n.dtype;
    }
    case OpKind::binary:
      return rule == TypeRule::to_complex ? n.dtype
                                          : promote(n.inputs[0]->dtype, n.inputs[1]->dtype);
    default: return n.dtype;
  }
}

template <class T, class O>
void compute(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  const std::int64_t count = out.numel();
  O* o = out.as<O>();
  std::vector<T> a_storage, b_storage;
  const T* a = values_as<T>(k.inputs[0], n.shape, count, a_storage);
  if (n.info().kind == OpKind::unary) {
    parallel_for(count, kParallelValues, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i)
        o[i] = convert_value<O>(unary_value<T>(n.op, a[i]));
    });
    return;
  }
  const T* b = values_as<T>(k.inputs[1], n.shape, count, b_storage);
  parallel_for(count, kParallelValues, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      o[i] = convert_value<O>(binary_value<T>(n.op, a[i], b[i]));
  });
}

template <class T>
void reduce_block(const Kernel& k, Buffer& out, std::int64_t outer, std::int64_t reduced,
                  std::int64_t inner) {
  const Node& n = *k.root;
  std::vector<T> storage;
  const T* a = values_as<T>(k.inputs[0], n.inputs[0]->shape, outer * reduced * inner, storage);
  T* o = out.as<T>();
  parallel_for(outer * inner, grain_for(reduced), [&](std::int64_t begin, std::int64_t end) {
    Reduction<T> reduction{n.op};
    for (std::int64_t index = begin; index < end; ++index) {
      const std::int64_t i = index / inner, position = index % inner;
      reduction.start();
      for (std::int64_t j = 0; j < reduced; ++j)
        reduction.add(a[(i * reduced + j) * inner + position], j);
      o[index] = reduction.template finish<T>(reduced);
    }
  });
}

}  // namespace

bool run_complex_reduce(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  if (!k.body.empty() || !is_complex(n.dtype) || n.inputs[0]->dtype != n.dtype) return false;
  if (n.op != Op::sum && n.op != Op::prod && n.op != Op::mean) return false;
  std::int64_t outer = 1, reduced = 1, inner = 1;
  if (!as_block(n, n.inputs[0]->shape, outer, reduced, inner)) return false;
  dispatch_with_complex(n.dtype, [&]<class T>() {
    if constexpr (is_complex_v<T>) reduce_block<T>(k, out, outer, reduced, inner);
  });
  return true;
}

bool run_complex_copy(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  if (!is_complex(n.dtype) || k.inputs.size() != 1) return false;
  const KernelInput& in = k.inputs[0];
  const Operand values{in.node->result.get(), in.view, in.node->dtype, n.shape};
  dispatch_with_complex(n.dtype, [&]<class T>() {
    if constexpr (is_complex_v<T>) {
      T* o = out.as<T>();
      parallel_for(out.numel(), kParallelValues, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) o[i] = values.get<T>(i);
      });
    }
  });
  return true;
}

bool run_complex_elementwise(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  const OpKind kind = n.info().kind;
  if (kind != OpKind::unary && kind != OpKind::binary) return false;
  // Results stored narrower than computed (bool, f16, bf16) are the reference's.
  if (is_narrow(n.dtype)) return false;
  const DType type = compute_type(n);
  if (!is_complex(type)) return false;
  dispatch_with_complex(type, [&]<class T>() {
    if constexpr (is_complex_v<T>)
      dispatch_with_complex(n.dtype, [&]<class O>() { compute<T, O>(k, out); });
  });
  return true;
}

}  // namespace kiln::detail::cpu
