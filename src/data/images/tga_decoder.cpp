// Truevision TGA: an 18-byte header, an image ID, an optional colour map, then the pixels, raw
// or in run-length packets, from the bottom-left corner unless the descriptor says otherwise.
//
// Read: colour-mapped (types 1 and 9; 8- or 16-bit indices into a map of 8-bit grey, 15/16-bit
// 5-5-5, 24-bit BGR or 32-bit BGRA entries), true colour (2 and 10; 15/16, 24 and 32 bits) and
// grey (3 and 11; 8 bits, or 16 bits of grey and alpha). Channels are stb_image's: 5-5-5 and BGR
// give RGB (the attribute bit of 16-bit pixels is not alpha to stb or most writers), BGRA gives
// RGBA, grey 1 channel and grey+alpha 2; a colour-mapped image has its map entries' channels.
// An index outside the colour map gives 0 in every channel (black, transparent where the map
// has alpha), as an out-of-range BMP palette index does.
//
// TGA has no signature, so looks_like_tga and the decoder share one plausibility check of the
// header. Sides are 16-bit, so no size arithmetic here can overflow 64 bits.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

constexpr std::uint64_t kHeaderBytes = 18;

struct Header {
  std::uint32_t id_length = 0;
  std::uint32_t map_type = 0;  // 1: a colour map follows the ID
  std::uint32_t type = 0;
  std::uint32_t map_first = 0;  // the index of the map's first entry
  std::uint32_t map_length = 0;
  std::uint32_t map_bits = 0;
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint32_t bits = 0;
  std::uint32_t descriptor = 0;

  bool mapped() const { return type == 1 || type == 9; }
  bool grey() const { return type == 3 || type == 11; }
  bool run_length() const { return type >= 9; }
};

Header read_header(Bytes file) {
  Cursor c(file);
  const char* what = "the TGA header";
  Header h;
  h.id_length = c.u8(what);
  h.map_type = c.u8(what);
  h.type = c.u8(what);
  h.map_first = c.u16le(what);
  h.map_length = c.u16le(what);
  h.map_bits = c.u8(what);
  c.skip(4, what);  // x and y origin, for display only
  h.width = c.u16le(what);
  h.height = c.u16le(what);
  h.bits = c.u8(what);
  h.descriptor = c.u8(what);
  return h;
}

bool is_colour_depth(std::uint32_t bits) {
  return bits == 15 || bits == 16 || bits == 24 || bits == 32;
}

// Why the header is not one of a TGA kiln reads, or "" when it is.
std::string implausible(const Header& h) {
  if (h.map_type > 1)
    return "colour map type " + std::to_string(h.map_type) + " is not a TGA's (0 or 1)";
  if (h.type != 1 && h.type != 2 && h.type != 3 && h.type != 9 && h.type != 10 && h.type != 11)
    return "image type " + std::to_string(h.type) +
           " is not a TGA type kiln reads (1, 2, 3, 9, 10 and 11 are)";
  const std::string depth = std::to_string(h.bits) + " bits per pixel";
  if (h.mapped()) {
    if (h.map_type != 1 || h.map_length == 0) return "the colour-mapped TGA has no colour map";
    if (h.bits != 8 && h.bits != 16)
      return "colour map indices of " + depth + " are not read (8 and 16 are)";
  } else if (h.grey()) {
    if (h.bits != 8 && h.bits != 16)
      return "a grey TGA of " + depth + " is not read (8, and 16 with alpha, are)";
  } else if (!is_colour_depth(h.bits)) {
    return "a true-colour TGA of " + depth + " is not read (15, 16, 24 and 32 are)";
  }
  if (h.map_type == 1 && h.map_bits != 8 && !is_colour_depth(h.map_bits))
    return "colour map entries of " + std::to_string(h.map_bits) +
           " bits are not read (8, 15, 16, 24 and 32 are)";
  if (h.width == 0 || h.height == 0)
    return "the header gives width " + std::to_string(h.width) + " and height " +
           std::to_string(h.height) + "; an image needs at least one pixel";
  return "";
}

// How a stored colour (a pixel or a colour map entry) is laid out.
enum class Layout { grey, grey_alpha, rgb555, bgr, bgra };

Layout layout_of(std::uint32_t bits, bool grey) {
  if (grey) return bits == 8 ? Layout::grey : Layout::grey_alpha;
  switch (bits) {
    case 8:
      return Layout::grey;  // a colour map of grey levels
    case 15:
    case 16:
      return Layout::rgb555;
    case 24:
      return Layout::bgr;
    default:
      return Layout::bgra;
  }
}

int channels_of(Layout layout) {
  switch (layout) {
    case Layout::grey:
      return 1;
    case Layout::grey_alpha:
      return 2;
    case Layout::rgb555:
    case Layout::bgr:
      return 3;
    default:
      return 4;
  }
}

float unit8(std::uint8_t v) { return static_cast<float>(v) / 255.0f; }
float unit5(std::uint32_t v) { return static_cast<float>(v & 0x1Fu) / 31.0f; }

// Writes the channels of the colour at p, whose bytes the caller has bounded.
void convert(const std::uint8_t* p, Layout layout, float* out) {
  switch (layout) {
    case Layout::grey:
      out[0] = unit8(p[0]);
      return;
    case Layout::grey_alpha:
      out[0] = unit8(p[0]);
      out[1] = unit8(p[1]);
      return;
    case Layout::rgb555: {
      // Little-endian ARRRRRGG GGGBBBBB.
      const std::uint32_t v = std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8;
      out[0] = unit5(v >> 10);
      out[1] = unit5(v >> 5);
      out[2] = unit5(v);
      return;
    }
    case Layout::bgr:
      out[0] = unit8(p[2]);
      out[1] = unit8(p[1]);
      out[2] = unit8(p[0]);
      return;
    case Layout::bgra:
      out[0] = unit8(p[2]);
      out[1] = unit8(p[1]);
      out[2] = unit8(p[0]);
      out[3] = unit8(p[3]);
      return;
  }
}

// Turns the stored pixels, in file order, into the canvas's rows.
class PixelWriter {
 public:
  PixelWriter(const Header& h, float* canvas, int channels, Layout layout,
              const std::vector<float>* map)
      : h_(h),
        canvas_(canvas),
        channels_(static_cast<std::size_t>(channels)),
        layout_(layout),
        map_(map) {}

  // The pixel's channels from its stored bytes (pixel_bytes of them at p).
  void decode(const std::uint8_t* p, float* out) const {
    if (map_ == nullptr) {
      convert(p, layout_, out);
      return;
    }
    std::uint32_t index = p[0];
    if (h_.bits == 16) index |= std::uint32_t{p[1]} << 8;
    if (index >= h_.map_first && index - h_.map_first < h_.map_length) {
      const std::size_t at = (index - h_.map_first) * channels_;
      std::copy_n(map_->data() + at, channels_, out);
    } else {
      std::fill_n(out, channels_, 0.0f);
    }
  }

  // Where the i-th pixel of the file goes: descriptor bit 5 puts the first row at the top, bit 4
  // the first column at the right.
  float* place(std::uint64_t i) const {
    const std::uint64_t row = i / h_.width;
    const std::uint64_t column = i % h_.width;
    const std::uint64_t y = (h_.descriptor & 0x20u) != 0 ? row : h_.height - 1 - row;
    const std::uint64_t x = (h_.descriptor & 0x10u) != 0 ? h_.width - 1 - column : column;
    return canvas_ + static_cast<std::size_t>((y * h_.width + x) * channels_);
  }

 private:
  const Header& h_;
  float* canvas_;
  std::size_t channels_;
  Layout layout_;
  const std::vector<float>* map_;
};

}  // namespace

bool looks_like_tga(Bytes file) {
  if (file.size() < kHeaderBytes) return false;
  return implausible(read_header(file)).empty();
}

void decode_tga(Bytes file, Canvas& canvas) {
  const Header h = read_header(file);
  if (const std::string why = implausible(h); !why.empty()) throw ImageError(why);
  Cursor c(file, kHeaderBytes);
  c.skip(h.id_length, "the image ID");

  // A colour map comes with the ID even where the pixels do not use it (true colour, grey).
  std::vector<float> map;
  int channels = 0;
  Layout layout = layout_of(h.bits, h.grey());
  if (h.map_type == 1) {
    const std::uint64_t entry_bytes = (h.map_bits + 7) / 8;
    const std::uint8_t* entries = c.take(h.map_length * entry_bytes, "the colour map");
    if (h.mapped()) {
      const Layout entry = layout_of(h.map_bits, false);
      const auto entry_channels = static_cast<std::size_t>(channels_of(entry));
      map.resize(h.map_length * entry_channels);
      for (std::size_t i = 0; i < h.map_length; ++i)
        convert(entries + i * entry_bytes, entry, map.data() + i * entry_channels);
      channels = channels_of(entry);
    }
  }
  if (!h.mapped()) channels = channels_of(layout);

  const std::uint64_t pixel_bytes = (h.bits + 7) / 8;
  const std::uint64_t pixels = std::uint64_t{h.width} * h.height;
  const auto ch = static_cast<std::uint64_t>(channels);
  std::uint64_t per_byte = 0;
  if (h.run_length()) {
    // The densest coding: a run packet (a count byte and one pixel) of 128 pixels.
    per_byte = (128 * ch + pixel_bytes) / (1 + pixel_bytes);
  } else {
    const std::uint64_t needed = pixels * pixel_bytes;
    if (needed > c.remaining())
      throw ImageError("the file is truncated: its " + std::to_string(h.width) + " x " +
                       std::to_string(h.height) + " pixels of " + std::to_string(h.bits) +
                       " bits need " + std::to_string(needed) + " bytes from byte " +
                       std::to_string(c.position()) + ", the file has " +
                       std::to_string(file.size()) + " bytes");
    per_byte = (ch + pixel_bytes - 1) / pixel_bytes;
  }
  float* const pixels_out = canvas.allocate(h.height, h.width, channels, file.size(), per_byte);
  const PixelWriter writer(h, pixels_out, channels, layout, h.mapped() ? &map : nullptr);

  if (!h.run_length()) {
    const std::uint8_t* p = c.take(pixels * pixel_bytes, "the pixel data");
    for (std::uint64_t i = 0; i < pixels; ++i, p += pixel_bytes) writer.decode(p, writer.place(i));
    return;
  }
  // Packets may run across rows. One that runs past the image's last pixel is cut there (as
  // other readers do), and nothing after it is read.
  std::uint64_t i = 0;
  float colour[4] = {};
  while (i < pixels) {
    const std::uint32_t head = c.u8("a run-length packet");
    const std::uint64_t count = std::min<std::uint64_t>((head & 0x7Fu) + 1, pixels - i);
    if ((head & 0x80u) != 0) {
      writer.decode(c.take(pixel_bytes, "a run-length packet"), colour);
      for (std::uint64_t k = 0; k < count; ++k) std::copy_n(colour, channels, writer.place(i + k));
    } else {
      const std::uint8_t* p = c.take(count * pixel_bytes, "a run-length packet");
      for (std::uint64_t k = 0; k < count; ++k, p += pixel_bytes)
        writer.decode(p, writer.place(i + k));
    }
    i += count;
  }
}

}  // namespace kiln::data::images
