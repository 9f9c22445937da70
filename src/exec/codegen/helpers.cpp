// The helper functions of generated kernels: those the registry's C templates name (kiln_add,
// kiln_pow, ...) and those the renderer's families call, defined in a kernel only where its text
// names them, for the types it uses: compilers such as PoCL's take time for every function in
// the source.
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "exec/codegen/renderer.hpp"
#include "exec/semantics/nan_rules.hpp"

namespace kiln::detail::codegen {

namespace {

// Helpers with the integer rules of semantics/integer.hpp (wrapping through unsigned types,
// division by zero giving 0) and the NaN rules of semantics/nan_rules.hpp, plus conversions to
// integers as convert_value does them (NaN gives 0, out-of-range values saturate, the rest
// truncate). In the definitions $T is the type, $U its unsigned type, $F a float literal's
// suffix, $L the dialect's 64-bit integer type and $S its literals' suffix.
struct Helper {
  std::string_view name;
  std::string_view integer;   // for the 32- and 64-bit integers
  std::string_view floating;  // for float and double
  std::string_view nan_rule = {};  // for float and double where the dialect spells out the NaN
                                   // rule, if it differs
};
// The NaN rule of semantics/nan_rules.hpp: an op whose result r is NaN gives its first NaN operand,
// quieted ($Q(a)), and with no NaN operand the host's NaN ($N); devices whose arithmetic makes
// one canonical NaN (NVIDIA's) then give the reference's bits. A helper calls only helpers
// before it in this table.
constexpr Helper kHelpers[] = {
    {"kiln_nan1", "", "$T kiln_nan1($T r, $T a) { return r == r ? r : a != a ? $Q(a) : $N; }"},
    {"kiln_nan2", "",
     "$T kiln_nan2($T r, $T a, $T b) {\n"
     "  return r == r ? r : a != a ? $Q(a) : b != b ? $Q(b) : $N;\n}"},
    {"kiln_add", "$T kiln_add($T a, $T b) { return ($T)(($U)a + ($U)b); }",
     "$T kiln_add($T a, $T b) { return a + b; }",
     "$T kiln_add($T a, $T b) { return kiln_nan2(a + b, a, b); }"},
    {"kiln_sub", "$T kiln_sub($T a, $T b) { return ($T)(($U)a - ($U)b); }",
     "$T kiln_sub($T a, $T b) { return a - b; }",
     "$T kiln_sub($T a, $T b) { return kiln_nan2(a - b, a, b); }"},
    {"kiln_mul", "$T kiln_mul($T a, $T b) { return ($T)(($U)a * ($U)b); }",
     "$T kiln_mul($T a, $T b) { return a * b; }",
     "$T kiln_mul($T a, $T b) { return kiln_nan2(a * b, a, b); }"},
    {"kiln_div",
     "$T kiln_div($T a, $T b) { return b == 0 ? ($T)0 : b == -1 ? ($T)(($U)0 - ($U)a) : a / b; }",
     "$T kiln_div($T a, $T b) { return a / b; }",
     "$T kiln_div($T a, $T b) { return kiln_nan2(a / b, a, b); }"},
    {"kiln_floor", "$T kiln_floor($T x) { return x; }", "$T kiln_floor($T x) { return floor(x); }"},
    {"kiln_ceil", "$T kiln_ceil($T x) { return x; }", "$T kiln_ceil($T x) { return ceil(x); }"},
    {"kiln_trunc", "$T kiln_trunc($T x) { return x; }", "$T kiln_trunc($T x) { return trunc(x); }"},
    // Halves to even, as nearbyint in the default rounding mode (libtorch's round).
    {"kiln_round", "$T kiln_round($T x) { return x; }", "$T kiln_round($T x) { return rint(x); }"},
    {"kiln_fmod", "$T kiln_fmod($T a, $T b) { return (b == 0 || b == -1) ? ($T)0 : a % b; }",
     "$T kiln_fmod($T a, $T b) { return fmod(a, b); }"},
    {"kiln_remainder",
     "$T kiln_remainder($T a, $T b) {\n"
     "  $T r = kiln_fmod(a, b);\n  return r != 0 && ((r < 0) != (b < 0)) ? ($T)(r + b) : r;\n}",
     "$T kiln_remainder($T a, $T b) {\n"
     "  $T r = fmod(a, b);\n  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;\n}"},
    {"kiln_abs", "$T kiln_abs($T x) { return x < 0 ? ($T)(($U)0 - ($U)x) : x; }",
     "$T kiln_abs($T x) { return fabs(x); }"},
    {"kiln_angle", "",
     "$T kiln_angle($T x) { return x != x ? x : x < 0 ? 3.14159265358979323846$F : 0; }"},
    {"kiln_min", "$T kiln_min($T a, $T b) { return a < b ? a : b; }",
     "$T kiln_min($T a, $T b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }"},
    {"kiln_max", "$T kiln_max($T a, $T b) { return a > b ? a : b; }",
     "$T kiln_max($T a, $T b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }"},
    {"kiln_pow",
     "$T kiln_pow($T b, $T e) {\n"
     "  if (e < 0) return b == 1 ? ($T)1 : b == -1 ? (e % 2 == 0 ? ($T)1 : ($T)-1) : ($T)0;\n"
     "  $U r = 1, x = ($U)b;\n"
     "  while (e > 0) { if (e & 1) r *= x; x *= x; e >>= 1; }\n"
     "  return ($T)r;\n}",
     "$T kiln_pow($T a, $T b) { return pow(a, b); }"},
    {"kiln_replaces",
     "int kiln_replaces($T c, $T b, int maximum) { return maximum ? c > b : c < b; }",
     "int kiln_replaces($T c, $T b, int maximum) {\n"
     "  if (b != b) return 0;\n  if (c != c) return 1;\n  return maximum ? c > b : c < b;\n}"},
    {"kiln_before",
     "int kiln_before($T a, $T b, int descending) { return descending ? b < a : a < b; }",
     "int kiln_before($T a, $T b, int descending) {\n"
     "  int na = a != a, nb = b != b;\n"
     "  if (na || nb) return descending ? (na && !nb) : (nb && !na);\n"
     "  return descending ? b < a : a < b;\n}"},
    {"kiln_to_i32", "",
     "int kiln_to_i32($T v) {\n"
     "  return v != v ? 0 : v <= -2147483648.0$F ? (-2147483647 - 1)\n"
     "       : v >= 2147483647.0$F ? 2147483647 : (int)v;\n}"},
    {"kiln_to_i64", "",
     "$L kiln_to_i64($T v) {\n"
     "  return v != v ? 0 : v <= -9223372036854775808.0$F ? (-9223372036854775807$S - 1)\n"
     "       : v >= 9223372036854775807.0$F ? 9223372036854775807$S : ($L)v;\n}"},
};

// Helpers of the 16-bit floats (graph/narrow_floats.hpp's rules) that the dialect's spellings
// serve (the dialect defines kiln_round_f16, which rounds a float to the nearest f16): rounding
// a float to the nearest bf16 (kept as a float), and rounding a double to float by rounding to
// odd, so that a second rounding to a 16-bit type gives the double's nearest value.
struct NarrowHelper {
  std::string_view name;
  std::string (*definition)(const Dialect& d);
};
constexpr NarrowHelper kNarrowHelpers[] = {
    {"kiln_round_bf16",
     [](const Dialect& d) {
       const std::string u32(d.u32);
       return "float kiln_round_bf16(float x) {\n  " + u32 + " u = " + fill(d.as_u32, "x") +
              ";\n  if ((u & 0x7fffffffu) > 0x7f800000u) return " +
              fill(d.as_f32, "(u & 0x80000000u) | 0x7fc00000u") + ";\n  return " +
              fill(d.as_f32, "(u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u") + ";\n}";
     }},
    // Conversions between f32 and f64 that keep a NaN's sign and payload as the host's do.
    {"kiln_f64_of",
     [](const Dialect& d) {
       const std::string u32(d.u32), u64(d.u64), ul(d.u64_suffix);
       return "double kiln_f64_of(float x) {\n  if (x == x) return (double)x;\n  " + u32 +
              " u = " + fill(d.as_u32, "x") + ";\n  return " +
              fill(d.as_f64, "(((" + u64 + ")(u & 0x80000000u)) << 32) | 0x7ff8000000000000" + ul +
                                 " | (((" + u64 + ")(u & 0x003fffffu)) << 29)") +
              ";\n}";
     }},
    {"kiln_f32_of",
     [](const Dialect& d) {
       const std::string u32(d.u32), u64(d.u64);
       return "float kiln_f32_of(double x) {\n  if (x == x) return (float)x;\n  " + u64 +
              " u = " + fill(d.as_u64, "x") + ";\n  return " +
              fill(d.as_f32, "((" + u32 + ")(u >> 32) & 0x80000000u) | 0x7fc00000u | (" + u32 +
                                 ")((u >> 29) & 0x003fffffu)") +
              ";\n}";
     }},
    {"kiln_odd_f32",
     [](const Dialect& d) {
       return "float kiln_odd_f32(double x) {\n"
              "  float t = (float)x;\n"
              "  if ((double)t == x || x != x) return t;\n"
              "  if (fabs((double)t) > fabs(x)) t = " +
              std::string(d.nextafter_f32) + "(t, 0.0f);\n  return " +
              fill(d.as_f32, fill(d.as_u32, "t") + " | 1u") + ";\n}";
     }},
};

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// How the NaN rule's pieces are spelled in a dialect: the quieted NaN of an operand, and the NaN
// this host's arithmetic makes of numbers (x86: the sign set), as the reference computes it.
struct NanSpelling {
  const Dialect& d;
  std::string made_f32, made_f64;
  std::string quiet_f32(const std::string& x) const {
    return fill(d.as_f32, fill(d.as_u32, x) + " | 0x00400000u");
  }
  std::string quiet_f64(const std::string& x) const {
    return fill(d.as_f64, fill(d.as_u64, x) + " | 0x0008000000000000" + std::string(d.u64_suffix));
  }
};
NanSpelling nan_spelling(const Dialect& d) {
  char text[32];
  NanSpelling s{d, {}, {}};
  std::snprintf(text, sizeof text, "0x%08xu", host_made_nan_f32());
  s.made_f32 = fill(d.as_f32, text);
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(host_made_nan_f64()));
  s.made_f64 = fill(d.as_f64, text + std::string(d.u64_suffix));
  return s;
}

bool names(const std::string& text, std::string_view helper) {
  return text.find(std::string(helper) + "(") != std::string::npos;
}

}  // namespace

std::string helpers_for(const std::string& text, const Dialect& d, bool f64) {
  struct Type {
    DType t;
    std::string_view unsigned_name, suffix;
  };
  const Type types[] = {{DType::i32, d.u32, ""},
                        {DType::i64, d.u64, ""},
                        {DType::f32, "", "f"},
                        {DType::f64, "", ""}};
  // The dialect's helpers and the narrow ones, with those their definitions call: a helper
  // calls only helpers before it (the dialect's come first).
  std::vector<std::string> narrow;
  for (const NarrowHelper& h : kNarrowHelpers) narrow.push_back(h.definition(d));
  std::string named = text;
  for (std::size_t i = 0; i < narrow.size(); ++i)
    if (names(text, kNarrowHelpers[i].name)) named += narrow[i];
  std::vector<bool> wanted(d.helpers.size());
  for (std::size_t i = d.helpers.size(); i-- > 0;) {
    wanted[i] = names(named, d.helpers[i].name);
    if (wanted[i]) named += d.helpers[i].definition;
  }
  std::string out;
  for (std::size_t i = 0; i < d.helpers.size(); ++i)
    if (wanted[i]) out += std::string(d.function) + " " + std::string(d.helpers[i].definition) + "\n";
  for (std::size_t i = 0; i < narrow.size(); ++i)
    if (names(text, kNarrowHelpers[i].name)) out += std::string(d.function) + " " + narrow[i] + "\n";
  // kiln_* helpers, with those their definitions call (a helper calls only helpers before it).
  std::vector<bool> called(std::size(kHelpers));
  std::string calls = text;
  for (std::size_t i = std::size(kHelpers); i-- > 0;) {
    called[i] = names(calls, kHelpers[i].name);
    if (called[i])
      calls += std::string(kHelpers[i].integer) +
               std::string(d.nan_rule && !kHelpers[i].nan_rule.empty() ? kHelpers[i].nan_rule
                                                                       : kHelpers[i].floating);
  }
  const NanSpelling nans = nan_spelling(d);
  for (std::size_t i = 0; i < std::size(kHelpers); ++i) {
    if (!called[i]) continue;
    const Helper& h = kHelpers[i];
    for (const Type& t : types) {
      if (t.t == DType::f64 && !f64) continue;
      const std::string_view def = !is_float(t.t)                         ? h.integer
                                   : d.nan_rule && !h.nan_rule.empty() ? h.nan_rule
                                                                       : h.floating;
      if (def.empty()) continue;
      std::string s = replace_all(std::string(def), "$T", d.type(t.t));
      s = replace_all(std::move(s), "$U", t.unsigned_name);
      s = replace_all(std::move(s), "$F", t.suffix);
      s = replace_all(std::move(s), "$L", d.i64);
      s = replace_all(std::move(s), "$S", d.i64_suffix);
      if (is_float(t.t)) {
        const bool wide = t.t == DType::f64;
        for (const char* operand : {"a", "b"})
          s = replace_all(std::move(s), std::string("$Q(") + operand + ")",
                          wide ? nans.quiet_f64(operand) : nans.quiet_f32(operand));
        s = replace_all(std::move(s), "$N", wide ? nans.made_f64 : nans.made_f32);
      }
      out += std::string(d.function) + " " + s + "\n";
    }
  }
  return out + complex_helpers_for(text, d, f64);
}

}  // namespace kiln::detail::codegen
