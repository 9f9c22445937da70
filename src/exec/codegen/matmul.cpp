// Matrix products (batched): one work-item per output element, summing over k in order with the
// reference's accumulator (double for floats where the device has it, wrapping integers), so the
// values are the reference's.
#include "exec/codegen/renderer.hpp"

namespace kiln::detail::codegen {

RenderedKernel matrix_product(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                              const DeviceTraits& device) {
  Renderer r(structure, d);
  const Node& root = *k.root;
  const std::size_t rank = root.shape.size();
  const std::int64_t m = root.shape[rank - 2], p = root.shape[rank - 1];
  const std::int64_t inner = root.inputs[0]->shape[rank - 1];
  const std::int64_t n = root.numel();
  const DType t = root.dtype;
  const DType acc = is_float(t) && device.fp64 ? DType::f64 : t;
  r.note_type(acc);
  const std::string A(d.type(acc)), L = r.i64();
  std::vector<std::string> outputs = r.begin("kiln_matmul", t);
  std::string body = per_item(d, "i", n);
  body += "  " + L + " j = i % " + number(p) + ";\n  " + L + " row = (i / " + number(p) + ") % " +
          number(m) + ";\n  " + L + " batch = i / " + number(m * p) + ";\n";
  body += "  " + A + " acc = 0;\n";
  body += "  for (" + L + " l = 0; l < " + number(inner) + "; ++l) {\n";
  const KernelInput& a = k.inputs[0];
  const KernelInput& b = k.inputs[1];
  r.load(body, "x", structure.slot(a.node), a.view,
         "(batch * " + number(m) + " + row) * " + number(inner) + " + l");
  r.load(body, "y", structure.slot(b.node), b.view,
         "(batch * " + number(inner) + " + l) * " + number(p) + " + j");
  const std::string x = cast("x", a.node->dtype, acc, d), y = cast("y", b.node->dtype, acc, d);
  if (is_float(acc) && !d.nan_rule)
    body += "  acc = acc + " + x + " * " + y + ";\n";
  else
    body += "  acc = kiln_add(acc, kiln_mul(" + x + ", " + y + "));\n";
  body += "  }\n  out0[i] = " + cast("acc", acc, t, d) + ";\n";
  return r.per_item_kernel(n, device, outputs, body);
}

}  // namespace kiln::detail::codegen
