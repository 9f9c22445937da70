// Windows and OS/2 bitmaps (BMP): a 14-byte file header, an info header of 12 (OS/2 core), 40,
// 52, 56, 108 or 124 bytes, an optional palette or bit-field masks, then rows of pixels padded to
// 4 bytes, bottom row first unless the height is negative.
//
// Read: 1, 4 and 8 bits per pixel through a palette (RGB), 16 bits (5-5-5 by default), 24 bits
// (BGR) and 32 bits (BGRA), uncompressed or with bit-field masks. As stb_image did, the result
// is RGB, or RGBA where the pixels have an alpha field: 32-bit uncompressed pixels (their fourth
// byte) and bit fields with an alpha mask. An alpha field that is 0 in every pixel is taken as
// "no alpha written" (writers leave the reserved byte 0) and gives opaque pixels.
//
// Every size is bounded before any arithmetic (each side at most 2^24, so products fit 64 bits)
// and the whole pixel array must lie inside the file before the canvas is allocated, so a header
// cannot make the decoder allocate or read what the file does not hold.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

constexpr std::uint64_t kMaxSide = std::uint64_t{1} << 24;
constexpr std::uint64_t kFileHeaderBytes = 14;

// biCompression values.
constexpr std::uint32_t kRgb = 0;
constexpr std::uint32_t kRle8 = 1;
constexpr std::uint32_t kRle4 = 2;
constexpr std::uint32_t kBitFields = 3;
constexpr std::uint32_t kJpeg = 4;
constexpr std::uint32_t kPng = 5;
constexpr std::uint32_t kAlphaBitFields = 6;

std::string hex(std::uint32_t value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xFu];
  return out;
}

// One channel of a 16- or 32-bit pixel: where its bits are and the largest value they hold. A
// channel whose mask is 0 is absent and reads as 0.
struct Field {
  std::uint32_t mask = 0;
  int shift = 0;
  float max = 1.0f;

  std::uint32_t raw(std::uint32_t pixel) const { return (pixel & mask) >> shift; }
  float value(std::uint32_t pixel) const { return static_cast<float>(raw(pixel)) / max; }
};

Field field_of(std::uint32_t mask, int bits_per_pixel, const char* channel) {
  Field f;
  if (mask == 0) return f;
  const std::string name = std::string("the ") + channel + " mask " + hex(mask);
  if (bits_per_pixel < 32 && (mask >> bits_per_pixel) != 0)
    throw ImageError(name + " has bits outside the " + std::to_string(bits_per_pixel) +
                     "-bit pixels");
  f.shift = std::countr_zero(mask);
  const std::uint32_t bits = mask >> f.shift;
  // Contiguous ones plus one is a power of two (0 when all 32 bits are set).
  if ((bits & (bits + 1)) != 0) throw ImageError(name + " is not one contiguous run of bits");
  const int width = std::popcount(bits);
  // Wider fields carry no more than a f32 of [0, 1] keeps, and no real writer uses them.
  if (width > 16)
    throw ImageError(name + " is " + std::to_string(width) + " bits wide (at most 16 read)");
  f.mask = mask;
  f.max = static_cast<float>((std::uint32_t{1} << width) - 1);
  return f;
}

struct Header {
  std::uint32_t pixel_offset = 0;  // bfOffBits
  std::uint32_t info_size = 0;     // 12, 40, 52, 56, 108 or 124
  std::uint64_t width = 0;
  std::uint64_t height = 0;
  bool top_down = false;
  int bits = 0;
  std::uint32_t compression = kRgb;
  std::uint32_t colours_used = 0;
  std::array<std::uint32_t, 4> masks{};  // red, green, blue, alpha, as the file gives them
  std::uint64_t headers_end = 0;         // the first byte after the headers and any masks
};

void check_compression(std::uint32_t compression, int bits) {
  switch (compression) {
    case kRgb:
      return;
    case kBitFields:
    case kAlphaBitFields:
      if (bits != 16 && bits != 32)
        throw ImageError("bit-field masks with " + std::to_string(bits) +
                         " bits per pixel are not a BMP kiln reads (16 and 32 bits have masks)");
      return;
    case kRle8:
    case kRle4:
      throw ImageError(std::string("run-length coded BMP (") +
                       (compression == kRle8 ? "RLE8" : "RLE4") + ") is not supported");
    case kJpeg:
    case kPng:
      throw ImageError(std::string("a BMP holding a ") + (compression == kJpeg ? "JPEG" : "PNG") +
                       " image is not supported");
    default:
      throw ImageError("BMP compression " + std::to_string(compression) + " is not supported");
  }
}

void set_size(Header& h, std::int64_t width, std::int64_t height) {
  if (width == 0 || height == 0)
    throw ImageError("the header gives width " + std::to_string(width) + " and height " +
                     std::to_string(height) + "; an image needs at least one pixel");
  if (width < 0) throw ImageError("the header gives a negative width " + std::to_string(width));
  h.top_down = height < 0;
  h.width = static_cast<std::uint64_t>(width);
  // |height| of an int32 fits 64 bits, INT32_MIN included.
  h.height = static_cast<std::uint64_t>(height < 0 ? -height : height);
  if (h.width > kMaxSide || h.height > kMaxSide)
    throw ImageError("the header gives " + std::to_string(width) + " x " + std::to_string(height) +
                     " pixels; BMP sides beyond " + std::to_string(kMaxSide) + " are not read");
}

Header read_header(Bytes file) {
  if (file.size() < 2 || file[0] != 'B' || file[1] != 'M')
    throw ImageError("not a BMP file: it does not start with \"BM\"");
  Cursor c(file, 2);
  Header h;
  c.skip(8, "the file header");  // bfSize (often wrong, so unused) and two reserved fields
  h.pixel_offset = c.u32le("the file header");
  h.info_size = c.u32le("the info header");
  const char* info = "the info header";
  if (h.info_size == 12) {
    // OS/2 1.x core header: unsigned 16-bit sides, no compression, 3-byte palette entries.
    const std::int64_t width = c.u16le(info);
    const std::int64_t height = c.u16le(info);
    c.skip(2, info);  // planes
    h.bits = static_cast<int>(c.u16le(info));
    set_size(h, width, height);
  } else if (h.info_size == 40 || h.info_size == 52 || h.info_size == 56 || h.info_size == 108 ||
             h.info_size == 124) {
    // C++20 defines the conversion of the unsigned fields to their signed meaning.
    const std::int64_t width = static_cast<std::int32_t>(c.u32le(info));
    const std::int64_t height = static_cast<std::int32_t>(c.u32le(info));
    c.skip(2, info);  // planes
    h.bits = static_cast<int>(c.u16le(info));
    h.compression = c.u32le(info);
    c.skip(12, info);  // image size, resolution
    h.colours_used = c.u32le(info);
    c.skip(4, info);  // important colours
    set_size(h, width, height);
    // From the 52-byte header on, the masks are part of the header; a 40-byte header is followed
    // by them when the compression says so.
    const bool masks_follow =
        h.info_size == 40 && (h.compression == kBitFields || h.compression == kAlphaBitFields);
    const int masks = h.info_size >= 56   ? 4
                      : h.info_size == 52 ? 3
                      : masks_follow      ? (h.compression == kAlphaBitFields ? 4 : 3)
                                          : 0;
    for (int i = 0; i < masks; ++i) h.masks[static_cast<std::size_t>(i)] = c.u32le("the masks");
  } else {
    throw ImageError("a BMP info header of " + std::to_string(h.info_size) +
                     " bytes is not supported (12, 40, 52, 56, 108 and 124 are)");
  }
  check_compression(h.compression, h.bits);
  if (h.bits != 1 && h.bits != 4 && h.bits != 8 && h.bits != 16 && h.bits != 24 && h.bits != 32)
    throw ImageError(std::to_string(h.bits) +
                     " bits per pixel is not a BMP depth (1, 4, 8, 16, 24 and 32 are)");
  // The rest of a long header (colour space, gamma, ICC profile fields) is not used.
  h.headers_end = std::max<std::uint64_t>(c.position(), kFileHeaderBytes + h.info_size);
  return h;
}

// The four channels' fields: the file's masks with bit fields, else the fixed layouts.
std::array<Field, 4> fields_of(const Header& h) {
  std::array<std::uint32_t, 4> masks{};
  if (h.compression == kBitFields || h.compression == kAlphaBitFields) {
    masks = h.masks;
  } else if (h.bits == 16) {
    masks = {0x7C00u, 0x03E0u, 0x001Fu, 0};
  } else {
    // The fourth byte of uncompressed 32-bit pixels is alpha to stb_image and to every writer of
    // RGBA bitmaps that knows no masks; all 0 (reserved, unwritten) means opaque.
    masks = {0x00FF0000u, 0x0000FF00u, 0x000000FFu, 0xFF000000u};
  }
  return {field_of(masks[0], h.bits, "red"), field_of(masks[1], h.bits, "green"),
          field_of(masks[2], h.bits, "blue"), field_of(masks[3], h.bits, "alpha")};
}

using Palette = std::array<std::array<float, 3>, 256>;

// The palette between the headers and the pixel data: as many entries as the header says (all
// 2^bits when it says 0), no more than the bytes before the pixels hold. Returns the count;
// indices at or past it decode as black.
std::uint32_t read_palette(Bytes file, const Header& h, Palette& palette) {
  const std::uint64_t entry_bytes = h.info_size == 12 ? 3 : 4;
  const std::uint64_t most = std::uint64_t{1} << h.bits;
  const std::uint64_t claimed =
      h.colours_used == 0 ? most : std::min<std::uint64_t>(h.colours_used, most);
  const std::uint64_t room = (h.pixel_offset - h.headers_end) / entry_bytes;
  const std::uint64_t count = std::min(claimed, room);
  if (count == 0)
    throw ImageError("the " + std::to_string(h.bits) +
                     "-bit BMP has no palette before its pixel data");
  Cursor c(file, static_cast<std::size_t>(h.headers_end));
  const std::uint8_t* p = c.take(count * entry_bytes, "the palette");
  for (std::uint64_t i = 0; i < count; ++i, p += entry_bytes) {
    palette[i] = {static_cast<float>(p[2]) / 255.0f, static_cast<float>(p[1]) / 255.0f,
                  static_cast<float>(p[0]) / 255.0f};
  }
  return static_cast<std::uint32_t>(count);
}

}  // namespace

void decode_bmp(Bytes file, Canvas& canvas) {
  const Header h = read_header(file);
  if (h.pixel_offset < h.headers_end)
    throw ImageError("the pixel data offset " + std::to_string(h.pixel_offset) +
                     " lies inside the headers, which end at byte " +
                     std::to_string(h.headers_end));
  const std::string size = std::to_string(h.width) + " x " + std::to_string(h.height) +
                           " pixels of " + std::to_string(h.bits) + " bits";
  if (h.pixel_offset > file.size())
    throw ImageError("the file is truncated: the pixel data of its " + size +
                     " should start at byte " + std::to_string(h.pixel_offset) +
                     ", past the file's " + std::to_string(file.size()) + " bytes");

  // Sides are at most 2^24 and bits at most 32: every product below stays under 2^51.
  const std::uint64_t row_bits = h.width * static_cast<std::uint64_t>(h.bits);
  const std::uint64_t row_bytes = (row_bits + 7) / 8;
  const std::uint64_t stride = (row_bits + 31) / 32 * 4;
  // Writers may leave out the padding after the last row.
  const std::uint64_t needed = stride * (h.height - 1) + row_bytes;
  if (needed > file.size() - h.pixel_offset)
    throw ImageError("the file is truncated: its " + size + " need " + std::to_string(needed) +
                     " bytes from byte " + std::to_string(h.pixel_offset) + ", the file has " +
                     std::to_string(file.size()) + " bytes");

  const bool indexed = h.bits <= 8;
  Palette palette{};
  std::uint32_t colours = 0;
  std::array<Field, 4> fields{};
  if (indexed) {
    colours = read_palette(file, h, palette);
  } else if (h.bits != 24) {
    fields = fields_of(h);
  }
  const int channels = fields[3].mask != 0 ? 4 : 3;
  const auto ch = static_cast<std::uint64_t>(channels);
  // The most values one byte of pixel data decodes to (8 one-bit pixels of 3 channels: 24).
  const std::uint64_t per_byte =
      (8 * ch + static_cast<std::uint64_t>(h.bits) - 1) / static_cast<std::uint64_t>(h.bits);
  float* const pixels = canvas.allocate(h.height, h.width, channels, file.size(), per_byte);

  Cursor c(file);
  bool alpha_written = false;
  for (std::uint64_t r = 0; r < h.height; ++r) {
    c.seek(h.pixel_offset + r * stride, "a row of pixels");
    const std::uint8_t* row = c.take(row_bytes, "a row of pixels");
    const std::uint64_t y = h.top_down ? r : h.height - 1 - r;
    float* out = pixels + static_cast<std::size_t>(y * h.width * ch);
    for (std::uint64_t x = 0; x < h.width; ++x, out += channels) {
      if (indexed) {
        const auto bits = static_cast<std::uint64_t>(h.bits);
        // Pixels are packed from the most significant bit of each byte.
        const std::uint64_t bit = x * bits;
        const unsigned shift = static_cast<unsigned>(8 - bits - bit % 8);
        const std::uint32_t index =
            (std::uint32_t{row[bit / 8]} >> shift) & ((std::uint32_t{1} << bits) - 1);
        if (index < colours) std::copy_n(palette[index].begin(), 3, out);
        // An index past the palette stays black, as browsers show it.
        continue;
      }
      if (h.bits == 24) {
        const std::uint8_t* p = row + 3 * x;
        out[0] = static_cast<float>(p[2]) / 255.0f;
        out[1] = static_cast<float>(p[1]) / 255.0f;
        out[2] = static_cast<float>(p[0]) / 255.0f;
        continue;
      }
      std::uint32_t value = 0;
      if (h.bits == 16) {
        const std::uint8_t* p = row + 2 * x;
        value = std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8;
      } else {
        const std::uint8_t* p = row + 4 * x;
        value = std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
                std::uint32_t{p[3]} << 24;
      }
      for (int i = 0; i < channels; ++i) out[i] = fields[static_cast<std::size_t>(i)].value(value);
      if (channels == 4 && fields[3].raw(value) != 0) alpha_written = true;
    }
  }
  if (channels == 4 && !alpha_written) {
    const std::uint64_t count = h.width * h.height;
    for (std::uint64_t i = 0; i < count; ++i) pixels[static_cast<std::size_t>(i * 4 + 3)] = 1.0f;
  }
}

}  // namespace kiln::data::images
