// Binary PNM: P5 (greyscale, 1 channel) and P6 (RGB, 3 channels), 8- or 16-bit samples.
//
// The header is text: the magic number, then width, height and maxval as decimal numbers between
// whitespace and '#' comments, then a single whitespace byte before the raw samples. Every number
// is parsed with a digit limit, so a header of endless digits is an error and never an overflow.
#include <cstdint>
#include <string>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

// Ten digits hold every value up to 2^31 - 1, the largest any field may have.
constexpr int kMaxDigits = 10;
constexpr std::uint64_t kMaxSide = 0x7FFFFFFF;
constexpr std::uint64_t kMaxMaxval = 65535;

bool is_space(std::uint8_t b) {
  return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r';
}
bool is_digit(std::uint8_t b) { return b >= '0' && b <= '9'; }

std::string hex_byte(std::uint8_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 0xF];
}

// The byte at the cursor, which the caller has checked exists.
std::uint8_t peek(Bytes file, const Cursor& in) { return file[in.position()]; }

// Skips the whitespace and comments that may come before a header number.
void skip_separators(Bytes file, Cursor& in, const std::string& field) {
  for (;;) {
    if (in.at_end())
      throw ImageError("the file is truncated: it ends before the " + field + " in the header");
    const std::uint8_t b = peek(file, in);
    if (is_space(b)) {
      in.u8("the header");
    } else if (b == '#') {
      // A comment runs to the end of its line; a file ending inside it ends inside the header.
      while (in.u8("a header comment") != '\n') {
      }
    } else {
      return;
    }
  }
}

// A decimal header field of at most kMaxDigits digits and at most `max`.
std::uint64_t read_number(Bytes file, Cursor& in, const std::string& field, std::uint64_t max) {
  skip_separators(file, in, field);
  std::uint64_t value = 0;
  int digits = 0;
  while (!in.at_end() && is_digit(peek(file, in))) {
    if (++digits > kMaxDigits)
      throw ImageError("the header's " + field + " has more than " + std::to_string(kMaxDigits) +
                       " digits");
    // At most ten digits: below 10^10, far inside 64 bits.
    value = value * 10 + (in.u8("the header") - std::uint64_t{'0'});
  }
  if (digits == 0) {
    if (in.at_end())
      throw ImageError("the file is truncated: it ends before the " + field + " in the header");
    throw ImageError("the header's " + field + " is not a decimal number (byte " +
                     hex_byte(peek(file, in)) + " found)");
  }
  if (value > max)
    throw ImageError("the header's " + field + " " + std::to_string(value) + " is above " +
                     std::to_string(max));
  return value;
}

}  // namespace

void decode_pnm(Bytes file, Canvas& canvas) {
  Cursor in(file);
  const std::uint8_t* magic = in.take(2, "the PNM magic number");
  if (magic[0] != 'P' || (magic[1] != '5' && magic[1] != '6'))
    throw ImageError("not a binary PNM file (P5 or P6 expected)");
  const int channels = magic[1] == '5' ? 1 : 3;

  // The magic number is taken as a token of its own even without whitespace after it, as stb
  // did; the width's digits then follow directly.
  const std::uint64_t width = read_number(file, in, "width", kMaxSide);
  const std::uint64_t height = read_number(file, in, "height", kMaxSide);
  const std::uint64_t maxval = read_number(file, in, "maxval", kMaxSide);
  if (maxval < 1 || maxval > kMaxMaxval)
    throw ImageError("the header's maxval " + std::to_string(maxval) +
                     " is outside 1 to 65535");
  if (!is_space(in.u8("the header, after maxval")))
    throw ImageError("the header's maxval is not followed by a whitespace byte");

  const std::uint64_t sample_bytes = maxval < 256 ? 1 : 2;
  // width * height < 2^62; dividing the remaining bytes instead of multiplying further keeps the
  // comparison exact without overflow.
  const std::uint64_t bytes_per_pixel = sample_bytes * static_cast<std::uint64_t>(channels);
  if (width * height > in.remaining() / bytes_per_pixel)
    throw ImageError("the file is truncated: the header claims " + std::to_string(width) + " x " +
                     std::to_string(height) + " pixels of " + std::to_string(bytes_per_pixel) +
                     (bytes_per_pixel == 1 ? " byte" : " bytes") + " each, and " +
                     std::to_string(in.remaining()) + " bytes follow the header");

  float* out = canvas.allocate(height, width, channels, in.remaining(), 1);
  const std::uint64_t count = width * height * static_cast<std::uint64_t>(channels);
  const std::uint8_t* samples = in.take(count * sample_bytes, "the samples");
  const auto scale = static_cast<float>(maxval);
  // A sample above maxval breaks the format's rule; it is clamped to 1 rather than refused, as
  // the value it stands for is unambiguous (full intensity).
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint32_t s = sample_bytes == 1
                                ? std::uint32_t{samples[i]}
                                : std::uint32_t{samples[2 * i]} << 8 | samples[2 * i + 1];
    out[i] = s >= maxval ? 1.0f : static_cast<float>(s) / scale;
  }
}

}  // namespace kiln::data::images
