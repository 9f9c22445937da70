// The discrete Fourier transform along attrs.axes[0] (the fft row), for lines whose length is a
// power of two and which fit in a work-group's local memory: one work-group per line reads it in
// bit-reversed order into local memory and runs log2(n) radix-2 stages there in place
// (Cooley-Tukey, decimation in time), then writes it out, the inverse scaled by 1/n. The
// twiddles exp(-+2 pi i k / n) are computed as the reference's KISS FFT computes them (the phase
// k * (-+2 pi / n) in the parts' precision), so results agree with it to rounding. Other lengths
// go to the host (render.cpp: fourier_fits).
#include <cmath>
#include <cstdio>
#include <numbers>

#include "exec/codegen/renderer.hpp"
#include "exec/reduction_geometry.hpp"

namespace kiln::detail {

bool fourier_fits(const Node& n) {
  const AxisLines lines(n);
  const std::int64_t len = lines.len;
  // 32 KiB: the local memory OpenCL promises every device (CUDA gives 48 KiB of static shared
  // memory).
  return len > 0 && (len & (len - 1)) == 0 &&
         len * static_cast<std::int64_t>(size_of(n.dtype)) <= 32768;
}

namespace codegen {

RenderedKernel fourier(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const AxisLines lines(root);
  const std::int64_t len = lines.len, inner = lines.inner;
  int bits = 0;
  while ((std::int64_t{1} << bits) < len) ++bits;
  const DType t = root.dtype, part = real_type(t);
  r.note_type(t);
  const std::string C(d.type(t)), T(d.type(part)), L = r.i64(), local(d.local),
      barrier(d.barrier);
  const auto make = [&](const std::string& re, const std::string& im) {
    const std::string args[] = {C, re, im};
    return fill_template(d.make_complex, args);
  };
  int group = 1;
  while (group < 256 && group * 2 <= len / 2 && static_cast<std::size_t>(group) * 2 <= device.max_group)
    group *= 2;
  const std::string G = std::to_string(group);
  std::vector<std::string> outputs = r.begin("kiln_fft", t);
  const KernelInput& in = k.inputs[0];
  std::string body;
  body += "  " + L + " g = (" + L + ")" + std::string(d.group_id) + ";\n";
  body += "  int l = (int)" + std::string(d.local_id) + ";\n";
  body += "  " + L + " base = (g / " + number(inner) + ") * " + number(len * inner) + " + g % " +
          number(inner) + ";\n";
  body += "  " + local + " " + C + " line[" + number(len) + "];\n";
  // Element j goes to the bit reversal of j.
  body += "  for (" + L + " j = l; j < " + number(len) + "; j += " + G + ") {\n";
  r.load(body, "x", structure.slot(in.node), in.view, "base + j * " + number(inner));
  body += "    " + L + " rev = 0, q = j;\n";
  body += "    for (int b = 0; b < " + std::to_string(bits) +
          "; ++b) { rev = (rev << 1) | (q & 1); q >>= 1; }\n";
  body += "    line[rev] = " + cast("x", in.node->dtype, t, d) + ";\n  }\n";
  body += "  " + barrier + ";\n";
  // Stage `span`: butterflies of elements span apart, twiddle k = pos * n / (2 span) (`half` is
  // a type in OpenCL C).
  const double step = (root.attrs.inverse ? 2.0 : -2.0) * std::numbers::pi / static_cast<double>(len);
  const std::string phase_step = literal(Scalar(part == DType::f32 ? static_cast<double>(
                                                                         static_cast<float>(step))
                                                                   : step),
                                         part, d);
  const auto twiddle = [&](const std::string& pos) {
    return "(" + T + ")((" + pos + ") * (" + number(len) + " / (2 * span))) * " + phase_step;
  };
  body += "  for (" + L + " span = 1; span < " + number(len) + "; span <<= 1) {\n";
  // While span <= G, the butterflies of a work-item (b = l + m G) share one twiddle: computed once.
  body += "    " + T + " own = " + twiddle("l & (span - 1)") + ";\n";
  body += "    " + C + " shared = " + make("cos(own)", "sin(own)") + ";\n";
  body += "    for (" + L + " b = l; b < " + number(len / 2) + "; b += " + G + ") {\n";
  body += "      " + L + " pos = b & (span - 1), i0 = ((b - pos) << 1) + pos, i1 = i0 + span;\n";
  body += "      " + C + " w = shared;\n";
  body += "      if (span > " + G + ") {\n        " + T + " phase = " + twiddle("pos") +
          ";\n        w = " + make("cos(phase)", "sin(phase)") + ";\n      }\n";
  // The product as std::complex computes it (infinities recovered), as KISS FFT's.
  body += "      " + C + " u = line[i0], v = kiln_cmul(line[i1], w);\n";
  body += "      line[i0] = " + make("u.x + v.x", "u.y + v.y") + ";\n";
  body += "      line[i1] = " + make("u.x - v.x", "u.y - v.y") + ";\n";
  body += "    }\n    " + barrier + ";\n  }\n";
  std::string value = "line[j]";
  if (root.attrs.inverse) {
    const std::string scale = literal(Scalar(1.0 / static_cast<double>(len)), part, d);
    value = make("line[j].x * " + scale, "line[j].y * " + scale);
  }
  body += "  for (" + L + " j = l; j < " + number(len) + "; j += " + G + ")\n    " +
          r.write("out0", "base + j * " + number(inner), value, t) + "\n";
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>(lines.outer * inner) * out.local_size;
  char head[160];
  std::snprintf(head, sizeof head, std::string(d.fixed_group).c_str(), group);
  r.finish(head, outputs, body);
  return std::move(out);
}

}  // namespace codegen
}  // namespace kiln::detail
