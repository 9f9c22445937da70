// The ops along the lines of one axis whose elements depend on each other: cumsum and cumprod
// (one work-item per line, in order), argsort (one work-item per element, counting).
#include "exec/codegen/renderer.hpp"
#include "exec/reduction_geometry.hpp"

namespace kiln::detail::codegen {

// cumsum and cumprod along attrs.axes[0]: one work-item per line, in order (semantics/sorting.hpp:
// floats in their own type, integers wrapping), so the values are the reference's.
RenderedKernel scan(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                    const DeviceTraits& device) {
  Renderer r(structure, d);
  const std::string L = r.i64();
  const Node& root = *k.root;
  const AxisLines l(root);
  const DType t = root.dtype;
  std::vector<std::string> outputs = r.begin("kiln_scan", t);
  std::string body = per_item(d, "g", l.outer * l.inner);
  body += "  " + L + " base = (g / " + number(l.inner) + ") * " + number(l.len * l.inner) + " + g % " +
          number(l.inner) + ";\n";
  body += "  " + std::string(d.type(t)) + " running = " + literal(Scalar(0), t, d) + ";\n";
  body += "  for (" + L + " j = 0; j < " + number(l.len) + "; ++j) {\n";
  body += "  " + L + " at = base + j * " + number(l.inner) + ";\n";
  r.load(body, "x_", structure.slot(k.inputs[0].node), k.inputs[0].view, "at");
  const std::string x = cast("x_", k.inputs[0].node->dtype, t, d);
  body += "  running = j == 0 ? " + x + " : " + (root.op == Op::cumsum ? add_of(t) : mul_of(t)) +
          "(running, " + x + ");\n  out0[at] = running;\n  }\n";
  return r.per_item_kernel(l.outer * l.inner, device, outputs, body);
}

// argsort along attrs.axes[0]: one work-item per element, which counts the elements of its line
// that a stable sort puts before it (semantics/sorting.hpp's order) and writes its own position
// there.
RenderedKernel argsort(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device) {
  Renderer r(structure, d);
  const std::string L = r.i64();
  const Node& root = *k.root;
  const AxisLines l(root);
  const std::int64_t n = root.numel();
  const std::string desc = root.attrs.descending ? "1" : "0";
  const KernelInput& in = k.inputs[0];
  const int slot = structure.slot(in.node);
  std::vector<std::string> outputs = r.begin("kiln_argsort", root.dtype);
  std::string body = per_item(d, "e", n);
  body += "  " + L + " j = (e / " + number(l.inner) + ") % " + number(l.len) + ";\n";
  body += "  " + L + " base = e - j * " + number(l.inner) + ";\n";
  r.load(body, "mine", slot, in.view, "e");
  body += "  " + L + " rank = 0;\n  for (" + L + " m = 0; m < " + number(l.len) + "; ++m) {\n";
  body += "  if (m == j) continue;\n";
  r.load(body, "other", slot, in.view, "base + m * " + number(l.inner));
  body += "  if (kiln_before(other, mine, " + desc + ") || (m < j && !kiln_before(mine, other, " +
          desc + "))) ++rank;\n  }\n";
  body += "  out0[base + rank * " + number(l.inner) +
          "] = " + cast("j", DType::i64, root.dtype, d) + ";\n";
  return r.per_item_kernel(n, device, outputs, body);
}

}  // namespace kiln::detail::codegen
