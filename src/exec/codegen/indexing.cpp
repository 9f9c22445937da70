// The ops that index with data or place windows back: gather, scatter_add (a fixed order of
// additions, so the same bits as the reference) and unwindow, one work-item per result position.
#include "exec/codegen/renderer.hpp"

namespace kiln::detail::codegen {

namespace {

// Statements declaring the coordinates `prefix`0.. of the row-major position `position` in
// `shape`.
std::string unravel(const Dialect& d, const std::string& prefix, const std::string& position,
                    const Shape& shape) {
  const std::string L(d.i64);
  std::string body = "  " + L + " " + prefix + "q = " + position + ";\n";
  for (std::size_t dim = shape.size(); dim-- > 0;) {
    const std::string c = prefix + std::to_string(dim);
    if (shape[dim] == 0) {  // no positions: never run, and no division by zero to warn about
      body += "  " + L + " " + c + " = 0;\n";
    } else if (dim == 0) {
      body += "  " + L + " " + c + " = " + prefix + "q;\n";
    } else {
      body += "  " + L + " " + c + " = " + prefix + "q % " + number(shape[dim]) + "; " + prefix +
              "q /= " + number(shape[dim]) + ";\n";
    }
  }
  return body;
}

// The row-major position in `shape` of the coordinates `prefix`0.., coordinate `axis` replaced
// by `along`.
std::string ravel(const std::string& prefix, const Shape& shape, std::size_t axis,
                  const std::string& along) {
  std::string position = "0";
  for (std::size_t dim = 0; dim < shape.size(); ++dim)
    position = "(" + position + ") * " + number(shape[dim]) + " + " +
               (dim == axis ? along : prefix + std::to_string(dim));
  return position;
}

}  // namespace

// gather along attrs.axes[0]: one work-item per result position (the indices' shape). An index
// outside the data's dimension sets the check flag; the backend then reports it.
RenderedKernel gather(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                      const DeviceTraits& device) {
  Renderer r(structure, d);
  const std::string L = r.i64();
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  const Shape& data = root.inputs[0]->shape;
  const std::int64_t n = root.numel();
  out.index_check = true;
  std::vector<std::string> outputs = r.begin("kiln_gather", root.dtype);
  std::string body = per_item(d, "i", n);
  r.load(body, "k_", structure.slot(k.inputs[1].node), k.inputs[1].view, "i");
  body += "  " + L + " k = (" + L + ")k_;\n  if (k < 0 || k >= " + number(data[axis]) +
          ") { bad[0] = 1; out0[i] = " + literal(Scalar(0), root.dtype, d) + "; return; }\n";
  body += unravel(d, "u", "i", root.shape);
  r.load(body, "x", structure.slot(k.inputs[0].node), k.inputs[0].view,
         ravel("u", data, axis, "k"));
  body += "  out0[i] = " + cast("x", k.inputs[0].node->dtype, root.dtype, d) + ";\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// scatter_add along attrs.axes[0]: one work-item per result position, adding the sources whose
// index names it in the order of the indices (the reference's order, so the same bits). The
// work-items at position 0 of the axis check their line's indices.
RenderedKernel scatter_add(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                           const DeviceTraits& device) {
  Renderer r(structure, d);
  const std::string L = r.i64();
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  const Shape& index = root.inputs[1]->shape;
  const Shape& source = root.inputs[2]->shape;
  const std::int64_t n = root.numel();
  const DType t = root.dtype;
  const std::string T(d.type(t)), a(std::to_string(axis));
  out.index_check = true;
  std::vector<std::string> outputs = r.begin("kiln_scatter_add", t);
  std::string body = per_item(d, "i", n);
  r.load(body, "x_", structure.slot(k.inputs[0].node), k.inputs[0].view, "i");
  body += "  " + T + " acc = " + cast("x_", k.inputs[0].node->dtype, t, d) + ";\n";
  body += unravel(d, "u", "i", root.shape);
  // Positions outside the indices' extent (in the other dimensions) receive nothing. No
  // constant operands in the conditions: the device compiler warns about them.
  std::string inside;
  for (std::size_t dim = 0; dim < index.size(); ++dim)
    if (dim != axis && index[dim] < root.shape[dim])
      inside += std::string(inside.empty() ? "" : " && ") + "u" + std::to_string(dim) + " < " +
                number(index[dim]);
  body += "  " + std::string(inside.empty() ? "{" : "if (" + inside + ") {") +
          "\n  for (" + L + " j = 0; j < " + number(index[axis]) + "; ++j) {\n";
  r.load(body, "k_", structure.slot(k.inputs[1].node), k.inputs[1].view,
         ravel("u", index, axis, "j"));
  body += "  " + L + " k = (" + L + ")k_;\n";
  const std::string kept = root.attrs.drop_negative ? " && k >= 0" : "";
  body += "  if (u" + a + " == 0" + kept + " && (k < 0 || k >= " + number(root.shape[axis]) +
          ")) bad[0] = 1;\n";
  body += "  if (k != u" + a + ") continue;\n";
  r.load(body, "y_", structure.slot(k.inputs[2].node), k.inputs[2].view,
         ravel("u", source, axis, "j"));
  body += "  acc = " + add_of(t) + "(acc, " + cast("y_", k.inputs[2].node->dtype, t, d) +
          ");\n  }\n  }\n";
  body += "  out0[i] = acc;\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// unwindow (the adjoint of the windows view): one work-item per result position, adding the
// window elements that read it. For each window position at most one element does, so visiting
// the window positions in row-major order adds the terms in the reference's order.
RenderedKernel unwindow(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                        const DeviceTraits& device) {
  Renderer r(structure, d);
  const std::string L = r.i64();
  const Node& root = *k.root;
  const std::size_t rank = root.shape.size();
  const Shape& windows = root.inputs[0]->shape;  // [counts..., window...]
  const std::int64_t n = root.numel();
  const DType t = root.dtype;
  std::vector<std::string> outputs = r.begin("kiln_unwindow", t);
  std::string body = per_item(d, "i", n);
  body += unravel(d, "p", "i", root.shape);
  body += "  " + std::string(d.type(t)) + " acc = " + literal(Scalar(0), t, d) + ";\n";
  std::string position = "0";
  for (std::size_t dim = 0; dim < rank; ++dim) {
    const std::string s = numbered("s", dim), p = numbered("p", dim);
    const std::string step = number(root.attrs.step[dim]), dil = number(root.attrs.dilation[dim]);
    const std::int64_t count = windows[dim], width = windows[rank + dim];
    body += "  " + L + " lo" + std::to_string(dim) + " = " + p + " - " + number((width - 1)) + " * " +
            dil + ";\n  lo" + std::to_string(dim) + " = lo" + std::to_string(dim) + " > 0 ? (lo" +
            std::to_string(dim) + " + " + step + " - 1) / " + step + " : 0;\n";
    body += "  for (" + L + " " + s + " = lo" + std::to_string(dim) + "; " + s + " <= " + p + " / " +
            step + " && " + s + " < " + number(count) + "; ++" + s + ") {\n";
    body += "  " + L + " t" + std::to_string(dim) + " = " + p + " - " + s + " * " + step + ";\n  if (t" +
            std::to_string(dim) + " % " + dil + " != 0 || t" + std::to_string(dim) + " / " + dil +
            " >= " + number(width) + ") continue;\n";
    position = "(" + position + ") * " + number(count) + " + " + s;
  }
  for (std::size_t dim = 0; dim < rank; ++dim)
    position = "(" + position + ") * " + number(windows[rank + dim]) + " + t" +
               std::to_string(dim) + " / " + number(root.attrs.dilation[dim]);
  r.load(body, "x_", structure.slot(k.inputs[0].node), k.inputs[0].view, position);
  body += "  acc = " + add_of(t) + "(acc, " + cast("x_", k.inputs[0].node->dtype, t, d) + ");\n";
  for (std::size_t dim = 0; dim < rank; ++dim) body += "  }\n";
  body += "  out0[i] = acc;\n";
  return r.per_item_kernel(n, device, outputs, body);
}

}  // namespace kiln::detail::codegen
