// Kernels of one work-item per output element that read their inputs through views: fused
// elementwise bodies (with their stored nodes) and materialized views, contiguous copies, and
// concat.
#include "exec/codegen/renderer.hpp"

namespace kiln::detail::codegen {

RenderedKernel elementwise(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                           const Dialect& d, const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  out.entry = "kiln_elementwise";
  const std::int64_t n = k.root->numel();
  std::vector<std::string> outputs{r.output(k.root->dtype, 0)};
  for (std::size_t i = 0; i < k.stored.size(); ++i)
    outputs.push_back(r.output(k.stored[i]->dtype, static_cast<int>(i) + 1));
  out.outputs = static_cast<int>(outputs.size());
  std::string body = per_item(d, "i", n);
  std::string value;
  if (k.kind == Kernel::Kind::materialize) {
    const KernelInput& in = k.inputs[0];
    value = "x";
    r.load(body, value, structure.slot(in.node), in.view, "i");
  } else {
    std::vector<std::string> stores(k.stored.size());
    value = r.code(body, ir, "i", &stores);
    for (std::size_t s = 0; s < stores.size(); ++s)
      body += "  " + r.write("out" + std::to_string(s + 1), "i", stores[s], k.stored[s]->dtype) +
              "\n";
  }
  body += "  " + r.write("out0", "i", value, k.root->dtype) + "\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// contiguous: a copy through its input's view, as a materialize kernel.
RenderedKernel copy(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                    const DeviceTraits& device) {
  Renderer r(structure, d);
  const std::int64_t n = k.root->numel();
  std::vector<std::string> outputs = r.begin("kiln_copy", k.root->dtype);
  std::string body = per_item(d, "i", n);
  const KernelInput& in = k.inputs[0];
  r.load(body, "x", structure.slot(in.node), in.view, "i");
  body += "  out0[i] = " + cast("x", in.node->dtype, k.root->dtype, d) + ";\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// concat along attrs.axes[0]: each output position finds the input its coordinate on the axis
// falls in.
RenderedKernel concatenation(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                             const DeviceTraits& device) {
  Renderer r(structure, d);
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  std::int64_t inner = 1;
  for (std::size_t dim = axis + 1; dim < root.shape.size(); ++dim) inner *= root.shape[dim];
  const std::int64_t along = root.shape[axis];
  const std::int64_t n = root.numel();
  const std::string T(d.type(root.dtype)), L = r.i64();
  std::vector<std::string> outputs = r.begin("kiln_concat", root.dtype);
  std::string body = per_item(d, "i", n);
  body += "  " + L + " outer = i / " + number(along * inner) + ";\n  " + L + " a = (i / " +
          number(inner) + ") % " + number(along) + ";\n  " + L + " rest = i % " + number(inner) +
          ";\n";
  body += "  " + T + " value = " + literal(Scalar(0), root.dtype, d) + ";\n";
  std::int64_t first = 0;
  for (std::size_t part = 0; part < k.inputs.size(); ++part) {
    const KernelInput& in = k.inputs[part];
    const std::int64_t size = root.inputs[part]->shape[axis];
    if (size == 0) continue;
    body +=
        std::string(first == 0 ? "  if" : "  else if") + " (a < " + number(first + size) + ") {\n";
    const std::string name = numbered("x", part);
    r.load(body, name, structure.slot(in.node), in.view,
           "(outer * " + number(size) + " + (a - " + number(first) + ")) * " + number(inner) +
               " + rest");
    body += "  value = " + cast(name, in.node->dtype, root.dtype, d) + ";\n  }\n";
    first += size;
  }
  body += "  out0[i] = value;\n";
  return r.per_item_kernel(n, device, outputs, body);
}

}  // namespace kiln::detail::codegen
