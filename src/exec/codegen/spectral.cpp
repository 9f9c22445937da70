// The discrete Fourier transform along attrs.axes[0] (the fft row), for lines whose length has
// no prime factor above kLargestRadix: one work-group per line puts it in digit-reversed order and
// runs one Cooley-Tukey stage (decimation in time) per prime factor in place, the inverse scaled
// by 1/n. A line that fits in local memory (32 KiB) is transformed there and then written out; a
// longer one in the output buffer itself. Powers of two run radix-2 stages in a loop; other
// lengths one unrolled stage per factor, 2s first, each odd factor p a p-point DFT with the p-th
// roots as constants. The twiddles exp(-+2 pi i k / n) are computed as the reference's KISS FFT
// computes them (the phase k * (-+2 pi / n) in the parts' precision), so finite results agree with
// it to rounding (KISS's own radix-3, 4 and 5 butterflies may place infinities and NaN otherwise).
// Other lengths go to the host (render.cpp: fourier_fits).
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "exec/codegen/renderer.hpp"
#include "exec/reduction_geometry.hpp"

namespace kiln::detail {

namespace {

// A p-point DFT costs p complex products per value: past this, a length is the host's.
constexpr std::int64_t kLargestRadix = 64;

// The prime factors of n, smallest first; empty where one exceeds kLargestRadix.
std::vector<std::int64_t> radices_of(std::int64_t n) {
  std::vector<std::int64_t> radices;
  for (std::int64_t p = 2; p <= kLargestRadix && n > 1; ++p)
    while (n % p == 0) {
      radices.push_back(p);
      n /= p;
    }
  if (n > 1) radices.clear();
  return radices;
}

}  // namespace

bool fourier_fits(const Node& n) {
  const std::int64_t len = AxisLines(n).len;
  return len > 0 && (len == 1 || !radices_of(len).empty());
}

namespace codegen {
namespace {

// 32 KiB: the local memory OpenCL promises every device (CUDA gives 48 KiB of static shared
// memory).
constexpr std::int64_t kLocalBytes = 32768;

// What the stages' text needs: the line of n values (in local memory `line`, or at base + j *
// inner in the output), G work-items.
struct FourierText {
  const Dialect& d;
  std::string C, T, L, barrier, G, phase_step;
  std::int64_t n;
  DType part;
  double step;  // -+2 pi / n
  bool in_local;
  std::int64_t inner;

  // Element `j` (an index expression) of the line.
  std::string at(const std::string& j) const {
    return in_local ? "line[" + j + "]" : "out0[base + (" + j + ") * " + number(inner) + "]";
  }

  std::string make(const std::string& re, const std::string& im) const {
    const std::string args[] = {C, re, im};
    return fill_template(d.make_complex, args);
  }
  // The twiddle exp(-+2 pi i k / n) of an index expression k < n, as KISS FFT computes it.
  std::string twiddle(const std::string& k) const {
    const std::string phase = "(" + T + ")(" + k + ") * " + phase_step;
    return make("cos(" + phase + ")", "sin(" + phase + ")");
  }
};

// Lengths that are powers of two: element j starts at the bit reversal of j, then radix-2 stages
// in a loop over `span` (butterflies of elements span apart, twiddle index pos * n / (2 span)).
void power_of_two_stages(const FourierText& f, std::string& load_index, std::string& stages) {
  int bits = 0;
  while ((std::int64_t{1} << bits) < f.n) ++bits;
  load_index = "    " + f.L + " rev = 0, q = j;\n" + "    for (int b = 0; b < " +
               std::to_string(bits) + "; ++b) { rev = (rev << 1) | (q & 1); q >>= 1; }\n";
  const std::string N = number(f.n), index = "(pos) * (" + N + " / (2 * span))";
  stages += "  for (" + f.L + " span = 1; span < " + N + "; span <<= 1) {\n";
  // While span <= G, the butterflies of a work-item (b = l + m G) share one twiddle: computed once.
  stages += "    " + f.T + " own = (" + f.T + ")((l & (span - 1)) * (" + N + " / (2 * span))) * " +
            f.phase_step + ";\n";
  stages += "    " + f.C + " shared = " + f.make("cos(own)", "sin(own)") + ";\n";
  stages += "    for (" + f.L + " b = l; b < " + number(f.n / 2) + "; b += " + f.G + ") {\n";
  stages += "      " + f.L + " pos = b & (span - 1), i0 = ((b - pos) << 1) + pos, i1 = i0 + span;\n";
  stages += "      " + f.C + " w = shared;\n";
  stages += "      if (span > " + f.G + ") w = " + f.twiddle(index) + ";\n";
  // The product as std::complex computes it (infinities recovered), as KISS FFT's.
  stages += "      " + f.C + " u = " + f.at("i0") + ", v = kiln_cmul(" + f.at("i1") + ", w);\n";
  stages += "      " + f.at("i0") + " = " + f.make("u.x + v.x", "u.y + v.y") + ";\n";
  stages += "      " + f.at("i1") + " = " + f.make("u.x - v.x", "u.y - v.y") + ";\n";
  stages += "    }\n    " + f.barrier + ";\n  }\n";
}

// Other lengths, n = p_0 p_1 ... p_{m-1}: stage s combines p_s transforms of length `span` (the
// product of the earlier factors) into one of length p_s span, so element j starts where the
// digits of j in the factors' mixed radix, the last factor's the lowest, put it.
void mixed_radix_stages(const FourierText& f, const std::vector<std::int64_t>& radices,
                        std::string& load_index, std::string& stages) {
  const Dialect& d = f.d;
  load_index = "    " + f.L + " rev = 0, q = j;\n";
  std::int64_t size = f.n;
  for (auto p = radices.rbegin(); p != radices.rend(); ++p) {
    size /= *p;
    load_index += "    rev += (q % " + number(*p) + ") * " + number(size) + "; q /= " +
                  number(*p) + ";\n";
  }
  std::int64_t span = 1;
  for (const std::int64_t p : radices) {
    const std::string P = number(p), S = number(span);
    // Element q of a butterfly is multiplied by the twiddle of index q pos n / (p span); pos is 0
    // in the first stage.
    const auto twiddled = [&](const std::string& q) {
      const std::string value = f.at("i0 + " + q + " * " + S);
      if (span == 1) return value;
      return "kiln_cmul(" + value + ", " +
             f.twiddle(q + " * pos * " + number(f.n / (p * span))) + ")";
    };
    stages += "  for (" + f.L + " b = l; b < " + number(f.n / p) + "; b += " + f.G + ") {\n";
    stages += "    " + f.L + " pos = b % " + S + ", i0 = (b - pos) * " + P + " + pos;\n";
    if (p == 2) {
      stages += "    " + f.C + " u = " + f.at("i0") + ", v = " + twiddled("1") + ";\n";
      stages += "    " + f.at("i0") + " = " + f.make("u.x + v.x", "u.y + v.y") + ";\n";
      stages += "    " + f.at("i0 + " + S) + " = " + f.make("u.x - v.x", "u.y - v.y") + ";\n";
    } else {
      // A p-point DFT; w[k] = exp(-+2 pi i k / p), the twiddle of index k n / p.
      std::string re, im;
      for (std::int64_t k = 0; k < p; ++k) {
        const double index = static_cast<double>(k * (f.n / p));
        const double phase = f.part == DType::f32
                                 ? static_cast<double>(static_cast<float>(index) *
                                                       static_cast<float>(f.step))
                                 : index * f.step;
        if (k > 0) {
          re += ", ";
          im += ", ";
        }
        re += literal(Scalar(std::cos(phase)), f.part, d);
        im += literal(Scalar(std::sin(phase)), f.part, d);
      }
      stages += "    const " + f.T + " wr[" + P + "] = {" + re + "}, wi[" + P + "] = {" + im +
                "};\n";
      stages += "    " + f.C + " z[" + P + "];\n";
      stages += "    z[0] = " + f.at("i0") + ";\n";
      stages += "    for (int q = 1; q < " + P + "; ++q) z[q] = " + twiddled("q") + ";\n";
      stages += "    for (int r = 0; r < " + P + "; ++r) {\n";
      stages += "      " + f.T + " re = z[0].x, im = z[0].y;\n";
      stages += "      for (int q = 1; q < " + P + "; ++q) {\n";
      stages += "        int k = (q * r) % " + P + ";\n";
      stages += "        re += z[q].x * wr[k] - z[q].y * wi[k];\n";
      stages += "        im += z[q].x * wi[k] + z[q].y * wr[k];\n";
      stages += "      }\n";
      stages += "      " + f.at("i0 + r * " + S) + " = " + f.make("re", "im") + ";\n";
      stages += "    }\n";
    }
    stages += "  }\n  " + f.barrier + ";\n";
    span *= p;
  }
}

}  // namespace

RenderedKernel fourier(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const AxisLines lines(root);
  const std::int64_t len = lines.len, inner = lines.inner;
  const DType t = root.dtype, part = real_type(t);
  r.note_type(t);
  int group = 1;
  while (group < 256 && group * 2 <= len / 2 && static_cast<std::size_t>(group) * 2 <= device.max_group)
    group *= 2;
  // `half` is a type in OpenCL C.
  const double step = (root.attrs.inverse ? 2.0 : -2.0) * std::numbers::pi / static_cast<double>(len);
  const bool in_local = len * static_cast<std::int64_t>(size_of(t)) <= kLocalBytes;
  FourierText f{d,
                std::string(d.type(t)),
                std::string(d.type(part)),
                r.i64(),
                std::string(in_local ? d.barrier : d.global_barrier),
                std::to_string(group),
                literal(Scalar(part == DType::f32 ? static_cast<double>(static_cast<float>(step))
                                                 : step),
                        part, d),
                len,
                part,
                step,
                in_local,
                inner};
  std::string load_index, stages;
  const std::vector<std::int64_t> radices = radices_of(len);
  if ((len & (len - 1)) == 0)
    power_of_two_stages(f, load_index, stages);
  else
    mixed_radix_stages(f, radices, load_index, stages);

  std::vector<std::string> outputs = r.begin("kiln_fft", t);
  const KernelInput& in = k.inputs[0];
  std::string body;
  body += "  " + f.L + " g = (" + f.L + ")" + std::string(d.group_id) + ";\n";
  body += "  int l = (int)" + std::string(d.local_id) + ";\n";
  body += "  " + f.L + " base = (g / " + number(inner) + ") * " + number(len * inner) + " + g % " +
          number(inner) + ";\n";
  if (in_local) body += "  " + std::string(d.local) + " " + f.C + " line[" + number(len) + "];\n";
  const std::string each = "  for (" + f.L + " j = l; j < " + number(len) + "; j += " + f.G + ")";
  body += each + " {\n";
  r.load(body, "x", structure.slot(in.node), in.view, "base + j * " + number(inner));
  body += load_index;
  body += "    " + f.at("rev") + " = " + cast("x", in.node->dtype, t, d) + ";\n  }\n";
  body += "  " + f.barrier + ";\n";
  body += stages;
  std::string value = f.at("j");
  if (root.attrs.inverse) {
    const std::string scale = literal(Scalar(1.0 / static_cast<double>(len)), part, d);
    value = f.make(value + ".x * " + scale, value + ".y * " + scale);
  }
  // A line in the output is written already, and scaled in place for the inverse.
  if (in_local || root.attrs.inverse)
    body += each + "\n    " + r.write("out0", "base + j * " + number(inner), value, t) + "\n";
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>(lines.outer * inner) * out.local_size;
  char head[160];
  std::snprintf(head, sizeof head, std::string(d.fixed_group).c_str(), group);
  r.finish(head, outputs, body);
  return std::move(out);
}

}  // namespace codegen
}  // namespace kiln::detail
