// The CPU backend's kernels of complex values (c64, c128). Complex nodes are never fused
// (FusionPolicy::complex_types is off): each elementwise op of complex values is a kernel of its
// own, computed here over operands in row-major memory with the registry's semantics
// (exec/semantics/elementwise.hpp, as the reference computes them), split over kiln's threads.
// Matrix products go to BLAS (gemm.cpp); the other complex kernels are left to the reference.
#include <complex>
#include <memory>
#include <vector>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/operand.hpp"
#include "exec/semantics/elementwise.hpp"

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

template <class T, class O> void compute(const Kernel& k, Buffer& out) {
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

}  // namespace

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
