// The discrete Fourier transform along attrs.axes[0] (the fft row), one work-group per line.
// Where the length has no prime factor above kLargestRadix, the work-group puts the line in
// digit-reversed order and runs one Cooley-Tukey stage (decimation in time) per prime factor in
// place, the inverse scaled by 1/n. A line that fits in local memory (DeviceTraits::local_bytes)
// is transformed there and then written out; a longer one in the output buffer itself. Powers of
// two run radix-2
// stages in a loop; other lengths one unrolled stage per factor, 2s first, each odd factor p a
// p-point DFT. The twiddles exp(-+2 pi i k / n) are the reference's KISS FFT's, computed on the
// host as KISS computes them and read from the kernel's table (the p-point DFTs' as constants),
// so finite results agree with it to rounding (KISS's own radix-3, 4 and 5 butterflies may place
// infinities and NaN otherwise). Other lengths take Bluestein's method (`bluestein`): a
// convolution by radix-2 transforms of a power-of-two length, within rounding of the reference
// for finite values.
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <functional>
#include <kissfft.hh>
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

// The values of a kernel's table, complex numbers in the parts' precision R, as the kernel reads
// them (std::complex has the layout of the dialect's float2 and double2).
class Table {
 public:
  explicit Table(DType part) : wide_(part == DType::f64) {}

  std::int64_t size() const { return static_cast<std::int64_t>(values_.size()); }
  // The value at `i`, widened exactly to double.
  std::complex<double> operator[](std::int64_t i) const { return values_[static_cast<std::size_t>(i)]; }

  // Appends v rounded to the parts' precision.
  void push(std::complex<double> v) {
    values_.push_back(wide_ ? v
                            : std::complex<double>(static_cast<float>(v.real()),
                                                   static_cast<float>(v.imag())));
  }
  // Appends the n twiddles of KISS FFT, exp(i k phinc) with phinc = -+2 acos(-1) / n, computed
  // in the parts' precision as kissfft<R> computes them.
  void push_kiss_twiddles(std::int64_t n, bool inverse) {
    const auto twiddles = [&]<class R>(R) {
      const R phinc = static_cast<R>(inverse ? 2 : -2) * std::acos(static_cast<R>(-1)) /
                      static_cast<R>(n);
      for (std::int64_t k = 0; k < n; ++k) {
        const std::complex<R> w = std::exp(std::complex<R>(0, static_cast<R>(k) * phinc));
        values_.emplace_back(w.real(), w.imag());
      }
    };
    if (wide_)
      twiddles(double{});
    else
      twiddles(float{});
  }

  std::vector<unsigned char> bytes() const {
    const auto copy = [&]<class R>(R) {
      std::vector<std::complex<R>> parts(values_.begin(), values_.end());
      std::vector<unsigned char> out(parts.size() * sizeof(std::complex<R>));
      if (!out.empty()) std::memcpy(out.data(), parts.data(), out.size());
      return out;
    };
    return wide_ ? copy(double{}) : copy(float{});
  }

 private:
  bool wide_;
  std::vector<std::complex<double>> values_;
};

// What the stages' text needs: the line of n values (in local memory `line`, or at base + j *
// inner in the output), G work-items, the twiddles (`table` from index 0).
struct FourierText {
  const Dialect& d;
  std::string C, T, L, barrier, G;
  std::int64_t n;
  DType part;
  bool in_local;
  std::int64_t inner;
  const Table& table;

  // Element `j` (an index expression) of the line.
  std::string at(const std::string& j) const {
    return in_local ? "line[" + j + "]" : "out0[base + (" + j + ") * " + number(inner) + "]";
  }

  std::string make(const std::string& re, const std::string& im) const {
    const std::string args[] = {C, re, im};
    return fill_template(d.make_complex, args);
  }
  // The twiddle exp(-+2 pi i k / n) of an index expression k < n.
  std::string twiddle(const std::string& k) const { return "table[" + k + "]"; }
};

// `rev`, the bit reversal of index expression j < m (a power of two).
std::string bit_reversal(const std::string& L, std::int64_t m, const std::string& j) {
  int bits = 0;
  while ((std::int64_t{1} << bits) < m) ++bits;
  return "    " + L + " rev = 0, q = " + j + ";\n    for (int b = 0; b < " + std::to_string(bits) +
         "; ++b) { rev = (rev << 1) | (q & 1); q >>= 1; }\n";
}

// Element `j` (an index expression) of an array of values.
using Element = std::function<std::string(const std::string& j)>;

// Radix-2 stages (decimation in time) on m values (a power of two), in bit-reversed order before
// and in order after; the twiddle of butterfly pos in the stage of `span` is
// exp(-+2 pi i pos / (2 span)) (the table's sign), read at table[first + pos * m / (2 span)].
std::string radix2_forward(const FourierText& f, const Element& line, std::int64_t m,
                           std::int64_t first) {
  const std::string M = number(m), at = first == 0 ? "" : number(first) + " + ";
  std::string s = "  for (" + f.L + " span = 1; span < " + M + "; span <<= 1) {\n";
  s += "    for (" + f.L + " b = l; b < " + number(m / 2) + "; b += " + f.G + ") {\n";
  s += "      " + f.L + " pos = b & (span - 1), i0 = ((b - pos) << 1) + pos, i1 = i0 + span;\n";
  // The product as std::complex computes it (infinities recovered), as KISS FFT's.
  s += "      " + f.C + " u = " + line("i0") + ", v = kiln_cmul(" + line("i1") + ", " +
       f.twiddle(at + "pos * (" + M + " / (2 * span))") + ");\n";
  s += "      " + line("i0") + " = " + f.make("u.x + v.x", "u.y + v.y") + ";\n";
  s += "      " + line("i1") + " = " + f.make("u.x - v.x", "u.y - v.y") + ";\n";
  s += "    }\n    " + f.barrier + ";\n  }\n";
  return s;
}

// Lengths that are powers of two: element j starts at the bit reversal of j, then radix-2 stages.
void power_of_two_stages(const FourierText& f, std::string& load_index, std::string& stages) {
  load_index = bit_reversal(f.L, f.n, "j");
  stages += radix2_forward(f, [&](const std::string& j) { return f.at(j); }, f.n, 0);
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
      return "kiln_cmul(" + value + ", " + f.twiddle(q + " * pos * " + number(f.n / (p * span))) +
             ")";
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
        const std::complex<double> w = f.table[k * (f.n / p)];
        if (k > 0) {
          re += ", ";
          im += ", ";
        }
        re += literal(Scalar(w.real()), f.part, d);
        im += literal(Scalar(w.imag()), f.part, d);
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

// Bluestein's method for a length n with a prime factor above kLargestRadix: with the chirp
// c_j = exp(-+i pi j^2 / n), X_k = c_k sum_j (x_j c_j) conj(c_(k-j)), a circular convolution of
// length m (the power of two >= 2n - 1). The host computes in double, once, the chirp and the
// spectrum of b = conj(c) (wrapped: b_(m-j) = b_j) divided by m; the kernel transforms a = x c
// (zero past n) forward (radix-2, decimation in time, from bit-reversed order), multiplies it by
// b's spectrum, and transforms back by decimation in frequency, which leaves the convolution in
// the bit-reversed order where the last step reads it. The table holds c (n values), the
// twiddles exp(-2 pi i k / m) (m / 2), then b's spectrum (m). Returns the text up to the
// convolution in `line`; `load` reads element j of the input as "x", `value_x` is it as C.
std::string bluestein(const FourierText& f, const std::string& load, const std::string& value_x,
                      std::int64_t m, const std::string& line, bool inverse, Table& table) {
  const std::int64_t n = f.n;
  constexpr double pi = std::numbers::pi;
  std::vector<std::complex<double>> chirp(static_cast<std::size_t>(n));
  std::int64_t square = 0;  // j^2 mod 2n: the phase stays below 2 pi and keeps its digits
  for (std::int64_t j = 0; j < n; ++j) {
    chirp[static_cast<std::size_t>(j)] =
        std::polar(1.0, (inverse ? pi : -pi) * static_cast<double>(square) / static_cast<double>(n));
    square = (square + 2 * j + 1) % (2 * n);
  }
  for (const auto& c : chirp) table.push(c);
  for (std::int64_t k = 0; k < m / 2; ++k)
    table.push(std::polar(1.0, -2 * pi * static_cast<double>(k) / static_cast<double>(m)));
  std::vector<std::complex<double>> b(static_cast<std::size_t>(m)), spectrum(b.size());
  for (std::int64_t j = 0; j < n; ++j) {
    b[static_cast<std::size_t>(j)] = std::conj(chirp[static_cast<std::size_t>(j)]);
    if (j > 0) b[static_cast<std::size_t>(m - j)] = b[static_cast<std::size_t>(j)];
  }
  kissfft<double>(static_cast<std::size_t>(m), false).transform(b.data(), spectrum.data());
  for (const auto& v : spectrum) table.push(v / static_cast<double>(m));

  const std::string N = number(n), M = number(m), twiddles = number(n),
                    spectrum_at = number(n + m / 2);
  const std::string zero = f.make("(" + f.T + ")0", "(" + f.T + ")0");
  std::string s = "  for (" + f.L + " j = l; j < " + M + "; j += " + f.G + ") {\n";
  s += bit_reversal(f.L, m, "j");
  s += "    " + f.C + " a = " + zero + ";\n";
  s += "    if (j < " + N + ") {\n" + load + "      a = kiln_cmul(" + value_x + ", table[j]);\n    }\n";
  s += "    " + line + "[rev] = a;\n  }\n  " + f.barrier + ";\n";
  s += radix2_forward(f, [&](const std::string& j) { return line + "[" + j + "]"; }, m, n);
  s += "  for (" + f.L + " j = l; j < " + M + "; j += " + f.G + ") " + line + "[j] = kiln_cmul(" +
       line + "[j], table[" + spectrum_at + " + j]);\n  " + f.barrier + ";\n";
  // The inverse: butterflies (u + v, (u - v) conj(w)) from span m / 2 down.
  s += "  for (" + f.L + " span = " + number(m / 2) + "; span >= 1; span >>= 1) {\n";
  s += "    for (" + f.L + " b = l; b < " + number(m / 2) + "; b += " + f.G + ") {\n";
  s += "      " + f.L + " pos = b & (span - 1), i0 = ((b - pos) << 1) + pos, i1 = i0 + span;\n";
  s += "      " + f.C + " u = " + line + "[i0], v = " + line + "[i1], w = table[" + twiddles +
       " + pos * (" + M + " / (2 * span))];\n";
  s += "      " + line + "[i0] = " + f.make("u.x + v.x", "u.y + v.y") + ";\n";
  s += "      " + line + "[i1] = kiln_cmul(" + f.make("u.x - v.x", "u.y - v.y") + ", " +
       f.make("w.x", "-w.y") + ");\n";
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
  const bool inverse = root.attrs.inverse;
  r.note_type(t);
  const std::vector<std::int64_t> radices = radices_of(len);
  // Bluestein's transforms run on `padded` values, a power of two.
  const bool chirped = len > 1 && radices.empty();
  std::int64_t padded = 1;
  while (chirped && padded < 2 * len - 1) padded *= 2;
  const std::int64_t values = chirped ? padded : len;
  int group = 1;
  while (group < 256 && group * 2 <= values / 2 &&
         static_cast<std::size_t>(group) * 2 <= device.max_group)
    group *= 2;
  const bool in_local = static_cast<std::size_t>(values) * size_of(t) <= device.local_bytes;
  Table table(part);
  if (!chirped) table.push_kiss_twiddles(len, inverse);
  // `half` is a type in OpenCL C.
  const FourierText f{d,
                      std::string(d.type(t)),
                      std::string(d.type(part)),
                      r.i64(),
                      std::string(in_local ? d.barrier : d.global_barrier),
                      std::to_string(group),
                      len,
                      part,
                      in_local,
                      inner,
                      table};
  std::vector<std::string> outputs = r.begin("kiln_fft", t);
  const KernelInput& in = k.inputs[0];
  const std::string global = d.global.empty() ? "" : std::string(d.global) + " ";
  std::string body;
  body += "  " + f.L + " g = (" + f.L + ")" + std::string(d.group_id) + ";\n";
  body += "  int l = (int)" + std::string(d.local_id) + ";\n";
  body += "  " + f.L + " base = (g / " + number(inner) + ") * " + number(len * inner) + " + g % " +
          number(inner) + ";\n";
  std::string value;  // of element j, after the stages
  std::string extra = ", " + global + "const " + f.C + "* table";
  const std::string each = "  for (" + f.L + " j = l; j < " + number(len) + "; j += " + f.G + ")";
  if (chirped) {
    // The padded line in local memory where it fits, else in the scratch buffer.
    if (in_local) {
      body += "  " + std::string(d.local) + " " + f.C + " line[" + number(padded) + "];\n";
    } else {
      body += "  " + global + f.C + "* line = scratch + g * " + number(padded) + ";\n";
      out.scratch_bytes = static_cast<std::size_t>(lines.outer * inner * padded) * size_of(t);
      extra += ", " + global + f.C + "* scratch";
    }
    std::string load;
    r.load(load, "x", structure.slot(in.node), in.view, "base + j * " + number(inner));
    body += bluestein(f, load, cast("x", in.node->dtype, t, d), padded, "line", inverse, table);
    // X_j = c_j conv_j, conv_j at the bit reversal of j.
    body += each + " {\n" + bit_reversal(f.L, padded, "j");
    body += "    " + f.C + " y = kiln_cmul(line[rev], table[j]);\n";
    value = "y";
  } else {
    std::string load_index, stages;
    if ((len & (len - 1)) == 0)
      power_of_two_stages(f, load_index, stages);
    else
      mixed_radix_stages(f, radices, load_index, stages);
    if (in_local)
      body += "  " + std::string(d.local) + " " + f.C + " line[" + number(len) + "];\n";
    body += each + " {\n";
    r.load(body, "x", structure.slot(in.node), in.view, "base + j * " + number(inner));
    body += load_index;
    body += "    " + f.at("rev") + " = " + cast("x", in.node->dtype, t, d) + ";\n  }\n";
    body += "  " + f.barrier + ";\n";
    body += stages;
    // A line in the output is written already, and scaled in place for the inverse.
    if (in_local || inverse) {
      body += each + " {\n";
      value = f.at("j");
    }
  }
  if (!value.empty()) {
    if (inverse) {
      // 1 / n in the parts' type, as the reference computes it (not 1 / n rounded twice).
      const double reciprocal = part == DType::f32
                                    ? static_cast<double>(1.0f / static_cast<float>(len))
                                    : 1.0 / static_cast<double>(len);
      const std::string scale = literal(Scalar(reciprocal), part, d);
      value = f.make(value + ".x * " + scale, value + ".y * " + scale);
    }
    body += "    " + r.write("out0", "base + j * " + number(inner), value, t) + "\n  }\n";
  }
  out.table = table.bytes();
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>(lines.outer * inner) * out.local_size;
  char head[160];
  std::snprintf(head, sizeof head, std::string(d.fixed_group).c_str(), group);
  r.finish(head, outputs, body, extra);
  return std::move(out);
}

}  // namespace codegen
}  // namespace kiln::detail
