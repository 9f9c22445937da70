// Complex values in generated kernels: the ops the renderer computes in c64 and c128 (as C
// expressions of helper calls), and the helpers' definitions. A complex value is the dialect's
// vector of two floats (x the real part, y the imaginary part).
//
// The helpers follow what the reference computes with std::complex on the host (g++ and glibc):
// C's Annex G for infinities and NaN (a product or quotient that comes out NaN + iNaN recovers
// its infinities as libgcc's __mulsc3 and __divsc3 do; exp, log and sqrt have glibc's special
// cases), c64 quotients computed in double as libgcc does where the hardware has doubles, c128
// quotients by Smith's method with libgcc's scaling, the rescaling of glibc's clog (of huge and
// of subnormal values) and csqrt, and its cpow, exp(b log a); sin, cos, tan and their hyperbolic
// forms take glibc's cases, its rescaling by e^t where sinh or cosh of the real part would
// overflow before the result does, and its tanh of a large real part as 4 sin cos / e^2x; the
// inverse functions glibc's cases and its asinh kernel, which picks a formula free of
// cancellation and overflow for each region of the plane). Finite results agree with the
// reference to a few ulp of their modulus; special values exactly (NaN payloads aside), but for
// the signs that a huge phase gives a value infinite in both parts.
#include <array>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

#include "exec/codegen/renderer.hpp"

namespace kiln::detail::codegen {

std::string_view complex_form(Op op) {
  switch (op) {
    case Op::add: return "kiln_cadd({0}, {1})";
    case Op::sub: return "kiln_csub({0}, {1})";
    case Op::mul: return "kiln_cmul({0}, {1})";
    case Op::div: return "kiln_cdiv({0}, {1})";
    case Op::equal: return "kiln_ceq({0}, {1})";
    case Op::not_equal: return "(!kiln_ceq({0}, {1}))";
    case Op::assign: return "({1})";
    case Op::complex: return "kiln_cpair({0}, {1})";
    case Op::neg: return "kiln_cneg({0})";
    case Op::conj: return "kiln_cconj({0})";
    case Op::real:
    case Op::convert: return "({0})";  // the cast to the node's type takes the real part
    case Op::imag: return "kiln_cimag({0})";
    case Op::abs: return "kiln_cabs({0})";
    case Op::angle: return "kiln_carg({0})";
    case Op::square: return "kiln_cmul({0}, {0})";
    case Op::reciprocal: return "kiln_crecip({0})";
    case Op::sigmoid: return "kiln_csigmoid({0})";
    case Op::exp: return "kiln_cexp({0})";
    case Op::log: return "kiln_clog({0})";
    case Op::log10: return "kiln_clog10({0})";
    case Op::sqrt: return "kiln_csqrt({0})";
    case Op::sin: return "kiln_csin({0})";
    case Op::cos: return "kiln_ccos({0})";
    case Op::tan: return "kiln_ctan({0})";
    case Op::sinh: return "kiln_csinh({0})";
    case Op::cosh: return "kiln_ccosh({0})";
    case Op::tanh: return "kiln_ctanh({0})";
    case Op::asin: return "kiln_casin({0})";
    case Op::acos: return "kiln_cacos({0})";
    case Op::atan: return "kiln_catan({0})";
    case Op::asinh: return "kiln_casinh({0})";
    case Op::acosh: return "kiln_cacosh({0})";
    case Op::atanh: return "kiln_catanh({0})";
    case Op::pow: return "kiln_cpow({0}, {1})";
    default: return {};
  }
}

bool complex_form_needs_f64(Op op) {
  // c64 quotients and logarithms near 1 are computed in double (kiln_cdiv, kiln_clog) where the
  // device has it.
  // The inverse functions take logarithms, and x^2 + y^2 - 1, the same way.
  return op == Op::div || op == Op::reciprocal || op == Op::sigmoid || op == Op::log ||
         op == Op::log10 || op == Op::pow || op == Op::asin || op == Op::acos || op == Op::atan ||
         op == Op::asinh || op == Op::acosh || op == Op::atanh;
}

namespace {

// In the definitions: $C the complex type, $T the type of its parts, $F the suffix of its
// literals, $INF and $NAN its infinity and NaN, $MAX, $MIN and $EPS its largest finite value,
// smallest normal value and epsilon, $LN2 and $LN10 ln 2 and ln 10 (as the host rounds them),
// $PI, $PI_2, $PI_4 and $PI_3_4 pi, pi/2, pi/4 and pi - pi/4 (the last in the parts' type),
// $X2Y2M1 big^2 + small^2 - 1 without cancellation, $MANT_DIG the digits of its significand and
// $SCALE_UP 2^$MANT_DIG. A helper calls only helpers before it.
// `wide` replaces `definition` for c128 where the two differ.
struct ComplexHelper {
  std::string_view name;
  std::string definition;
  std::string wide = {};
};

constexpr std::string_view kMulRecovery =
    // Annex G: a product that is NaN + iNaN because of an infinite factor (or an overflow) is
    // recomputed with the infinities boxed to +-1 and the NaN parts set to 0.
    "  if (isnan(x) && isnan(y)) {\n"
    "    int again = 0;\n"
    "    if (isinf(a) || isinf(b)) {\n"
    "      a = copysign(isinf(a) ? ($T)1 : ($T)0, a);\n"
    "      b = copysign(isinf(b) ? ($T)1 : ($T)0, b);\n"
    "      if (isnan(c)) c = copysign(($T)0, c);\n"
    "      if (isnan(d)) d = copysign(($T)0, d);\n"
    "      again = 1;\n"
    "    }\n"
    "    if (isinf(c) || isinf(d)) {\n"
    "      c = copysign(isinf(c) ? ($T)1 : ($T)0, c);\n"
    "      d = copysign(isinf(d) ? ($T)1 : ($T)0, d);\n"
    "      if (isnan(a)) a = copysign(($T)0, a);\n"
    "      if (isnan(b)) b = copysign(($T)0, b);\n"
    "      again = 1;\n"
    "    }\n"
    "    if (!again && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {\n"
    "      if (isnan(a)) a = copysign(($T)0, a);\n"
    "      if (isnan(b)) b = copysign(($T)0, b);\n"
    "      if (isnan(c)) c = copysign(($T)0, c);\n"
    "      if (isnan(d)) d = copysign(($T)0, d);\n"
    "      again = 1;\n"
    "    }\n"
    "    if (again) {\n"
    "      x = $INF * (a * c - b * d);\n"
    "      y = $INF * (a * d + b * c);\n"
    "    }\n"
    "  }\n";

constexpr std::string_view kDivRecovery =
    // Annex G: the quotients that come out NaN + iNaN though they have a value: nonzero / 0,
    // infinite / finite, finite / infinite.
    "  if (isnan(x) && isnan(y)) {\n"
    "    if (c == 0 && d == 0 && (!isnan(a) || !isnan(b))) {\n"
    "      x = copysign($INF, c) * a;\n"
    "      y = copysign($INF, c) * b;\n"
    "    } else if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {\n"
    "      a = copysign(isinf(a) ? ($T)1 : ($T)0, a);\n"
    "      b = copysign(isinf(b) ? ($T)1 : ($T)0, b);\n"
    "      x = $INF * (a * c + b * d);\n"
    "      y = $INF * (b * c - a * d);\n"
    "    } else if ((isinf(c) || isinf(d)) && isfinite(a) && isfinite(b)) {\n"
    "      c = copysign(isinf(c) ? ($T)1 : ($T)0, c);\n"
    "      d = copysign(isinf(d) ? ($T)1 : ($T)0, d);\n"
    "      x = ($T)0 * (a * c + b * d);\n"
    "      y = ($T)0 * (b * c - a * d);\n"
    "    }\n"
    "  }\n";

// Helpers whose text is assembled from the pieces above.
std::string multiply() {
  return "$C kiln_cmul($C z, $C w) {\n"
         "  $T a = z.x, b = z.y, c = w.x, d = w.y;\n"
         "  $T ac = a * c, bd = b * d, ad = a * d, bc = b * c;\n"
         "  $T x = ac - bd, y = ad + bc;\n" +
         std::string(kMulRecovery) + "  return kiln_cx(x, y);\n}";
}
std::string divide_in_double() {
  // The parts in double: the plain formula then neither overflows nor loses precision.
  return "$C kiln_cdiv($C z, $C w) {\n"
         "  $T a = z.x, b = z.y, c = w.x, d = w.y;\n"
         "  double aa = a, bb = b, cc = c, dd = d;\n"
         "  double denominator = cc * cc + dd * dd;\n"
         "  $T x = ($T)((aa * cc + bb * dd) / denominator);\n"
         "  $T y = ($T)((bb * cc - aa * dd) / denominator);\n" +
         std::string(kDivRecovery) + "  return kiln_cx(x, y);\n}";
}
std::string divide_by_smith() {
  // Smith's method, dividing by the larger part of w, with the operands scaled first where the
  // denominator would overflow or the quotient underflow.
  return "$C kiln_cdiv($C z, $C w) {\n"
         "  $T a = z.x, b = z.y, c = w.x, d = w.y, x, y;\n"
         "  const $T big = $MAX / 2, tiny = $MIN, up = 1 / $EPS, limit = big * $EPS;\n"
         "  int d_larger = fabs(c) < fabs(d);\n"
         "  $T larger = d_larger ? fabs(d) : fabs(c);\n"
         "  if (larger >= big) { a *= ($T)0.5; b *= ($T)0.5; c *= ($T)0.5; d *= ($T)0.5; }\n"
         "  larger = d_larger ? fabs(d) : fabs(c);\n"
         "  if (larger < $EPS ||\n"
         "      (fabs(a) < tiny && fabs(b) < limit && larger < limit) ||\n"
         "      (fabs(b) < tiny && fabs(a) < limit && larger < limit)) {\n"
         "    a *= up; b *= up; c *= up; d *= up;\n"
         "  }\n"
         "  if (d_larger) {\n"
         "    $T ratio = c / d, denominator = c * ratio + d;\n"
         "    if (fabs(ratio) > tiny) {\n"
         "      x = (a * ratio + b) / denominator;\n"
         "      y = (b * ratio - a) / denominator;\n"
         "    } else {\n"
         "      x = (c * (a / d) + b) / denominator;\n"
         "      y = (c * (b / d) - a) / denominator;\n"
         "    }\n"
         "  } else {\n"
         "    $T ratio = d / c, denominator = d * ratio + c;\n"
         "    if (fabs(ratio) > tiny) {\n"
         "      x = (b * ratio + a) / denominator;\n"
         "      y = (b - a * ratio) / denominator;\n"
         "    } else {\n"
         "      x = (a + d * (b / c)) / denominator;\n"
         "      y = (b - d * (a / c)) / denominator;\n"
         "    }\n"
         "  }\n" +
         std::string(kDivRecovery) + "  return kiln_cx(x, y);\n}";
}

const std::vector<ComplexHelper>& complex_helpers() {
  static const std::vector<ComplexHelper> helpers = {
      {"kiln_cx", "$C kiln_cx($T re, $T im) { return $MAKE; }"},
      {"kiln_cadd", "$C kiln_cadd($C a, $C b) { return kiln_cx(a.x + b.x, a.y + b.y); }"},
      {"kiln_csub", "$C kiln_csub($C a, $C b) { return kiln_cx(a.x - b.x, a.y - b.y); }"},
      {"kiln_cneg", "$C kiln_cneg($C a) { return kiln_cx(-a.x, -a.y); }"},
      {"kiln_cconj", "$C kiln_cconj($C a) { return kiln_cx(a.x, -a.y); }"},
      {"kiln_cimag", "$C kiln_cimag($C a) { return kiln_cx(a.y, ($T)0); }"},
      {"kiln_cabs", "$C kiln_cabs($C a) { return kiln_cx(hypot(a.x, a.y), ($T)0); }"},
      {"kiln_carg", "$C kiln_carg($C a) { return kiln_cx(atan2(a.y, a.x), ($T)0); }"},
      {"kiln_cpair", "$C kiln_cpair($C a, $C b) { return kiln_cx(a.x, b.x); }"},
      {"kiln_ceq", "int kiln_ceq($C a, $C b) { return a.x == b.x && a.y == b.y; }"},
      {"kiln_cmul", multiply()},
      {"kiln_cdiv", divide_in_double(), divide_by_smith()},
      {"kiln_crecip", "$C kiln_crecip($C w) { return kiln_cdiv(kiln_cx(($T)1, ($T)0), w); }"},
      {"kiln_cexp",
       "$C kiln_cexp($C z) {\n"
       "  $T x = z.x, y = z.y;\n"
       "  if (isfinite(x)) {\n"
       "    if (!isfinite(y)) return kiln_cx($NAN, $NAN);\n"
       "    $T s = y, c = 1;\n"
       "    if (fabs(y) > $MIN) { s = sin(y); c = cos(y); }\n"
       // exp(x) overflows before exp(x) cos(y) does: e^t taken into the factors up to twice.
       "    const $T t = $EXP_LIMIT;\n"
       "    if (x > t) {\n"
       "      $T e = exp(t);\n"
       "      x -= t; s *= e; c *= e;\n"
       "      if (x > t) { x -= t; s *= e; c *= e; }\n"
       "    }\n"
       "    if (x > t) return kiln_cx($MAX * c, $MAX * s);\n"
       "    $T e = exp(x);\n"
       "    return kiln_cx(e * c, e * s);\n"
       "  }\n"
       "  if (isnan(x)) return kiln_cx(x, y == 0 ? y : x);\n"
       "  if (x > 0) {\n"
       "    if (y == 0) return kiln_cx(x, y);\n"
       "    if (isfinite(y)) return kiln_cx(copysign(x, cos(y)), copysign(x, sin(y)));\n"
       "    return kiln_cx(x, y - y);\n"
       "  }\n"
       "  if (isfinite(y)) return kiln_cx(copysign(($T)0, cos(y)), copysign(($T)0, sin(y)));\n"
       "  return kiln_cx(($T)0, copysign(($T)0, y));\n}"},
      {"kiln_clog",
       "$C kiln_clog($C z) {\n"
       "  $T x = z.x, y = z.y;\n"
       "  if (isnan(x) || isnan(y)) return kiln_cx(isinf(x) || isinf(y) ? $INF : $NAN, $NAN);\n"
       "  $T big = fmax(fabs(x), fabs(y)), small = fmin(fabs(x), fabs(y)), r;\n"
       "  if (big > $MAX / 2) {\n"
       "    r = log(hypot(x * ($T)0.5, y * ($T)0.5)) + $LN2;\n"
       // Near |z| = 1, log |z| is log1p(|z|^2 - 1) / 2 with |z|^2 - 1 computed without
       // cancellation (glibc's precision there).
       "  } else if (big >= ($T)0.5 && big < ($T)2) {\n"
       "    r = log1p($X2Y2M1) / 2;\n"
       "  } else if (big < $MIN) {\n"
       // Both parts subnormal: scaled up by 2^digits first, as glibc does, so |z| keeps its
       // digits.
       "    r = log(hypot(x * $SCALE_UP, y * $SCALE_UP)) - ($T)$MANT_DIG * $LN2;\n"
       "  } else {\n"
       "    r = log(hypot(x, y));\n"
       "  }\n"
       "  return kiln_cx(r, atan2(y, x));\n}"},
      // glibc's cpow: exp(b log a), the product with Annex G's recovery.
      {"kiln_cpow", "$C kiln_cpow($C a, $C b) { return kiln_cexp(kiln_cmul(b, kiln_clog(a))); }"},
      {"kiln_clog10",
       "$C kiln_clog10($C z) {\n"
       "  $C l = kiln_clog(z);\n"
       "  return kiln_cx(l.x / $LN10, l.y / $LN10);\n}"},
      {"kiln_csqrt",
       "$C kiln_csqrt($C z) {\n"
       "  $T x = z.x, y = z.y;\n"
       "  if (isinf(y)) return kiln_cx($INF, y);\n"
       "  if (isinf(x)) {\n"
       "    if (x < 0) return kiln_cx(isnan(y) ? $NAN : ($T)0, copysign($INF, y));\n"
       "    return kiln_cx(x, isnan(y) ? $NAN : copysign(($T)0, y));\n"
       "  }\n"
       "  if (isnan(x) || isnan(y)) return kiln_cx($NAN, $NAN);\n"
       "  if (y == 0) {\n"
       "    if (x < 0) return kiln_cx(($T)0, copysign(sqrt(-x), y));\n"
       "    return kiln_cx(fabs(sqrt(x)), copysign(($T)0, y));\n"
       "  }\n"
       "  if (x == 0) {\n"
       "    $T r = fabs(y) >= 2 * $MIN ? sqrt(($T)0.5 * fabs(y)) : ($T)0.5 * sqrt(2 * fabs(y));\n"
       "    return kiln_cx(r, copysign(r, y));\n"
       "  }\n"
       // Scaled by 4 (and the root by 2) where d + |x| could overflow; tiny values scaled up.
       "  int scale = 0;\n"
       "  if (fabs(x) > $MAX / 4) {\n"
       "    scale = 1; x = ldexp(x, -2); y = ldexp(y, -2);\n"
       "  } else if (fabs(y) > $MAX / 4) {\n"
       "    scale = 1; x = fabs(x) >= 4 * $MIN ? ldexp(x, -2) : ($T)0; y = ldexp(y, -2);\n"
       "  } else if (fabs(x) < 2 * $MIN && fabs(y) < 2 * $MIN) {\n"
       "    scale = -$HALF_DIGITS; x = ldexp(x, 2 * $HALF_DIGITS); y = ldexp(y, 2 * $HALF_DIGITS);\n"
       "  }\n"
       "  $T d = hypot(x, y), r, s;\n"
       // 2 re(root) im(root) = y: the smaller part from the larger, without d - |x|.
       "  if (x > 0) {\n"
       "    r = sqrt(($T)0.5 * (d + x));\n"
       "    if (scale == 1 && fabs(y) < 1) { s = y / r; r = ldexp(r, scale); scale = 0; }\n"
       "    else s = ($T)0.5 * (y / r);\n"
       "  } else {\n"
       "    s = sqrt(($T)0.5 * (d - x));\n"
       "    if (scale == 1 && fabs(y) < 1) { r = fabs(y / s); s = ldexp(s, scale); scale = 0; }\n"
       "    else r = fabs(($T)0.5 * (y / s));\n"
       "  }\n"
       "  if (scale != 0) { r = ldexp(r, scale); s = ldexp(s, scale); }\n"
       "  return kiln_cx(r, copysign(s, y));\n}"},
      {"kiln_x2y2m1", "$T kiln_x2y2m1($T big, $T small) { return $X2Y2M1; }"},
      // asinh(z) for finite nonzero z, as glibc's __kernel_casinh; with `adj`, the imaginary part
      // is pi/2 less it (acos and acosh from it).
      {"kiln_kcasinh",
       "$C kiln_kcasinh($C z, int adj) {\n"
       "  $T rx = fabs(z.x), ix = fabs(z.y), re, im;\n"
       "  if (rx >= 1 / $EPS || ix >= 1 / $EPS) {\n"
       // z + sqrt(1 + z^2) is 2z to the type's precision.
       "    $C l = kiln_clog(adj ? kiln_cx(copysign(ix, z.y), rx) : kiln_cx(rx, ix));\n"
       "    re = l.x + $LN2; im = l.y;\n"
       "  } else if (rx >= ($T)0.5 && ix < $EPS / 8) {\n"
       "    $T s = hypot(($T)1, rx);\n"
       "    re = log(rx + s);\n"
       "    im = adj ? atan2(s, z.y) : atan2(ix, s);\n"
       "  } else if (rx < $EPS / 8 && ix >= ($T)1.5) {\n"
       "    $T s = sqrt((ix + 1) * (ix - 1));\n"
       "    re = log(ix + s);\n"
       "    im = adj ? atan2(rx, copysign(s, z.y)) : atan2(s, rx);\n"
       "  } else if (ix > 1 && ix < ($T)1.5 && rx < ($T)0.5) {\n"
       "    $T ix2m1 = (ix + 1) * (ix - 1);\n"
       "    if (rx < $EPS * $EPS) {\n"
       "      $T s = sqrt(ix2m1);\n"
       "      re = log1p(2 * (ix2m1 + ix * s)) / 2;\n"
       "      im = adj ? atan2(rx, copysign(s, z.y)) : atan2(s, rx);\n"
       "    } else {\n"
       "      $T rx2 = rx * rx, f = rx2 * (2 + rx2 + 2 * ix * ix);\n"
       "      $T d = sqrt(ix2m1 * ix2m1 + f), dp = d + ix2m1, dm = f / dp;\n"
       "      $T r1 = sqrt((dm + rx2) / 2), r2 = rx * ix / r1;\n"
       "      re = log1p(rx2 + dp + 2 * (rx * r1 + ix * r2)) / 2;\n"
       "      im = adj ? atan2(rx + r1, copysign(ix + r2, z.y)) : atan2(ix + r2, rx + r1);\n"
       "    }\n"
       "  } else if (ix == 1 && rx < ($T)0.5) {\n"
       "    if (rx < $EPS / 8) {\n"
       "      $T s = sqrt(rx);\n"
       "      re = log1p(2 * (rx + s)) / 2;\n"
       "      im = adj ? atan2(s, copysign(($T)1, z.y)) : atan2(($T)1, s);\n"
       "    } else {\n"
       "      $T d = rx * sqrt(4 + rx * rx), s1 = sqrt((d + rx * rx) / 2),\n"
       "         s2 = sqrt((d - rx * rx) / 2);\n"
       "      re = log1p(rx * rx + d + 2 * (rx * s1 + s2)) / 2;\n"
       "      im = adj ? atan2(rx + s1, copysign(1 + s2, z.y)) : atan2(1 + s2, rx + s1);\n"
       "    }\n"
       "  } else if (ix < 1 && rx < ($T)0.5) {\n"
       "    if (ix < $EPS) {\n"
       "      $T s = hypot(($T)1, rx);\n"
       "      re = log1p(2 * rx * (rx + s)) / 2;\n"
       "      im = adj ? atan2(s, z.y) : atan2(ix, s);\n"
       "    } else if (rx < $EPS * $EPS) {\n"
       "      $T s = sqrt((1 + ix) * (1 - ix));\n"
       "      re = log1p(2 * rx / s) / 2;\n"
       "      im = adj ? atan2(s, z.y) : atan2(ix, s);\n"
       "    } else {\n"
       "      $T onemix2 = (1 + ix) * (1 - ix), rx2 = rx * rx, f = rx2 * (2 + rx2 + 2 * ix * ix);\n"
       "      $T d = sqrt(onemix2 * onemix2 + f), dp = d + onemix2, dm = f / dp;\n"
       "      $T r1 = sqrt((dp + rx2) / 2), r2 = rx * ix / r1;\n"
       "      re = log1p(rx2 + dm + 2 * (rx * r1 + ix * r2)) / 2;\n"
       "      im = adj ? atan2(rx + r1, copysign(ix + r2, z.y)) : atan2(ix + r2, rx + r1);\n"
       "    }\n"
       "  } else {\n"
       // log(z + sqrt(1 + z^2)) in the first quadrant.
       "    $C w = kiln_csqrt(kiln_cx((rx - ix) * (rx + ix) + 1, 2 * rx * ix));\n"
       "    w = kiln_cx(w.x + rx, w.y + ix);\n"
       "    $C l = kiln_clog(adj ? kiln_cx(copysign(w.y, z.y), w.x) : w);\n"
       "    re = l.x; im = l.y;\n"
       "  }\n"
       "  return kiln_cx(copysign(re, z.x), copysign(im, adj ? ($T)1 : z.y));\n}"},
      {"kiln_casinh",
       "$C kiln_casinh($C z) {\n"
       "  $T x = z.x, y = z.y;\n"
       "  if (isinf(y))\n"
       "    return kiln_cx(copysign($INF, x), isnan(x) ? $NAN : copysign(isinf(x) ? $PI_4 : $PI_2, y));\n"
       "  if (!isfinite(x))\n"
       "    return kiln_cx(x, (isinf(x) && !isnan(y)) || (isnan(x) && y == 0) ? copysign(($T)0, y) : $NAN);\n"
       "  if (isnan(y)) return kiln_cx($NAN, $NAN);\n"
       "  if (x == 0 && y == 0) return z;\n"
       "  return kiln_kcasinh(z, 0);\n}"},
      {"kiln_casin",
       "$C kiln_casin($C z) {\n"
       "  if (isnan(z.x) || isnan(z.y)) {\n"
       "    if (z.x == 0) return z;\n"
       "    return kiln_cx($NAN, isinf(z.x) || isinf(z.y) ? copysign($INF, z.y) : $NAN);\n"
       "  }\n"
       "  $C w = kiln_casinh(kiln_cx(-z.y, z.x));\n"
       "  return kiln_cx(w.y, -w.x);\n}"},
      {"kiln_cacos",
       "$C kiln_cacos($C z) {\n"
       "  if (!isfinite(z.x) || !isfinite(z.y) || (z.x == 0 && z.y == 0)) {\n"
       "    $C w = kiln_casin(z);\n"
       "    $T re = $PI_2 - w.x;\n"
       "    return kiln_cx(re == 0 ? ($T)0 : re, -w.y);\n"
       "  }\n"
       "  $C w = kiln_kcasinh(kiln_cx(-z.y, z.x), 1);\n"
       "  return kiln_cx(w.y, w.x);\n}"},
      {"kiln_cacosh",
       "$C kiln_cacosh($C z) {\n"
       "  $T x = z.x, y = z.y;\n"
       "  if (isinf(y)) {\n"
       "    $T angle = isinf(x) ? (x < 0 ? $PI_3_4 : $PI_4) : $PI_2;\n"
       "    return kiln_cx($INF, isnan(x) ? $NAN : copysign(angle, y));\n"
       "  }\n"
       "  if (isinf(x)) return kiln_cx($INF, isnan(y) ? $NAN : copysign(signbit(x) ? $PI : ($T)0, y));\n"
       "  if (isnan(x) || isnan(y)) return kiln_cx($NAN, x == 0 ? $PI_2 : $NAN);\n"
       "  if (x == 0 && y == 0) return kiln_cx(($T)0, copysign($PI_2, y));\n"
       "  $C w = kiln_kcasinh(kiln_cx(-y, x), 1);\n"
       "  return signbit(y) ? kiln_cx(w.x, -w.y) : kiln_cx(-w.x, w.y);\n}"},
      {"kiln_catanh",
       "$C kiln_catanh($C z) {\n"
       "  $T x = z.x, y = z.y, re, im;\n"
       "  if (isinf(y)) return kiln_cx(copysign(($T)0, x), copysign($PI_2, y));\n"
       "  if (isinf(x) || (x == 0 && isnan(y)))\n"
       "    return kiln_cx(copysign(($T)0, x), isnan(y) ? $NAN : copysign($PI_2, y));\n"
       "  if (isnan(x) || isnan(y)) return kiln_cx($NAN, $NAN);\n"
       "  if (x == 0 && y == 0) return z;\n"
       "  if (fabs(x) >= 16 / $EPS || fabs(y) >= 16 / $EPS) {\n"
       "    if (fabs(y) <= 1) re = 1 / x;\n"
       "    else if (fabs(x) <= 1) re = x / y / y;\n"
       "    else { $T h = hypot(x / 2, y / 2); re = x / h / h / 4; }\n"
       "    return kiln_cx(re, copysign($PI_2, y));\n"
       "  }\n"
       "  if (fabs(x) == 1 && fabs(y) < $EPS * $EPS) {\n"
       "    re = copysign(($T)0.5, x) * ($LN2 - log(fabs(y)));\n"
       "  } else {\n"
       "    $T y2 = fabs(y) >= $EPS * $EPS ? y * y : ($T)0;\n"
       "    $T num = 1 + x, den = 1 - x;\n"
       "    num = y2 + num * num;\n"
       "    den = y2 + den * den;\n"
       "    re = num / den < ($T)0.5 ? ($T)0.25 * log(num / den) : ($T)0.25 * log1p(4 * x / den);\n"
       "  }\n"
       // 1 - |z|^2, without cancellation where it is small.
       "  $T big = fmax(fabs(x), fabs(y)), small = fmin(fabs(x), fabs(y)), den;\n"
       "  if (small < $EPS / 2) { den = (1 - big) * (1 + big); if (den == 0) den = 0; }\n"
       "  else if (big < 1 && (big >= ($T)0.75 || small >= ($T)0.5)) den = -kiln_x2y2m1(big, small);\n"
       "  else den = (1 - big) * (1 + big) - small * small;\n"
       "  im = ($T)0.5 * atan2(2 * y, den);\n"
       "  return kiln_cx(re, im);\n}"},
      // glibc's catan is its catanh with the parts exchanged.
      {"kiln_catan",
       "$C kiln_catan($C z) {\n"
       "  $C w = kiln_catanh(kiln_cx(z.y, z.x));\n"
       "  return kiln_cx(w.y, w.x);\n}"},
      // A pair of sin(v) and cos(v) that glibc takes as (v, 1) for |v| at most the smallest normal.
      {"kiln_csincos",
       "$C kiln_csincos($T v) {\n"
       "  return fabs(v) > $MIN ? kiln_cx(sin(v), cos(v)) : kiln_cx(v, ($T)1);\n}"},
      // e^|v| (s, c) without overflowing before the product does, for |v| > t: e^t taken into the
      // factors (halved: sinh and cosh are e^|v| / 2 there) up to twice, then $MAX past 3t.
      {"kiln_cscaled",
       "$C kiln_cscaled($T v, $T s, $T c) {\n"
       "  const $T t = $EXP_LIMIT, e = exp(t);\n"
       "  v = fabs(v) - t; s *= e / 2; c *= e / 2;\n"
       "  if (v > t) { v -= t; s *= e; c *= e; }\n"
       "  if (v > t) return kiln_cx($MAX * s, $MAX * c);\n"
       "  $T ev = exp(v);\n"
       "  return kiln_cx(ev * s, ev * c);\n}"},
      {"kiln_csinh",
       "$C kiln_csinh($C z) {\n"
       "  $T y = z.y;\n"
       "  int negate = signbit(z.x);\n"
       "  $T x = fabs(z.x);\n"
       "  if (isfinite(x)) {\n"
       "    if (!isfinite(y)) return x == 0 ? kiln_cx(negate ? -($T)0 : ($T)0, y - y) : kiln_cx($NAN, $NAN);\n"
       "    $C sc = kiln_csincos(y);\n"
       "    $T c = negate ? -sc.y : sc.y;\n"
       "    if (x > $EXP_LIMIT) return kiln_cscaled(x, c, sc.x);\n"
       "    return kiln_cx(sinh(x) * c, cosh(x) * sc.x);\n"
       "  }\n"
       "  if (isinf(x)) {\n"
       "    if (y == 0) return kiln_cx(negate ? -$INF : $INF, y);\n"
       "    if (!isfinite(y)) return kiln_cx($INF, y - y);\n"
       "    $C sc = kiln_csincos(y);\n"
       "    $T re = copysign($INF, sc.y);\n"
       "    return kiln_cx(negate ? -re : re, copysign($INF, sc.x));\n"
       "  }\n"
       "  return kiln_cx($NAN, y == 0 ? y : $NAN);\n}"},
      {"kiln_ccosh",
       "$C kiln_ccosh($C z) {\n"
       "  $T x = z.x, y = z.y;\n"
       "  if (isfinite(x)) {\n"
       "    if (!isfinite(y)) return kiln_cx(y - y, x == 0 ? ($T)0 : $NAN);\n"
       "    $C sc = kiln_csincos(y);\n"
       "    if (fabs(x) > $EXP_LIMIT)\n"
       "      return kiln_cscaled(x, sc.y, signbit(x) ? -sc.x : sc.x);\n"
       "    return kiln_cx(cosh(x) * sc.y, sinh(x) * sc.x);\n"
       "  }\n"
       "  if (isinf(x)) {\n"
       "    if (y == 0) return kiln_cx($INF, y * copysign(($T)1, x));\n"
       "    if (!isfinite(y)) return kiln_cx($INF, y - y);\n"
       "    $C sc = kiln_csincos(y);\n"
       "    return kiln_cx(copysign($INF, sc.y), copysign($INF, sc.x) * copysign(($T)1, x));\n"
       "  }\n"
       "  return kiln_cx($NAN, y == 0 ? y : $NAN);\n}"},
      {"kiln_ccos", "$C kiln_ccos($C z) { return kiln_ccosh(kiln_cx(-z.y, z.x)); }"},
      {"kiln_csin",
       "$C kiln_csin($C z) {\n"
       "  $T y = z.y;\n"
       "  int negate = signbit(z.x);\n"
       "  $T x = fabs(z.x);\n"
       "  if (isfinite(y)) {\n"
       "    if (!isfinite(x)) return y == 0 ? kiln_cx(x - x, y) : kiln_cx($NAN, $NAN);\n"
       "    $C sc = kiln_csincos(x);\n"
       "    $T s = negate ? -sc.x : sc.x;\n"
       "    if (fabs(y) > $EXP_LIMIT)\n"
       "      return kiln_cscaled(y, s, signbit(y) ? -sc.y : sc.y);\n"
       "    return kiln_cx(cosh(y) * s, sinh(y) * sc.y);\n"
       "  }\n"
       "  if (isinf(y)) {\n"
       "    if (x == 0) return kiln_cx(negate ? -($T)0 : ($T)0, y);\n"
       "    if (!isfinite(x)) return kiln_cx(x - x, $INF);\n"
       "    $C sc = kiln_csincos(x);\n"
       "    $T re = copysign($INF, sc.x), im = copysign($INF, sc.y);\n"
       "    return kiln_cx(negate ? -re : re, signbit(y) ? -im : im);\n"
       "  }\n"
       "  return kiln_cx(x == 0 ? (negate ? -($T)0 : ($T)0) : $NAN, $NAN);\n}"},
      // tanh(x + iy) = (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y); past t/2 the real
      // part is +-1 and the imaginary part 4 sin y cos y / e^2|x|, divided in steps.
      {"kiln_ctanh",
       "$C kiln_ctanh($C z) {\n"
       "  $T x = z.x, y = z.y;\n"
       "  if (!isfinite(x) || !isfinite(y)) {\n"
       "    if (isinf(x)) {\n"
       "      $T im = copysign(($T)0, y);\n"
       "      if (isfinite(y) && fabs(y) > 1) im = copysign(($T)0, sin(y) * cos(y));\n"
       "      return kiln_cx(copysign(($T)1, x), im);\n"
       "    }\n"
       "    if (y == 0) return z;\n"
       "    return kiln_cx(x == 0 ? x : $NAN, $NAN);\n"
       "  }\n"
       "  const $T t = $EXP_LIMIT_HALF;\n"
       "  $C sc = kiln_csincos(y);\n"
       "  if (fabs(x) > t) {\n"
       "    $T e = exp(2 * t), im = 4 * sc.x * sc.y, rest = fabs(x) - t;\n"
       "    im /= e;\n"
       "    im /= rest > t ? e : exp(2 * rest);\n"
       "    return kiln_cx(copysign(($T)1, x), im);\n"
       "  }\n"
       "  $T sh = x, ch = 1;\n"
       "  if (fabs(x) > $MIN) { sh = sinh(x); ch = cosh(x); }\n"
       "  $T den = fabs(sh) > fabs(sc.y) * $EPS ? sh * sh + sc.y * sc.y : sc.y * sc.y;\n"
       "  return kiln_cx(sh * ch / den, sc.x * sc.y / den);\n}"},
      // glibc's ctan is its ctanh with the parts exchanged.
      {"kiln_ctan",
       "$C kiln_ctan($C z) {\n"
       "  $C w = kiln_ctanh(kiln_cx(z.y, z.x));\n"
       "  return kiln_cx(w.y, w.x);\n}"},
      {"kiln_csigmoid",
       "$C kiln_csigmoid($C x) {\n"
       "  $C one = kiln_cx(($T)1, ($T)0);\n"
       "  return kiln_cdiv(one, kiln_cadd(one, kiln_cexp(kiln_cneg(x))));\n}"},
  };
  return helpers;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// `v` as a literal of the part type (hexadecimal: exact).
std::string exact(double v, bool wide) {
  char text[48];
  std::snprintf(text, sizeof text, "%a%s", v, wide ? "" : "f");
  return text;
}

bool names(const std::string& text, std::string_view helper) {
  return text.find(std::string(helper) + "(") != std::string::npos;
}

}  // namespace

std::string complex_helpers_for(const std::string& text, const Dialect& d, bool f64) {
  const auto& helpers = complex_helpers();
  std::vector<bool> called(helpers.size());
  std::string calls = text;
  for (std::size_t i = helpers.size(); i-- > 0;) {
    called[i] = names(calls, helpers[i].name);
    if (called[i]) calls += helpers[i].definition + helpers[i].wide;
  }
  std::string out;
  for (const bool wide : {false, true}) {
    if (wide && !f64) continue;
    const DType part = wide ? DType::f64 : DType::f32, complex = wide ? DType::c128 : DType::c64;
    const std::string C(d.type(complex)), T(d.type(part));
    const std::string make_args[] = {C, "re", "im"};
    auto limits = [&](auto zero) {
      using L = std::numeric_limits<decltype(zero)>;
      return std::array<std::string, 3>{exact(L::max(), wide), exact(L::min(), wide),
                                        exact(L::epsilon(), wide)};
    };
    const auto [max, min, eps] = wide ? limits(0.0) : limits(0.0f);
    // c64 quotients in double where the device has it (as libgcc on hardware with doubles),
    // else by Smith's method in float (as libgcc without); the same for |z|^2 - 1.
    const bool in_double = !wide && d.double_arithmetic;
    for (std::size_t i = 0; i < helpers.size(); ++i) {
      if (!called[i]) continue;
      const bool smith = helpers[i].name == "kiln_cdiv" && !in_double;
      std::string s(wide || smith ? (helpers[i].wide.empty() ? helpers[i].definition : helpers[i].wide)
                                  : helpers[i].definition);
      s = replace_all(std::move(s), "$MAKE", fill_template(d.make_complex, make_args));
      s = replace_all(std::move(s), "$INF", "(" + T + ")" + std::string(d.infinity));
      s = replace_all(std::move(s), "$NAN", "(" + T + ")" + std::string(d.nan));
      s = replace_all(std::move(s), "$MAX", max);
      s = replace_all(std::move(s), "$MIN", min);
      s = replace_all(std::move(s), "$EPS", eps);
      s = replace_all(std::move(s), "$X2Y2M1",
                      in_double ? "($T)((double)big * big + (double)small * small - 1.0)"
                                : "fma(small, small, fma(big, big, ($T)-1))");
      s = replace_all(std::move(s), "$LN2", exact(0.69314718055994530942, wide));
      constexpr double pi = std::numbers::pi;
      s = replace_all(std::move(s), "$PI_3_4",
                      wide ? exact(pi - pi / 4, true)
                           : exact(static_cast<float>(pi) - static_cast<float>(pi / 4), false));
      s = replace_all(std::move(s), "$PI_2", exact(pi / 2, wide));
      s = replace_all(std::move(s), "$PI_4", exact(pi / 4, wide));
      s = replace_all(std::move(s), "$PI", exact(pi, wide));
      s = replace_all(std::move(s), "$LN10",
                      wide ? exact(std::log(10.0), true) : exact(std::log(10.0f), false));
      // (digits + 1) / 2: the scale that brings tiny parts to normal values with room to spare.
      // The whole part of ln(largest finite value).
      s = replace_all(std::move(s), "$EXP_LIMIT_HALF", wide ? "($T)354" : "($T)44");
      s = replace_all(std::move(s), "$EXP_LIMIT", wide ? "($T)709" : "($T)88");
      s = replace_all(std::move(s), "$HALF_DIGITS", std::to_string(wide ? 27 : 12));
      s = replace_all(std::move(s), "$MANT_DIG", std::to_string(wide ? 53 : 24));
      s = replace_all(std::move(s), "$SCALE_UP", exact(wide ? 0x1p53 : 0x1p24, wide));
      s = replace_all(std::move(s), "$C", C);
      s = replace_all(std::move(s), "$T", T);
      out += std::string(d.function) + " " + s + "\n";
    }
  }
  return out;
}

}  // namespace kiln::detail::codegen
