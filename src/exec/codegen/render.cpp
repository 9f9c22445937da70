// The C-style renderer's entry points (render.hpp): which kernels it has a form for, and the
// family that renders each (renderer.hpp lists the files).
#include "exec/codegen/render.hpp"

#include "exec/codegen/renderer.hpp"
#include "exec/reduction_geometry.hpp"

namespace kiln::detail {

bool renders_complex(const Node& n) {
  switch (n.info().kind) {
    case OpKind::unary:
    case OpKind::binary: return !codegen::complex_form(n.op).empty();
    case OpKind::ternary: return !is_complex(n.inputs[0]->dtype);  // the condition
    default: return false;
  }
}

bool can_render(const Kernel& k) {
  for (const Node* n : k.body)
    if (n->info().kind == OpKind::custom) return false;
  // Complex values: fused elementwise kernels of the ops with a complex form, reductions, views,
  // copies, concat, the indexing ops, the scans and the Fourier transform.
  bool complex = touches_complex_types(*k.root);
  for (const Node* n : k.body) complex = complex || touches_complex_types(*n);
  for (const KernelInput& in : k.inputs) complex = complex || is_complex(in.node->dtype);
  if (complex) {
    switch (k.kind) {
      case Kernel::Kind::elementwise:
        for (const Node* n : k.body)
          if (touches_complex_types(*n) && !renders_complex(*n)) return false;
        break;
      case Kernel::Kind::materialize: break;
      // With their fused producers (the reductions of complex values are sums, means and
      // products; the others reduce real values computed from complex ones).
      case Kernel::Kind::reduce:
        for (const Node* n : k.body)
          if (touches_complex_types(*n) && !renders_complex(*n)) return false;
        break;
      case Kernel::Kind::single:  // moves, sums and products in the reference's order
        switch (k.root->info().kind) {
          case OpKind::copy:
          case OpKind::concat:
          case OpKind::indexing:
          case OpKind::scan:
          case OpKind::spectral: break;
          default: return false;
        }
        break;
      default: return false;
    }
  }
  // Narrow types (f16, bf16, bool): elementwise kernels, copies through views, reductions, and
  // the Fourier transform of them (read as the complex type).
  bool narrow = touches_narrow_types(*k.root);
  for (const Node* n : k.body) narrow = narrow || touches_narrow_types(*n);
  for (const KernelInput& in : k.inputs) narrow = narrow || is_narrow(in.node->dtype);
  const bool transform = k.kind == Kernel::Kind::single && k.root->info().kind == OpKind::spectral;
  if (narrow && k.kind != Kernel::Kind::elementwise && k.kind != Kernel::Kind::materialize &&
      k.kind != Kernel::Kind::reduce && !transform)
    return false;
  switch (k.kind) {
    case Kernel::Kind::elementwise:
    case Kernel::Kind::materialize:
    case Kernel::Kind::matmul: return true;
    case Kernel::Kind::single:
      switch (k.root->info().kind) {
        case OpKind::source: return k.root->op == Op::random_uniform && is_float(k.root->dtype);
        case OpKind::copy:
        case OpKind::concat: return true;
        case OpKind::softmax: return is_float(k.root->dtype);
        case OpKind::window2d:
        case OpKind::indexing:
        case OpKind::scan:
        case OpKind::sort: return true;
        case OpKind::spectral: return fourier_fits(*k.root);
        default: return false;
      }
    case Kernel::Kind::reduce: {
      std::int64_t outer, reduced, inner;
      return as_block(*k.root, k.root->inputs[0]->shape, outer, reduced, inner);
    }
    default: return false;
  }
}

RenderedKernel render_kernel(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                             const Dialect& dialect, const DeviceTraits& device) {
  using namespace codegen;
  if (k.kind == Kernel::Kind::reduce) return reduction(k, ir, structure, dialect, device);
  if (k.kind == Kernel::Kind::matmul) return matrix_product(k, structure, dialect, device);
  if (k.kind == Kernel::Kind::single) {
    switch (k.root->info().kind) {
      case OpKind::copy: return copy(k, structure, dialect, device);
      case OpKind::concat: return concatenation(k, structure, dialect, device);
      case OpKind::softmax: return softmax_lines(k, structure, dialect, device);
      case OpKind::window2d: return window2d(k, structure, dialect, device);
      case OpKind::indexing:
        return k.root->op == Op::gather        ? gather(k, structure, dialect, device)
               : k.root->op == Op::scatter_add ? scatter_add(k, structure, dialect, device)
                                               : unwindow(k, structure, dialect, device);
      case OpKind::scan: return scan(k, structure, dialect, device);
      case OpKind::sort: return argsort(k, structure, dialect, device);
      case OpKind::spectral: return fourier(k, structure, dialect, device);
      default: return uniform(k, structure, dialect, device);
    }
  }
  return elementwise(k, ir, structure, dialect, device);
}

}  // namespace kiln::detail
