// Kernels of one work-item per output element (or a few, for elementwise kernels of many) that
// read their inputs through views: fused elementwise bodies (with their stored nodes) and
// materialized views, contiguous copies, and concat.
#include <algorithm>

#include "exec/codegen/renderer.hpp"

namespace kiln::detail::codegen {

// Where there are many positions on a GPU, a work-item computes kUnrolled of them, a work-group
// apart (adjacent work-items still read adjacent values), and writes its results only after
// computing them all: the device may then issue every load of the work-item at once, without
// proving that a store cannot change what a later load reads (an output may be an input's
// memory). More loads in flight per work-item is what a memory-bound kernel needs to reach the
// device's bandwidth.
constexpr int kUnrolled = 4;
constexpr std::int64_t kUnrolledFrom = 16384;  // positions; fewer run one per work-item

RenderedKernel elementwise(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                           const Dialect& d, const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  out.entry = "kiln_elementwise";
  const std::int64_t n = k.root->numel();
  std::vector<Node*> written{k.root};
  written.insert(written.end(), k.stored.begin(), k.stored.end());
  std::vector<std::string> outputs;
  for (std::size_t o = 0; o < written.size(); ++o)
    outputs.push_back(r.output(written[o]->dtype, static_cast<int>(o)));
  out.outputs = static_cast<int>(outputs.size());
  // The values of the outputs at position i: the root's, then the stored nodes'.
  std::string compute;
  std::vector<std::string> values(written.size());
  if (k.kind == Kernel::Kind::materialize) {
    const KernelInput& in = k.inputs[0];
    values[0] = "x";
    r.load(compute, values[0], structure.slot(in.node), in.view, "i");
  } else {
    std::vector<std::string> stores(k.stored.size());
    values[0] = r.code(compute, ir, "i", &stores);
    std::copy(stores.begin(), stores.end(), values.begin() + 1);
  }
  // The statements writing the outputs, the stored nodes' first, `value(o)` for output o.
  const auto writes = [&](const auto& value) {
    std::string text;
    for (std::size_t o = 1; o <= written.size(); ++o) {
      const std::size_t at = o % written.size();
      text += "  ";
      text += r.write(numbered("out", static_cast<std::int64_t>(at)), "i", value(at),
                      written[at]->dtype);
      text += "\n";
    }
    return text;
  };
  const int unrolled = device.gpu && n >= kUnrolledFrom ? kUnrolled : 1;
  if (unrolled == 1) {
    std::string body = per_item(d, "i", n) + compute;
    body += writes([&](std::size_t o) { return values[o]; });
    one_item_each(out, n, device);
    r.finish(std::string(d.kernel), outputs, body);
    return std::move(out);
  }
  one_item_each(out, n, device, unrolled);
  const std::string L = r.i64(), U = std::to_string(unrolled), G = number(
      static_cast<std::int64_t>(out.local_size));
  std::string body = "  " + L + " first = (" + L + ")" + std::string(d.group_id) + " * " +
                     number(static_cast<std::int64_t>(out.local_size) * unrolled) + " + (" + L +
                     ")" + std::string(d.local_id) + ";\n";
  for (std::size_t o = 0; o < written.size(); ++o)
    body += "  " + std::string(d.type(written[o]->dtype)) + " " +
            numbered("result", static_cast<std::int64_t>(o)) + "[" + U + "];\n";
  const std::string each = "#pragma unroll\n  for (int u = 0; u < " + U + "; ++u) {\n  " + L +
                           " i = first + u * " + G + ";\n  if (i < " + number(n) + ") {\n";
  body += each + compute;
  for (std::size_t o = 0; o < written.size(); ++o)
    body += "  " + numbered("result", static_cast<std::int64_t>(o)) + "[u] = " + values[o] + ";\n";
  body += "  }\n  }\n" + each;
  body += writes([](std::size_t o) {
    return numbered("result", static_cast<std::int64_t>(o)) + "[u]";
  });
  body += "  }\n  }\n";
  r.finish(std::string(d.kernel), outputs, body);
  return std::move(out);
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
