// Photoshop PSD (version 1): the merged image that follows the layers, grey or RGB, 8 or 16 bits,
// raw or PackBits (RLE) coded.
//
// RGB gives 4 channels as stb_image did: the file's fourth channel as alpha, or an opaque one;
// the colours of partly transparent pixels are taken out of the white Photoshop blends them with.
// Grey gives 1 channel, or 2 (grey and alpha) when the file has a second channel. The file's
// channels are stored as planes one after another; only the planes given out are decoded.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

// The format's limits on a version 1 file (version 2, PSB, allows more and is not read).
constexpr std::uint32_t kMaxChannels = 56;
constexpr std::uint32_t kMaxSide = 30000;
constexpr std::uint64_t kHeaderBytes = 26;
// PackBits at its densest: a 2-byte run gives 128 bytes.
constexpr std::uint64_t kMaxPackBitsRatio = 64;

std::string mode_name(std::uint32_t mode) {
  switch (mode) {
    case 0: return "bitmap";
    case 2: return "indexed colour";
    case 4: return "CMYK";
    case 7: return "multichannel";
    case 8: return "duotone";
    case 9: return "Lab";
    default: return "unknown";
  }
}

struct Header {
  std::uint64_t width = 0;
  std::uint64_t height = 0;
  std::uint32_t channels = 0;     // in the file
  std::uint64_t sample_bytes = 0;  // 1 or 2
  int out_channels = 0;           // given out
  std::uint32_t planes = 0;       // decoded: the first `planes` of the file's channels
};

Header read_header(Cursor& in) {
  const std::uint8_t* signature = in.take(4, "the PSD signature");
  if (signature[0] != '8' || signature[1] != 'B' || signature[2] != 'P' || signature[3] != 'S')
    throw ImageError("not a PSD file (no 8BPS signature)");
  const std::uint32_t version = in.u16be("the PSD header");
  if (version == 2)
    throw ImageError("the file is a PSB (large document format, version 2), which kiln does not "
                     "read");
  if (version != 1) throw ImageError("the PSD version is " + std::to_string(version) + ", not 1");
  in.skip(6, "the PSD header");  // reserved
  Header h;
  h.channels = in.u16be("the PSD header");
  h.height = in.u32be("the PSD header");
  h.width = in.u32be("the PSD header");
  const std::uint32_t depth = in.u16be("the PSD header");
  const std::uint32_t mode = in.u16be("the PSD header");
  if (h.channels < 1 || h.channels > kMaxChannels)
    throw ImageError("the header gives " + std::to_string(h.channels) +
                     " channels (a PSD has 1 to 56)");
  if (h.width < 1 || h.width > kMaxSide || h.height < 1 || h.height > kMaxSide)
    throw ImageError("the header gives width " + std::to_string(h.width) + " and height " +
                     std::to_string(h.height) + " (a PSD's sides are 1 to 30000)");
  if (depth != 8 && depth != 16)
    throw ImageError("the header gives a depth of " + std::to_string(depth) +
                     " bits (8 or 16 read)");
  h.sample_bytes = depth / 8;
  if (mode == 3) {
    if (h.channels < 3)
      throw ImageError("the header gives an RGB image with " + std::to_string(h.channels) +
                       " channels (at least 3 needed)");
    h.out_channels = 4;
    h.planes = h.channels >= 4 ? 4 : 3;
  } else if (mode == 1) {
    h.out_channels = h.channels >= 2 ? 2 : 1;
    h.planes = static_cast<std::uint32_t>(h.out_channels);
  } else {
    throw ImageError("the colour mode is " + mode_name(mode) + " (" + std::to_string(mode) +
                     "); kiln reads greyscale (1) and RGB (3) PSD files");
  }
  return h;
}

// Skips a section given by its u32 length. A file cut here says what its header claimed, the
// likely reason a short file was taken for an image.
void skip_section(Cursor& in, const Header& h, const char* what) {
  const auto cut = [&](const char* where) {
    return ImageError(std::string("the file is truncated: it ends ") + where + what +
                      ", before the pixels of the " + std::to_string(h.width) + " x " +
                      std::to_string(h.height) + " image its header claims");
  };
  if (in.remaining() < 4) throw cut("inside the length of ");
  const std::uint32_t length = in.u32be(what);
  if (length > in.remaining()) throw cut("inside ");
  in.skip(length, what);
}

// The most values a byte of plane data can give: `expansion` plane bytes, each 1/sample_bytes
// of a sample, the decoded planes' samples making out_channels values (an opaque alpha added).
std::uint64_t values_per_byte(const Header& h, std::uint64_t expansion) {
  const std::uint64_t numerator = expansion * static_cast<std::uint64_t>(h.out_channels);
  const std::uint64_t denominator = h.planes * h.sample_bytes;
  return (numerator + denominator - 1) / denominator;
}

// The image's storage, its alpha opaque where no plane of the file gives it.
float* allocate(Canvas& canvas, const Header& h, std::uint64_t file_bytes,
                std::uint64_t expansion) {
  float* out = canvas.allocate(h.height, h.width, h.out_channels, file_bytes,
                               values_per_byte(h, expansion));
  const auto stride = static_cast<std::uint64_t>(h.out_channels);
  if (h.planes < stride)
    for (std::uint64_t i = 0; i < h.width * h.height; ++i) out[i * stride + stride - 1] = 1.0f;
  return out;
}

float sample_at(const std::uint8_t* row, std::uint64_t x, std::uint64_t sample_bytes) {
  if (sample_bytes == 1) return static_cast<float>(row[x]) / 255.0f;
  const std::uint32_t s = std::uint32_t{row[2 * x]} << 8 | row[2 * x + 1];
  return static_cast<float>(s) / 65535.0f;
}

// Writes a decoded row of plane `plane` into the interleaved image.
void put_row(float* out, const Header& h, std::uint32_t plane, std::uint64_t y,
             const std::uint8_t* row) {
  const auto stride = static_cast<std::uint64_t>(h.out_channels);
  float* dst = out + y * h.width * stride + plane;
  for (std::uint64_t x = 0; x < h.width; ++x) dst[x * stride] = sample_at(row, x, h.sample_bytes);
}

float* decode_raw(Cursor& in, const Header& h, Canvas& canvas) {
  const std::uint64_t plane_bytes = h.width * h.height * h.sample_bytes;  // below 2^31
  const std::uint64_t needed = plane_bytes * h.planes;
  if (needed > in.remaining())
    throw ImageError("the file is truncated: the raw pixels of " + std::to_string(h.width) +
                     " x " + std::to_string(h.height) + " in " + std::to_string(h.planes) +
                     " channels need " + std::to_string(needed) + " bytes, and " +
                     std::to_string(in.remaining()) + " remain");
  float* out = allocate(canvas, h, in.remaining(), 1);
  const std::uint64_t row_bytes = h.width * h.sample_bytes;
  for (std::uint32_t p = 0; p < h.planes; ++p) {
    const std::uint8_t* plane = in.take(plane_bytes, "the raw pixels");
    for (std::uint64_t y = 0; y < h.height; ++y) put_row(out, h, p, y, plane + y * row_bytes);
  }
  return out;
}

// One PackBits-coded row (exactly `row.size()` bytes decoded) from `in`, which holds the row's
// counted bytes; bytes left over after the row is full are ignored.
void unpack_row(Cursor& in, std::vector<std::uint8_t>& row, std::uint32_t plane,
                std::uint64_t y) {
  const std::uint64_t size = row.size();
  const auto where = [&] {
    return "row " + std::to_string(y) + " of channel " + std::to_string(plane);
  };
  std::uint64_t x = 0;
  while (x < size) {
    if (in.at_end())
      throw ImageError("the run-length data of " + where() + " ends after " + std::to_string(x) +
                       " of its " + std::to_string(size) +
                       " bytes: its byte count is too small or the data is corrupt");
    const std::uint8_t code = in.u8("a run-length coded row");
    if (code == 0x80) continue;  // -128: no operation
    // code < 128: code + 1 literal bytes; otherwise, as a signed byte n, 1 - n copies.
    const bool literal = code < 0x80;
    const std::uint64_t n = literal ? std::uint64_t{code} + 1 : 257 - std::uint64_t{code};
    if (n > size - x)
      throw ImageError("the run-length data of " + where() + " has a " +
                       (literal ? "literal" : "run") + " of " + std::to_string(n) +
                       " bytes at byte " + std::to_string(x) + ", past the row's " +
                       std::to_string(size) + " bytes");
    const std::uint64_t source = literal ? n : 1;
    if (in.remaining() < source)
      throw ImageError("the run-length data of " + where() + " ends inside a " +
                       (literal ? "literal" : "run") +
                       ": its byte count is too small or the data is corrupt");
    const std::uint8_t* p = in.take(source, "a run-length coded row");
    for (std::uint64_t i = 0; i < n; ++i) row[x + i] = p[literal ? i : 0];
    x += n;
  }
}

float* decode_rle(Bytes file, Cursor& in, const Header& h, Canvas& canvas) {
  // The byte count of every row of every channel in the file, channel by channel; the decoded
  // planes are the first ones.
  const std::uint64_t rows = h.height * h.channels;
  const std::uint8_t* table = in.take(rows * 2, "the run-length row byte counts");
  const std::uint64_t decoded_rows = h.height * h.planes;
  std::uint64_t total = 0;  // at most 2^16 * 30000 * 4, no overflow
  for (std::uint64_t r = 0; r < decoded_rows; ++r)
    total += std::uint64_t{table[2 * r]} << 8 | table[2 * r + 1];
  if (total > in.remaining())
    throw ImageError("the file is truncated: the run-length row byte counts of the " +
                     std::to_string(h.width) + " x " + std::to_string(h.height) +
                     " image add up to " + std::to_string(total) + " bytes, and " +
                     std::to_string(in.remaining()) + " remain");
  float* out = allocate(canvas, h, total, kMaxPackBitsRatio);

  std::vector<std::uint8_t> row(static_cast<std::size_t>(h.width * h.sample_bytes));
  std::uint64_t offset = in.position();
  for (std::uint32_t p = 0; p < h.planes; ++p) {
    for (std::uint64_t y = 0; y < h.height; ++y) {
      const std::uint64_t r = std::uint64_t{p} * h.height + y;
      const std::uint64_t count = std::uint64_t{table[2 * r]} << 8 | table[2 * r + 1];
      // Inside the file: the counts' sum was checked against the bytes that remain.
      Cursor row_in(
          file.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(count)));
      unpack_row(row_in, row, p, y);
      put_row(out, h, p, y, row.data());
      offset += count;
    }
  }
  return out;
}

// Photoshop stores the merged image of a document with transparency blended over white: a
// colour c at opacity a is stored as a * c + (1 - a). Solving for c gives the colour itself.
void remove_white_matte(float* out, const Header& h) {
  const auto stride = static_cast<std::uint64_t>(h.out_channels);
  for (std::uint64_t i = 0; i < h.width * h.height; ++i) {
    float* pixel = out + i * stride;
    const float a = pixel[stride - 1];
    if (a <= 0.0f || a >= 1.0f) continue;
    for (std::uint64_t c = 0; c + 1 < stride; ++c)
      pixel[c] = std::clamp((pixel[c] - (1.0f - a)) / a, 0.0f, 1.0f);
  }
}

}  // namespace

void decode_psd(Bytes file, Canvas& canvas) {
  Cursor in(file);
  const Header h = read_header(in);
  skip_section(in, h, "the colour mode data");
  skip_section(in, h, "the image resources");
  skip_section(in, h, "the layer and mask information");
  if (in.remaining() < 2)
    throw ImageError("the file is truncated: it ends before the compression of the " +
                     std::to_string(h.width) + " x " + std::to_string(h.height) +
                     " image its header claims");
  const std::uint32_t compression = in.u16be("the compression field");
  if (compression == 2 || compression == 3)
    throw ImageError("the merged image is ZIP compressed (compression " +
                     std::to_string(compression) + "), which kiln does not read");
  if (compression > 3)
    throw ImageError("the compression field is " + std::to_string(compression) +
                     " (0 raw or 1 run-length read)");
  float* out = compression == 0 ? decode_raw(in, h, canvas) : decode_rle(file, in, h, canvas);
  // Only an alpha the file holds was blended (grey and alpha, or RGBA).
  if (h.planes == static_cast<std::uint32_t>(h.out_channels) && h.out_channels % 2 == 0)
    remove_white_matte(out, h);
}

}  // namespace kiln::data::images
