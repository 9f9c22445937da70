// Radiance HDR (RGBE): linear RGB, 3 channels, values not clamped.
//
// The header is text lines up to an empty line; FORMAT must say 32-bit_rle_rgbe. The resolution
// line follows ("-Y <height> +X <width>", rows top to bottom, the only orientation read). Each
// scanline is flat (4 bytes a pixel: R, G, B and a shared exponent) or, for widths 8 to 32767,
// run-length coded one component plane at a time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

// Real headers hold short lines; a bound keeps a file of one endless line from being scanned as
// a header line to its end.
constexpr std::size_t kMaxLineBytes = 4096;
constexpr std::uint64_t kMaxSide = 0x7FFFFFFF;
// The widths a scanline can be run-length coded at: the coding's marker holds the width in 15
// bits, and narrower lines are always flat.
constexpr std::uint64_t kMinRunWidth = 8;
constexpr std::uint64_t kMaxRunWidth = 32767;
// The longest run (count byte 255) and literal (count byte 128) of the coding.
constexpr std::uint64_t kMaxRun = 127;
constexpr std::uint64_t kMaxLiteral = 128;

// The next header line without its '\n' (and a '\r' before it), read within kMaxLineBytes.
std::string_view read_line(Bytes file, Cursor& in, const char* what) {
  const std::size_t start = in.position();
  const std::size_t limit = std::min<std::size_t>(in.remaining(), kMaxLineBytes + 1);
  for (std::size_t n = 0; n < limit; ++n) {
    if (file[start + n] == '\n') {
      in.skip(n + 1, what);
      std::string_view line(reinterpret_cast<const char*>(file.data() + start), n);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      return line;
    }
  }
  if (limit > kMaxLineBytes)
    throw ImageError(std::string("the header has a line longer than ") +
                     std::to_string(kMaxLineBytes) + " bytes (in " + what + ")");
  throw ImageError(std::string("the file is truncated: it ends inside ") + what);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads the spaces (at least one when `required`) at the front of `text`.
bool skip_spaces(std::string_view& text, bool required) {
  std::size_t n = 0;
  while (n < text.size() && (text[n] == ' ' || text[n] == '\t')) ++n;
  text.remove_prefix(n);
  return n > 0 || !required;
}

// A decimal number of at most ten digits and at most kMaxSide at the front of `text`.
std::uint64_t read_side(std::string_view& text, const char* field) {
  std::uint64_t value = 0;
  std::size_t digits = 0;
  while (digits < text.size() && is_digit(text[digits])) {
    if (digits == 10)
      throw ImageError(std::string("the resolution line's ") + field +
                       " has more than 10 digits");
    // At most ten digits: below 10^10, far inside 64 bits.
    value = value * 10 + static_cast<std::uint64_t>(text[digits] - '0');
    ++digits;
  }
  if (digits == 0)
    throw ImageError(std::string("the resolution line's ") + field + " is not a number");
  if (value > kMaxSide)
    throw ImageError(std::string("the resolution line's ") + field + " " +
                     std::to_string(value) + " is above " + std::to_string(kMaxSide));
  text.remove_prefix(digits);
  return value;
}

struct Resolution {
  std::uint64_t width = 0;
  std::uint64_t height = 0;
};

// "-Y <height> +X <width>"; the other seven orientations are refused.
Resolution parse_resolution(std::string_view line) {
  const std::string shown = "the resolution line '" + printable(line.substr(0, 80)) + "'";
  const std::string expected = shown + " is not '-Y <height> +X <width>'";
  std::string_view text = line;
  // The axis sign and letter, then at least one space.
  const auto expect_axis = [&](std::string_view axis) {
    if (text.substr(0, 2) == axis) {
      text.remove_prefix(2);
      if (!skip_spaces(text, true)) throw ImageError(expected);
      return;
    }
    // Another sign or axis order is a valid file kiln does not read: say so, not "corrupt".
    if (text.size() >= 2 && (text[0] == '+' || text[0] == '-') &&
        (text[1] == 'X' || text[1] == 'Y'))
      throw ImageError(shown + " gives an orientation kiln does not read (only -Y <height> "
                       "+X <width>: rows top to bottom, pixels left to right)");
    throw ImageError(expected);
  };
  Resolution r;
  skip_spaces(text, false);
  expect_axis("-Y");
  r.height = read_side(text, "height");
  if (!skip_spaces(text, true)) throw ImageError(expected);
  expect_axis("+X");
  r.width = read_side(text, "width");
  skip_spaces(text, false);
  if (!text.empty()) throw ImageError(shown + " has text after the width");
  return r;
}

// The signature, the header lines and the resolution line; the cursor is left at the pixels.
Resolution read_header(Bytes file, Cursor& in) {
  const std::string_view signature = read_line(file, in, "the signature line");
  if (signature != "#?RADIANCE" && signature != "#?RGBE")
    throw ImageError("not a Radiance HDR file (the first line is not #?RADIANCE or #?RGBE)");
  bool has_format = false;
  for (;;) {
    const std::string_view line = read_line(file, in, "the header");
    if (line.empty()) break;
    if (line.substr(0, 7) != "FORMAT=") continue;
    const std::string_view format = line.substr(7);
    if (format == "32-bit_rle_xyze")
      throw ImageError("the pixels are CIE XYZ (FORMAT=32-bit_rle_xyze); only RGBE is read");
    if (format != "32-bit_rle_rgbe")
      throw ImageError("the header's FORMAT '" + printable(format.substr(0, 80)) +
                       "' is not 32-bit_rle_rgbe");
    has_format = true;
  }
  if (!has_format) throw ImageError("the header has no FORMAT line (32-bit_rle_rgbe expected)");
  return parse_resolution(read_line(file, in, "the resolution line"));
}

float component(std::uint8_t mantissa, std::uint8_t exponent) {
  // Exponent 0 stands for black; otherwise the value is mantissa / 256 * 2^(exponent - 128).
  // The result lies between 2^-135 and 255 * 2^119, which f32 holds exactly.
  return exponent == 0 ? 0.0f : std::ldexp(static_cast<float>(mantissa), exponent - 136);
}

void write_pixel(float* out, const std::uint8_t* rgbe) {
  out[0] = component(rgbe[0], rgbe[3]);
  out[1] = component(rgbe[1], rgbe[3]);
  out[2] = component(rgbe[2], rgbe[3]);
}

void read_flat_scanline(Cursor& in, std::uint64_t width, float* out) {
  const std::uint8_t* p = in.take(width * 4, "the pixels (a flat scanline)");
  for (std::uint64_t x = 0; x < width; ++x, p += 4, out += 3) {
    // 1,1,1,n marks the old run-length coding (repeat the previous pixel); a normalised RGBE
    // pixel has a component of at least 128, so this is never a colour. Its repeat counts grow
    // without bound over consecutive markers, so it is refused rather than expanded.
    if (p[0] == 1 && p[1] == 1 && p[2] == 1)
      throw ImageError("the pixels use the old Radiance run-length coding, which kiln does not "
                       "read");
    write_pixel(out, p);
  }
}

// One run-length coded scanline (after its 2,2,hi,lo marker) into `planes` (4 * width bytes).
void read_rle_scanline(Cursor& in, std::uint64_t width, std::uint64_t y,
                       std::vector<std::uint8_t>& planes, float* out) {
  static constexpr const char* kWhat = "the run-length coded pixels";
  for (std::uint64_t c = 0; c < 4; ++c) {
    std::uint8_t* plane = planes.data() + c * width;
    std::uint64_t x = 0;
    while (x < width) {
      const std::uint8_t count = in.u8(kWhat);
      const bool run = count > kMaxLiteral;
      const std::uint64_t n = run ? count - kMaxLiteral : count;
      if (n == 0)
        throw ImageError("scanline " + std::to_string(y) + " has an empty literal run (count 0)");
      if (n > width - x)
        throw ImageError("scanline " + std::to_string(y) + " has a " +
                         (run ? "run" : "literal") + " of " + std::to_string(n) +
                         " bytes at x = " + std::to_string(x) + " of component " +
                         std::to_string(c) + ", crossing the scanline's width of " +
                         std::to_string(width));
      if (run) {
        const std::uint8_t value = in.u8(kWhat);
        for (std::uint64_t i = 0; i < n; ++i) plane[x + i] = value;
      } else {
        const std::uint8_t* p = in.take(n, kWhat);
        for (std::uint64_t i = 0; i < n; ++i) plane[x + i] = p[i];
      }
      x += n;
    }
  }
  for (std::uint64_t x = 0; x < width; ++x, out += 3) {
    const std::uint8_t rgbe[4] = {planes[x], planes[width + x], planes[2 * width + x],
                                  planes[3 * width + x]};
    write_pixel(out, rgbe);
  }
}

}  // namespace

void decode_hdr(Bytes file, Canvas& canvas) {
  Cursor in(file);
  const Resolution r = read_header(file, in);
  const std::uint64_t width = r.width, height = r.height;
  const bool may_run = width >= kMinRunWidth && width <= kMaxRunWidth;

  // The fewest bytes a scanline can take: 4 a pixel flat; coded, its 4-byte marker and, for each
  // of the 4 planes, 2 bytes per run of up to 127. width * height < 2^62, so the products below
  // stay in 64 bits; the comparison divides instead of multiplying further.
  const std::uint64_t flat_line = width * 4;
  const std::uint64_t coded_line = 4 + 4 * 2 * ((width + kMaxRun - 1) / kMaxRun);
  const std::uint64_t min_line = may_run ? std::min(flat_line, coded_line) : flat_line;
  if (min_line != 0 && height > in.remaining() / min_line)
    throw ImageError("the file is truncated: the header claims " + std::to_string(width) + " x " +
                     std::to_string(height) + " pixels, which need at least " +
                     std::to_string(min_line) + " bytes a scanline, and " +
                     std::to_string(in.remaining()) + " bytes follow the header");
  // Flat, 4 bytes make 3 values. Coded, the densest code is a 2-byte run of 127 bytes of one
  // plane; 4 plane bytes make a pixel of 3 values, so 2 bytes make at most 127 * 3 / 4 values:
  // 47.6 a byte, rounded up.
  const std::uint64_t values_per_byte = may_run ? (kMaxRun * 3 + 7) / 8 : 1;
  float* out = canvas.allocate(height, width, 3, in.remaining(), values_per_byte);

  std::vector<std::uint8_t> planes;
  if (may_run) planes.resize(static_cast<std::size_t>(width * 4));
  for (std::uint64_t y = 0; y < height; ++y) {
    float* row = out + y * width * 3;
    if (may_run && in.remaining() >= 4) {
      // Peek at the first 4 bytes: 2, 2 and a width below 2^15 mark a coded scanline, which
      // is never a normalised flat pixel.
      Cursor ahead = in;
      const std::uint8_t* m = ahead.take(4, "a scanline");
      if (m[0] == 2 && m[1] == 2 && (m[2] & 0x80) == 0) {
        const std::uint64_t coded_width = std::uint64_t{m[2]} << 8 | m[3];
        if (coded_width != width)
          throw ImageError("scanline " + std::to_string(y) + " is coded for width " +
                           std::to_string(coded_width) + ", not the image's " +
                           std::to_string(width));
        in = ahead;
        read_rle_scanline(in, width, y, planes, row);
        continue;
      }
    }
    read_flat_scanline(in, width, row);
  }
}

}  // namespace kiln::data::images
