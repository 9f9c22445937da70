// random_uniform: the reference's counter-based generator (splitmix64's finaliser of the seed
// and the position), so that the device draws the CPU's values for the same seed. The seed is an
// argument: it is a value, not part of the structure a prepared kernel is cached by.
#include "exec/codegen/renderer.hpp"

namespace kiln::detail::codegen {

RenderedKernel uniform(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const std::int64_t n = root.numel();
  out.seed_of = structure.slot(&root);
  std::vector<std::string> outputs = r.begin("kiln_uniform", root.dtype);
  const std::string u64(d.u64), U(d.u64_suffix);
  std::string body = per_item(d, "i", n);
  const auto mix = [&](const std::string& z) { return "kiln_mix64(" + z + ")"; };
  body += "  " + u64 + " bits = " + mix(mix("seed + 0x9e3779b97f4a7c15" + U) + " ^ (" + u64 + ")i") +
          ";\n";
  if (root.dtype == DType::f32)
    body += "  out0[i] = (float)(bits >> 40) * 0x1.0p-24f;\n";
  else
    body += "  out0[i] = (double)(bits >> 11) * 0x1.0p-53;\n";
  const std::string helper = std::string(d.function) + " " + u64 + " kiln_mix64(" + u64 +
                             " z) {\n  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9" + U +
                             ";\n  z = (z ^ (z >> 27)) * 0x94d049bb133111eb" + U +
                             ";\n  return z ^ (z >> 31);\n}\n";
  return r.per_item_kernel(n, device, outputs, body, helper);
}

}  // namespace kiln::detail::codegen
