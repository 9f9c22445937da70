// The discrete Fourier transform along attrs.axes[0] (the fft row), one work-group per line.
// Where the length has no prime factor above kLargestRadix, the work-group puts the line in
// digit-reversed order and runs one Cooley-Tukey stage (decimation in time) per prime factor in
// place, the inverse scaled by 1/n. A line that fits in local memory (32 KiB) is transformed
// there and then written out; a longer one in the output buffer itself. Powers of two run radix-2
// stages in a loop; other lengths one unrolled stage per factor, 2s first, each odd factor p a
// p-point DFT with the p-th roots as constants. The twiddles exp(-+2 pi i k / n) are computed as the reference's KISS FFT
// computes them (the phase k * (-+2 pi / n) in the parts' precision), so finite results agree with
// it to rounding (KISS's own radix-3, 4 and 5 butterflies may place infinities and NaN otherwise).
// Other lengths take Bluestein's method (`bluestein`): a convolution by three radix-2 transforms
// of a power-of-two length, within rounding of the reference for finite values.
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "exec/codegen/renderer.hpp"
#include "exec/reduction_geometry.hpp"

namespace kiln::detail {

namespace {

// A p-point DFT costs p complex products per value: past this, a length takes Bluestein's method.
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

bool fourier_fits(const Node& n) { return AxisLines(n).len > 0; }

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
  // A constant in the parts' type (rounded to it first for f32).
  std::string constant(double v) const {
    return literal(Scalar(part == DType::f32 ? static_cast<double>(static_cast<float>(v)) : v),
                   part, d);
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

// `rev`, the bit reversal of index expression j < m (a power of two).
std::string bit_reversal(const std::string& L, std::int64_t m, const std::string& j) {
  int bits = 0;
  while ((std::int64_t{1} << bits) < m) ++bits;
  return "    " + L + " rev = 0, q = " + j + ";\n    for (int b = 0; b < " + std::to_string(bits) +
         "; ++b) { rev = (rev << 1) | (q & 1); q >>= 1; }\n";
}

// Bluestein's chirp exp(-+i pi r / n) for an index expression 0 <= r < 2n (m^2 is taken mod 2n,
// so that the phase stays small and keeps its digits).
std::string chirp(const FourierText& f, const std::string& r) {
  const std::string phase =
      "(" + f.T + ")(" + r + ") * " + f.constant((f.step < 0 ? -1.0 : 1.0) * std::numbers::pi /
                                                 static_cast<double>(f.n));
  return f.make("cos(" + phase + ")", "sin(" + phase + ")");
}

// A line whose length n has a prime factor above kLargestRadix (Bluestein's method): with the
// chirp c_m = exp(-+i pi m^2 / n), X_k = c_k sum_j (x_j c_j) conj(c_(k-j)), a circular
// convolution of length m (the power of two >= 2n - 1). a = x c (zero past n) and b = conj(c)
// (wrapped: b_(m-j) = b_j) are transformed forward (radix-2, decimation in time, from
// bit-reversed order), multiplied, and transformed back by decimation in frequency, which leaves
// the convolution in bit-reversed order, where the last step reads it. The two arrays are in
// local memory where both fit, else in the kernel's scratch buffer (2 m values per line).
std::string bluestein(const FourierText& f, const std::string& load, const std::string& value_x,
                      std::int64_t m, const std::string& A, const std::string& B) {
  const std::string N = number(f.n), M = number(m), half = number(m / 2), T = f.T;
  const double pi = std::numbers::pi;
  const std::string zero = f.make("(" + T + ")0", "(" + T + ")0");
  const std::string each = "  for (" + f.L + " j = l; j < " + M + "; j += " + f.G + ") {\n";
  std::string s;
  // a_j = x_j c_j and b_j = conj(c_j), b_(m-j) = b_j, at the bit reversals of j.
  s += each + bit_reversal(f.L, m, "j");
  s += "    " + f.C + " a = " + zero + ", b = " + zero + ";\n";
  s += "    " + f.L + " from = j < " + N + " ? j : " + M + " - j;\n";
  s += "    if (j < " + N + " || j > " + number(m - f.n) + ") {\n";
  s += "      " + f.C + " c = " + chirp(f, "(from * from) % " + number(2 * f.n)) + ";\n";
  s += "      b = " + f.make("c.x", "-c.y") + ";\n";
  s += "      if (j < " + N + ") {\n" + load + "        a = kiln_cmul(" + value_x + ", c);\n      }\n";
  s += "    }\n    " + A + "[rev] = a;\n    " + B + "[rev] = b;\n  }\n  " + f.barrier + ";\n";
  // Forward radix-2 stages on both arrays: twiddle exp(-2 pi i pos / (2 span)).
  const std::string forward = f.constant(-2.0 * pi / static_cast<double>(m));
  const std::string inverse = f.constant(2.0 * pi / static_cast<double>(m));
  const auto twiddle = [&](const std::string& step) {
    const std::string phase = "(" + T + ")(pos * (" + M + " / (2 * span))) * " + step;
    return f.make("cos(" + phase + ")", "sin(" + phase + ")");
  };
  s += "  for (" + f.L + " span = 1; span < " + M + "; span <<= 1) {\n";
  s += "    for (" + f.L + " b = l; b < " + half + "; b += " + f.G + ") {\n";
  s += "      " + f.L + " pos = b & (span - 1), i0 = ((b - pos) << 1) + pos, i1 = i0 + span;\n";
  s += "      " + f.C + " w = " + twiddle(forward) + ";\n";
  for (const std::string& X : {A, B}) {
    s += "      { " + f.C + " u = " + X + "[i0], v = kiln_cmul(" + X + "[i1], w);\n";
    s += "        " + X + "[i0] = " + f.make("u.x + v.x", "u.y + v.y") + ";\n";
    s += "        " + X + "[i1] = " + f.make("u.x - v.x", "u.y - v.y") + "; }\n";
  }
  s += "    }\n    " + f.barrier + ";\n  }\n";
  // The product of the spectra, then the inverse by decimation in frequency.
  s += "  for (" + f.L + " j = l; j < " + M + "; j += " + f.G + ") " + A + "[j] = kiln_cmul(" +
       A + "[j], " + B + "[j]);\n  " + f.barrier + ";\n";
  s += "  for (" + f.L + " span = " + half + "; span >= 1; span >>= 1) {\n";
  s += "    for (" + f.L + " b = l; b < " + half + "; b += " + f.G + ") {\n";
  s += "      " + f.L + " pos = b & (span - 1), i0 = ((b - pos) << 1) + pos, i1 = i0 + span;\n";
  s += "      " + f.C + " u = " + A + "[i0], v = " + A + "[i1];\n";
  s += "      " + A + "[i0] = " + f.make("u.x + v.x", "u.y + v.y") + ";\n";
  s += "      " + A + "[i1] = kiln_cmul(" + f.make("u.x - v.x", "u.y - v.y") + ", " +
       twiddle(inverse) + ");\n";
  s += "    }\n    " + f.barrier + ";\n  }\n";
  return s;
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
  const std::vector<std::int64_t> radices = radices_of(len);
  // Bluestein's transforms run on arrays of `padded` values, a power of two.
  const bool chirped = len > 1 && radices.empty();
  std::int64_t padded = 1;
  while (chirped && padded < 2 * len - 1) padded *= 2;
  const std::int64_t span = chirped ? padded : len;
  int group = 1;
  while (group < 256 && group * 2 <= span / 2 && static_cast<std::size_t>(group) * 2 <= device.max_group)
    group *= 2;
  // `half` is a type in OpenCL C.
  const double step = (root.attrs.inverse ? 2.0 : -2.0) * std::numbers::pi / static_cast<double>(len);
  const bool in_local =
      (chirped ? 2 * padded : len) * static_cast<std::int64_t>(size_of(t)) <= kLocalBytes;
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
  std::vector<std::string> outputs = r.begin("kiln_fft", t);
  const KernelInput& in = k.inputs[0];
  std::string body;
  body += "  " + f.L + " g = (" + f.L + ")" + std::string(d.group_id) + ";\n";
  body += "  int l = (int)" + std::string(d.local_id) + ";\n";
  body += "  " + f.L + " base = (g / " + number(inner) + ") * " + number(len * inner) + " + g % " +
          number(inner) + ";\n";
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>(lines.outer * inner) * out.local_size;
  char head[160];
  std::snprintf(head, sizeof head, std::string(d.fixed_group).c_str(), group);
  if (chirped) {
    const std::string P = number(padded), global = d.global.empty() ? "" : std::string(d.global) + " ";
    if (in_local) {
      body += "  " + std::string(d.local) + " " + f.C + " sa[" + P + "], sb[" + P + "];\n";
    } else {
      body += "  " + global + f.C + "* sa = scratch + g * " + number(2 * padded) + ";\n";
      body += "  " + global + f.C + "* sb = sa + " + P + ";\n";
      out.scratch_bytes = static_cast<std::size_t>(lines.outer * inner * 2 * padded) * size_of(t);
    }
    std::string load;
    r.load(load, "x", structure.slot(in.node), in.view, "base + j * " + number(inner));
    body += bluestein(f, load, cast("x", in.node->dtype, t, d), padded, "sa", "sb");
    // X_j = c_j conv_j, conv_j at the bit reversal of j and `padded` times too large (the
    // division is exact).
    const std::string unpad = literal(Scalar(1.0 / static_cast<double>(padded)), part, d);
    std::string value = "y";
    if (root.attrs.inverse) {
      const std::string scale = literal(Scalar(1.0 / static_cast<double>(len)), part, d);
      value = f.make("y.x * " + scale, "y.y * " + scale);
    }
    body += "  for (" + f.L + " j = l; j < " + number(len) + "; j += " + f.G + ") {\n";
    body += bit_reversal(f.L, padded, "j");
    body += "    " + f.C + " v = sa[rev], c = " + chirp(f, "(j * j) % " + number(2 * len)) + ";\n";
    body += "    " + f.C + " y = kiln_cmul(" + f.make("v.x * " + unpad, "v.y * " + unpad) + ", c);\n";
    body += "    " + r.write("out0", "base + j * " + number(inner), value, t) + "\n  }\n";
    r.finish(head, outputs, body, in_local ? "" : ", " + global + f.C + "* scratch");
    return std::move(out);
  }
  std::string load_index, stages;
  if ((len & (len - 1)) == 0)
    power_of_two_stages(f, load_index, stages);
  else
    mixed_radix_stages(f, radices, load_index, stages);
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
  r.finish(head, outputs, body);
  return std::move(out);
}

}  // namespace codegen
}  // namespace kiln::detail
