// kiln's BMP and TGA decoders (src/data/images/): files Pillow wrote (tests/data/images, see
// make_bmp_tga_fixtures.py) decode to the values of the formula they were written from; files
// built here cover each depth, header, mask layout and orientation the decoders read; damaged and
// hostile files are ImageErrors that say what was wrong, and a header claiming more pixels than
// the file holds is refused before any pixel storage is allocated.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "data/images/image_codec.hpp"
#include "kiln/images.hpp"
#include "kiln/kiln.hpp"

namespace {

namespace images = kiln::data::images;
using Bytes = std::vector<std::uint8_t>;
using Decoder = void (*)(images::Bytes, images::Canvas&);

struct Image {
  kiln::Shape shape;
  std::vector<float> values;
};

Image decode(Decoder decoder, const Bytes& file) {
  images::Canvas canvas;
  decoder(file, canvas);
  const kiln::Tensor t = canvas.take();
  return {t.shape(), t.to_vector<float>()};
}

// Checks that decoding `file` throws an ImageError whose message holds every one of `words`, and,
// where `before_allocation`, that it was thrown before the canvas allocated anything.
void expect_refused(Decoder decoder, const Bytes& file, std::initializer_list<const char*> words,
                    bool before_allocation = true) {
  images::Canvas canvas;
  std::string message = "(decoded without an error)";
  try {
    decoder(file, canvas);
  } catch (const images::ImageError& e) {
    message = e.what();
  }
  for (const char* word : words)
    EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
  if (before_allocation) {
    EXPECT_FALSE(canvas.allocated()) << message;
  }
}

Bytes fixture(const std::string& name) {
  std::ifstream in(std::string(KILN_TEST_DATA_DIR) + "/images/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open the fixture " << name;
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void put(Bytes& b, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

// Values k / 255, as the decoders give 8-bit samples.
std::vector<float> unit(std::initializer_list<int> samples) {
  std::vector<float> out;
  for (const int s : samples) out.push_back(static_cast<float>(s) / 255.0f);
  return out;
}

// ---- the fixtures' formulas (make_bmp_tga_fixtures.py) -----------------------------------------

constexpr int kWidth = 7;
constexpr int kHeight = 5;

int value(int x, int y, int c) { return (x * 37 + y * 91 + c * 53) % 256; }
int block(int x, int y, int c) { return ((x / 3) * 37 + y * 91 + c * 53) % 256; }
int index_at(int x, int y) { return (x + 2 * y) % 6; }
int colour(int k, int c) { return (k * 40 + c * 90 + 10) % 256; }

// The [y][x][c] values of a fixture whose channel c at (x, y) is sample(x, y, c) / 255.
template <class F> std::vector<float> expected(int channels, F sample) {
  std::vector<float> out;
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x)
      for (int c = 0; c < channels; ++c)
        out.push_back(static_cast<float>(sample(x, y, c)) / 255.0f);
  return out;
}

const kiln::Shape kShape3{kHeight, kWidth, 3};

// ---- BMP files built here ----------------------------------------------------------------------

// A BMP: file header, info header (the masks inside it from 52 bytes on, after it for 40), the
// palette (0xRRGGBB entries, stored B, G, R, 0), then `pixels` as stored, row padding included.
struct Bmp {
  std::int64_t width = 1;
  std::int64_t height = 1;
  int bits = 24;
  std::uint32_t compression = 0;
  std::uint32_t info_size = 40;
  std::vector<std::uint32_t> masks{};
  std::vector<std::uint32_t> palette{};
  std::uint32_t colours_used = 0;
  Bytes pixels{};
  std::int64_t offset = -1;  // bfOffBits; -1: right after the palette

  Bytes bytes() const {
    const std::uint64_t masks_after = info_size == 40 ? masks.size() * 4 : 0;
    const std::uint64_t start = 14 + info_size + masks_after + palette.size() * 4;
    Bytes b = {'B', 'M'};
    put(b, start + pixels.size(), 4);
    put(b, 0, 4);
    put(b, offset < 0 ? start : static_cast<std::uint64_t>(offset), 4);
    put(b, info_size, 4);
    put(b, static_cast<std::uint32_t>(width), 4);  // two's complement, as the format stores it
    put(b, static_cast<std::uint32_t>(height), 4);
    put(b, 1, 2);
    put(b, static_cast<std::uint64_t>(bits), 2);
    put(b, compression, 4);
    put(b, pixels.size(), 4);
    put(b, 2835, 4);
    put(b, 2835, 4);
    put(b, colours_used, 4);
    put(b, 0, 4);
    for (const std::uint32_t m : masks) put(b, m, 4);
    if (info_size > 40) b.resize(14 + info_size, 0);
    for (const std::uint32_t rgb : palette) put(b, rgb, 4);
    b.insert(b.end(), pixels.begin(), pixels.end());
    return b;
  }
};

// An OS/2 bitmap: a 12-byte core header (16-bit sides) and 3-byte palette entries.
Bytes core_bmp(std::uint32_t width, std::uint32_t height, int bits,
               const std::vector<std::uint32_t>& palette, const Bytes& pixels) {
  const std::uint64_t start = 14 + 12 + palette.size() * 3;
  Bytes b = {'B', 'M'};
  put(b, start + pixels.size(), 4);
  put(b, 0, 4);
  put(b, start, 4);
  put(b, 12, 4);
  put(b, width, 2);
  put(b, height, 2);
  put(b, 1, 2);
  put(b, static_cast<std::uint64_t>(bits), 2);
  for (const std::uint32_t rgb : palette) put(b, rgb, 3);
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}

// ---- TGA files built here ----------------------------------------------------------------------

// A TGA: the 18-byte header, the image ID, the colour map and the pixels as given. The default
// descriptor puts the first row at the top.
struct Tga {
  int type = 2;
  std::uint32_t width = 1;
  std::uint32_t height = 1;
  int bits = 24;
  int descriptor = 0x20;
  int map_type = 0;
  std::uint32_t map_first = 0;
  std::uint32_t map_length = 0;
  int map_bits = 0;
  Bytes id{};
  Bytes map{};
  Bytes pixels{};

  Bytes bytes() const {
    Bytes b;
    put(b, id.size(), 1);
    put(b, static_cast<std::uint64_t>(map_type), 1);
    put(b, static_cast<std::uint64_t>(type), 1);
    put(b, map_first, 2);
    put(b, map_length, 2);
    put(b, static_cast<std::uint64_t>(map_bits), 1);
    put(b, 0, 4);
    put(b, width, 2);
    put(b, height, 2);
    put(b, static_cast<std::uint64_t>(bits), 1);
    put(b, static_cast<std::uint64_t>(descriptor), 1);
    b.insert(b.end(), id.begin(), id.end());
    b.insert(b.end(), map.begin(), map.end());
    b.insert(b.end(), pixels.begin(), pixels.end());
    return b;
  }
};

// ---- BMP: files Pillow wrote -------------------------------------------------------------------

TEST(ImagesBmp, FilesPillowWroteDecodeToTheirFormula) {
  const Image rgb = decode(images::decode_bmp, fixture("bmp_rgb24.bmp"));
  EXPECT_EQ(rgb.shape, kShape3);
  EXPECT_EQ(rgb.values, expected(3, value));
  // Pillow stores RGBA as uncompressed 32-bit BGRA: the fourth byte is alpha.
  const Image rgba = decode(images::decode_bmp, fixture("bmp_rgba32.bmp"));
  EXPECT_EQ(rgba.shape, (kiln::Shape{kHeight, kWidth, 4}));
  EXPECT_EQ(rgba.values, expected(4, value));
  const Image pal = decode(images::decode_bmp, fixture("bmp_pal8.bmp"));
  EXPECT_EQ(pal.shape, kShape3);
  EXPECT_EQ(pal.values, expected(3, [](int x, int y, int c) { return colour(index_at(x, y), c); }));
  // Grey is stored through a palette of greys: RGB, as stb_image gave it.
  const Image grey = decode(images::decode_bmp, fixture("bmp_grey8.bmp"));
  EXPECT_EQ(grey.shape, kShape3);
  EXPECT_EQ(grey.values, expected(3, [](int x, int y, int) { return value(x, y, 0); }));
  const Image bits = decode(images::decode_bmp, fixture("bmp_1bit.bmp"));
  EXPECT_EQ(bits.shape, kShape3);
  EXPECT_EQ(bits.values, expected(3, [](int x, int y, int) { return (x + y) % 3 == 0 ? 255 : 0; }));
}

// ---- BMP: files built here ---------------------------------------------------------------------

TEST(ImagesBmp, RowsAreBottomUpUnlessTheHeightIsNegative) {
  // 2 x 2, 24 bits: rows of 6 bytes padded to 8.
  const Bytes rows = {1, 2, 3, 4, 5, 6, 0, 0, 7, 8, 9, 10, 11, 12, 0, 0};
  const Image up = decode(images::decode_bmp, Bmp{.width = 2, .height = 2, .pixels = rows}.bytes());
  EXPECT_EQ(up.shape, (kiln::Shape{2, 2, 3}));
  EXPECT_EQ(up.values, unit({9, 8, 7, 12, 11, 10, 3, 2, 1, 6, 5, 4}));
  const Image down =
      decode(images::decode_bmp, Bmp{.width = 2, .height = -2, .pixels = rows}.bytes());
  EXPECT_EQ(down.values, unit({3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10}));
  // The last row's padding may be missing.
  Bytes cut = Bmp{.width = 2, .height = 2, .pixels = rows}.bytes();
  cut.resize(cut.size() - 2);
  EXPECT_EQ(decode(images::decode_bmp, cut).values, up.values);
}

TEST(ImagesBmp, PaletteIndicesPastThePaletteAreBlack) {
  // 3 x 2, 4 bits, three colours: rows of 12 bits padded to 4 bytes; the top row uses index 9.
  const Bmp bmp{.width = 3,
                .height = 2,
                .bits = 4,
                .palette = {0x0A141E, 0x28323C, 0x46505A},
                .colours_used = 3,
                .pixels = {0x01, 0x20, 0, 0, 0x29, 0x10, 0, 0}};
  const Image image = decode(images::decode_bmp, bmp.bytes());
  EXPECT_EQ(image.shape, (kiln::Shape{2, 3, 3}));
  EXPECT_EQ(image.values, unit({70, 80, 90, 0, 0, 0, 40, 50, 60,  // top: 2, 9, 1
                                10, 20, 30, 40, 50, 60, 70, 80, 90}));
  // A header claiming 256 colours where two fit before the pixels: the third is black.
  const Bmp short_palette{.width = 3,
                          .height = 1,
                          .bits = 8,
                          .palette = {0x0A141E, 0x28323C},
                          .colours_used = 256,
                          .pixels = {1, 0, 2, 0}};
  EXPECT_EQ(decode(images::decode_bmp, short_palette.bytes()).values,
            unit({40, 50, 60, 10, 20, 30, 0, 0, 0}));
}

TEST(ImagesBmp, OneBitPixelsStartAtTheMostSignificantBit) {
  // 10 pixels 1011000110: two bytes, padded to 4; no colour count (2 colours).
  const Bmp bmp{.width = 10,
                .height = 1,
                .bits = 1,
                .palette = {0x000000, 0xFFFFFF},
                .pixels = {0xB1, 0x80, 0, 0}};
  const Image image = decode(images::decode_bmp, bmp.bytes());
  std::vector<float> want;
  for (const int bit : {1, 0, 1, 1, 0, 0, 0, 1, 1, 0})
    want.insert(want.end(), 3, bit ? 1.0f : 0.0f);
  EXPECT_EQ(image.values, want);
}

TEST(ImagesBmp, SixteenBitPixelsUseTheirMasks) {
  // Uncompressed: 5-5-5. 0x7C00 is red; 0x03E1 full green and blue 1 of 31.
  const Image plain = decode(
      images::decode_bmp, Bmp{.width = 2, .bits = 16, .pixels = {0x00, 0x7C, 0xE1, 0x03}}.bytes());
  EXPECT_EQ(plain.shape, (kiln::Shape{1, 2, 3}));
  EXPECT_EQ(plain.values, (std::vector<float>{1, 0, 0, 0, 1, 1 / 31.0f}));
  // Bit fields 5-6-5 after a 40-byte header: 0x07E0 is green; 0x0821 is 1 of 31, 63 and 31.
  const Bmp rgb565{.width = 2,
                   .bits = 16,
                   .compression = 3,
                   .masks = {0xF800, 0x07E0, 0x001F},
                   .pixels = {0xE0, 0x07, 0x21, 0x08}};
  EXPECT_EQ(decode(images::decode_bmp, rgb565.bytes()).values,
            (std::vector<float>{0, 1, 0, 1 / 31.0f, 1 / 63.0f, 1 / 31.0f}));
  // The same masks inside a 52-byte header.
  Bmp v2 = rgb565;
  v2.info_size = 52;
  EXPECT_EQ(decode(images::decode_bmp, v2.bytes()).values,
            decode(images::decode_bmp, rgb565.bytes()).values);
  // 4-4-4-4 with an alpha mask (BI_ALPHABITFIELDS after a 40-byte header): RGBA.
  const Bmp argb{.width = 2,
                 .bits = 16,
                 .compression = 6,
                 .masks = {0x0F00, 0x00F0, 0x000F, 0xF000},
                 .pixels = {0x0F, 0xF0, 0x34, 0x12}};
  const Image alpha = decode(images::decode_bmp, argb.bytes());
  EXPECT_EQ(alpha.shape, (kiln::Shape{1, 2, 4}));
  EXPECT_EQ(alpha.values,
            (std::vector<float>{0, 0, 1, 1, 2 / 15.0f, 3 / 15.0f, 4 / 15.0f, 1 / 15.0f}));
}

TEST(ImagesBmp, ThirtyTwoBitPixelsHaveAlphaWhereTheFileGivesIt) {
  // Uncompressed BGRA: the fourth byte is alpha.
  const Image bgra =
      decode(images::decode_bmp,
             Bmp{.width = 2, .bits = 32, .pixels = {10, 20, 30, 40, 50, 60, 70, 80}}.bytes());
  EXPECT_EQ(bgra.shape, (kiln::Shape{1, 2, 4}));
  EXPECT_EQ(bgra.values, unit({30, 20, 10, 40, 70, 60, 50, 80}));
  // A fourth byte that is 0 everywhere was never written: opaque.
  const Image bgrx =
      decode(images::decode_bmp,
             Bmp{.width = 2, .bits = 32, .pixels = {10, 20, 30, 0, 50, 60, 70, 0}}.bytes());
  EXPECT_EQ(bgrx.values, unit({30, 20, 10, 255, 70, 60, 50, 255}));
  // RGBA byte order through the masks of a 124-byte (V5) header.
  const Bmp v5{.width = 1,
               .bits = 32,
               .compression = 3,
               .info_size = 124,
               .masks = {0x000000FF, 0x0000FF00, 0x00FF0000, 0xFF000000},
               .pixels = {1, 2, 3, 4}};
  const Image rgba = decode(images::decode_bmp, v5.bytes());
  EXPECT_EQ(rgba.shape, (kiln::Shape{1, 1, 4}));
  EXPECT_EQ(rgba.values, unit({1, 2, 3, 4}));
  // Without an alpha mask (a 108-byte V4 header whose alpha mask is 0): RGB.
  Bmp v4 = v5;
  v4.info_size = 108;
  v4.masks = {0x000000FF, 0x0000FF00, 0x00FF0000, 0};
  const Image rgb = decode(images::decode_bmp, v4.bytes());
  EXPECT_EQ(rgb.shape, (kiln::Shape{1, 1, 3}));
  EXPECT_EQ(rgb.values, unit({1, 2, 3}));
  // Uncompressed pixels ignore the masks a long header carries.
  Bmp plain = v5;
  plain.compression = 0;
  EXPECT_EQ(decode(images::decode_bmp, plain.bytes()).values, unit({3, 2, 1, 4}));
  // 10-10-10 fields scale by 1023.
  const Bmp deep{.width = 1,
                 .bits = 32,
                 .compression = 3,
                 .masks = {0x3FF00000, 0x000FFC00, 0x000003FF},
                 .pixels = {0x01, 0x00, 0xF0, 0x3F}};
  EXPECT_EQ(decode(images::decode_bmp, deep.bytes()).values,
            (std::vector<float>{1, 0, 1 / 1023.0f}));
}

TEST(ImagesBmp, CoreHeadersOfOs2) {
  const Image rgb = decode(images::decode_bmp, core_bmp(2, 1, 24, {}, {1, 2, 3, 4, 5, 6, 0, 0}));
  EXPECT_EQ(rgb.shape, (kiln::Shape{1, 2, 3}));
  EXPECT_EQ(rgb.values, unit({3, 2, 1, 6, 5, 4}));
  // Three-byte palette entries.
  const Image pal =
      decode(images::decode_bmp, core_bmp(2, 1, 8, {0x0A141E, 0x28323C}, {1, 0, 0, 0}));
  EXPECT_EQ(pal.values, unit({40, 50, 60, 10, 20, 30}));
}

// ---- BMP: damaged and hostile files ------------------------------------------------------------

TEST(ImagesBmp, TruncatedAndMisplacedPixelDataIsRefusedBeforeAllocation) {
  // 4 x 4, 24 bits: 48 bytes of pixels needed, 36 present.
  expect_refused(images::decode_bmp,
                 Bmp{.width = 4, .height = 4, .pixels = Bytes(36, 0x40)}.bytes(),
                 {"truncated", "4 x 4"});
  // Pixel data said to start past the file's end, and inside the headers.
  expect_refused(images::decode_bmp, Bmp{.pixels = {1, 2, 3, 0}, .offset = 5000}.bytes(),
                 {"truncated", "5000"});
  expect_refused(images::decode_bmp, Bmp{.pixels = {1, 2, 3, 0}, .offset = 20}.bytes(),
                 {"inside the headers"});
  // A palette image whose pixels start right after the header: no palette.
  expect_refused(images::decode_bmp, Bmp{.bits = 8, .pixels = {0, 0, 0, 0}}.bytes(), {"palette"});
  // Cut inside the info header.
  Bytes cut = Bmp{}.bytes();
  cut.resize(30);
  expect_refused(images::decode_bmp, cut, {"truncated", "info header"});
}

TEST(ImagesBmp, AbsurdSizesAreRefusedBeforeAllocation) {
  // 2^24 x 2^24 (the largest sides read) in 54 bytes.
  expect_refused(images::decode_bmp, Bmp{.width = 1 << 24, .height = 1 << 24}.bytes(),
                 {"16777216"});
  // Sides beyond 2^24, the most negative height, zero and negative sides.
  expect_refused(images::decode_bmp, Bmp{.width = (1 << 24) + 1}.bytes(), {"16777217"});
  expect_refused(images::decode_bmp, Bmp{.height = 0x7FFFFFFF}.bytes(), {"2147483647"});
  expect_refused(images::decode_bmp, Bmp{.height = INT32_MIN}.bytes(), {"-2147483648"});
  expect_refused(images::decode_bmp, Bmp{.height = -(1 << 24) - 1}.bytes(), {"-16777217"});
  expect_refused(images::decode_bmp, Bmp{.width = 0, .pixels = {0, 0, 0, 0}}.bytes(), {"width 0"});
  expect_refused(images::decode_bmp, Bmp{.height = 0, .pixels = {0, 0, 0, 0}}.bytes(),
                 {"height 0"});
  expect_refused(images::decode_bmp, Bmp{.width = -3, .pixels = {0, 0, 0, 0}}.bytes(),
                 {"negative width"});
  // A whole file over the pixel limit: refused by the canvas before it allocates.
  const std::uint64_t saved = kiln::data::image_pixel_limit();
  kiln::data::set_image_pixel_limit(100);
  expect_refused(
      images::decode_bmp,
      Bmp{.width = 16, .height = 16, .bits = 1, .palette = {0, 0xFFFFFF}, .pixels = Bytes(64, 0x55)}
          .bytes(),
      {"limit", "16 x 16"});
  kiln::data::set_image_pixel_limit(saved);
}

TEST(ImagesBmp, UnsupportedCodingsAndHeadersSayWhat) {
  expect_refused(images::decode_bmp, Bytes{'P', 'K', 3, 4}, {"BM"});
  expect_refused(images::decode_bmp, Bmp{.bits = 8, .compression = 1}.bytes(), {"RLE8"});
  expect_refused(images::decode_bmp, Bmp{.bits = 4, .compression = 2}.bytes(), {"RLE4"});
  expect_refused(images::decode_bmp, Bmp{.bits = 0, .compression = 4}.bytes(), {"JPEG"});
  expect_refused(images::decode_bmp, Bmp{.bits = 0, .compression = 5}.bytes(), {"PNG"});
  expect_refused(images::decode_bmp, Bmp{.compression = 11}.bytes(), {"compression 11"});
  expect_refused(images::decode_bmp, Bmp{.info_size = 64}.bytes(), {"64 bytes"});
  expect_refused(images::decode_bmp, Bmp{.bits = 7}.bytes(), {"7 bits per pixel"});
  expect_refused(images::decode_bmp,
                 Bmp{.compression = 3, .masks = {0xFF0000, 0xFF00, 0xFF}}.bytes(), {"bit-field"});
}

TEST(ImagesBmp, MasksMustBeContiguousNarrowAndInsideThePixel) {
  const auto with_masks = [](int bits, std::vector<std::uint32_t> masks) {
    return Bmp{.bits = bits, .compression = 3, .masks = std::move(masks), .pixels = {0, 0, 0, 0}}
        .bytes();
  };
  expect_refused(images::decode_bmp, with_masks(16, {0x0F0F, 0x00F0, 0}), {"contiguous"});
  expect_refused(images::decode_bmp, with_masks(32, {0x1FFFF, 0, 0}), {"17 bits"});
  expect_refused(images::decode_bmp, with_masks(32, {0xFFFFFFFF, 0, 0}), {"32 bits"});
  expect_refused(images::decode_bmp, with_masks(16, {0x1F0000, 0, 0}), {"outside"});
}

// ---- TGA: files Pillow wrote -------------------------------------------------------------------

TEST(ImagesTga, FilesPillowWroteDecodeToTheirFormula) {
  // Raw BGR from the bottom row, after a 4-byte image ID.
  const Image rgb = decode(images::decode_tga, fixture("tga_rgb.tga"));
  EXPECT_EQ(rgb.shape, kShape3);
  EXPECT_EQ(rgb.values, expected(3, value));
  // Run-length BGRA from the top row.
  const Image rgba = decode(images::decode_tga, fixture("tga_rgba_rle.tga"));
  EXPECT_EQ(rgba.shape, (kiln::Shape{kHeight, kWidth, 4}));
  EXPECT_EQ(rgba.values, expected(4, block));
  const Image grey = decode(images::decode_tga, fixture("tga_grey.tga"));
  EXPECT_EQ(grey.shape, (kiln::Shape{kHeight, kWidth, 1}));
  EXPECT_EQ(grey.values, expected(1, value));
  const Image grey_alpha = decode(images::decode_tga, fixture("tga_grey_alpha_rle.tga"));
  EXPECT_EQ(grey_alpha.shape, (kiln::Shape{kHeight, kWidth, 2}));
  EXPECT_EQ(grey_alpha.values, expected(2, block));
  const auto palette_colour = [](int x, int y, int c) { return colour(index_at(x, y), c); };
  for (const char* name : {"tga_pal.tga", "tga_pal_rle.tga"}) {
    const Image pal = decode(images::decode_tga, fixture(name));
    EXPECT_EQ(pal.shape, kShape3) << name;
    EXPECT_EQ(pal.values, expected(3, palette_colour)) << name;
  }
  for (const char* name : {"tga_rgb.tga", "tga_rgba_rle.tga", "tga_grey.tga",
                           "tga_grey_alpha_rle.tga", "tga_pal.tga", "tga_pal_rle.tga"})
    EXPECT_TRUE(images::looks_like_tga(fixture(name))) << name;
}

// ---- TGA: files built here ---------------------------------------------------------------------

TEST(ImagesTga, TrueColourAndGreyDepths) {
  // 15/16 bits are 5-5-5 RGB (the top bit is not alpha): 0x7C00 red, 0x83E1 green + blue 1/31.
  for (const int bits : {15, 16}) {
    const Image image =
        decode(images::decode_tga,
               Tga{.width = 2, .bits = bits, .pixels = {0x00, 0x7C, 0xE1, 0x83}}.bytes());
    EXPECT_EQ(image.shape, (kiln::Shape{1, 2, 3}));
    EXPECT_EQ(image.values, (std::vector<float>{1, 0, 0, 0, 1, 1 / 31.0f}));
  }
  const Image bgra = decode(images::decode_tga, Tga{.bits = 32, .pixels = {1, 2, 3, 4}}.bytes());
  EXPECT_EQ(bgra.shape, (kiln::Shape{1, 1, 4}));
  EXPECT_EQ(bgra.values, unit({3, 2, 1, 4}));
  const Image grey_alpha =
      decode(images::decode_tga, Tga{.type = 3, .bits = 16, .pixels = {200, 100}}.bytes());
  EXPECT_EQ(grey_alpha.shape, (kiln::Shape{1, 1, 2}));
  EXPECT_EQ(grey_alpha.values, unit({200, 100}));
  // The cases the stb_image-based reader was tested with.
  const Image grey = decode(
      images::decode_tga,
      Tga{.type = 3, .width = 2, .height = 2, .bits = 8, .pixels = {0, 85, 170, 255}}.bytes());
  EXPECT_EQ(grey.shape, (kiln::Shape{2, 2, 1}));
  EXPECT_EQ(grey.values, unit({0, 85, 170, 255}));
  const Image run = decode(images::decode_tga,
                           Tga{.type = 11, .width = 6, .bits = 8, .pixels = {0x85, 200}}.bytes());
  EXPECT_EQ(run.values, std::vector<float>(6, 200 / 255.0f));
}

TEST(ImagesTga, OriginBitsPlaceRowsAndColumns) {
  const Bytes grey = {1, 2, 3, 4, 5, 6};  // 3 x 2, in file order
  const auto with = [&](int descriptor) {
    return decode(images::decode_tga, Tga{.type = 3,
                                          .width = 3,
                                          .height = 2,
                                          .bits = 8,
                                          .descriptor = descriptor,
                                          .pixels = grey}
                                          .bytes())
        .values;
  };
  EXPECT_EQ(with(0x20), unit({1, 2, 3, 4, 5, 6}));  // top left
  EXPECT_EQ(with(0x00), unit({4, 5, 6, 1, 2, 3}));  // bottom left
  EXPECT_EQ(with(0x30), unit({3, 2, 1, 6, 5, 4}));  // top right
  EXPECT_EQ(with(0x10), unit({6, 5, 4, 3, 2, 1}));  // bottom right
}

TEST(ImagesTga, ColourMapsHonourTheirFirstIndex) {
  // Entries 2 and 3 (5-5-5: red, blue); indices 0 and 4 lie outside the map and give black.
  const Tga tga{.type = 1,
                .width = 4,
                .bits = 8,
                .map_type = 1,
                .map_first = 2,
                .map_length = 2,
                .map_bits = 16,
                .id = {'i', 'd'},
                .map = {0x00, 0x7C, 0x1F, 0x00},
                .pixels = {2, 3, 0, 4}};
  const Image image = decode(images::decode_tga, tga.bytes());
  EXPECT_EQ(image.shape, (kiln::Shape{1, 4, 3}));
  EXPECT_EQ(image.values, (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  // 16-bit indices into a map of 32-bit BGRA entries: RGBA; outside the map all channels are 0.
  const Tga wide{.type = 1,
                 .width = 2,
                 .bits = 16,
                 .map_type = 1,
                 .map_length = 1,
                 .map_bits = 32,
                 .map = {10, 20, 30, 40},
                 .pixels = {0, 0, 1, 1}};
  const Image rgba = decode(images::decode_tga, wide.bytes());
  EXPECT_EQ(rgba.shape, (kiln::Shape{1, 2, 4}));
  EXPECT_EQ(rgba.values, unit({30, 20, 10, 40, 0, 0, 0, 0}));
  // A map of 8-bit entries is a map of greys: 1 channel.
  const Tga greys{.type = 9,
                  .width = 3,
                  .bits = 8,
                  .map_type = 1,
                  .map_length = 2,
                  .map_bits = 8,
                  .map = {50, 150},
                  .pixels = {0x82, 1}};
  const Image grey = decode(images::decode_tga, greys.bytes());
  EXPECT_EQ(grey.shape, (kiln::Shape{1, 3, 1}));
  EXPECT_EQ(grey.values, unit({150, 150, 150}));
  // A colour map in a true-colour file is skipped.
  const Tga skipped{.bits = 24,
                    .map_type = 1,
                    .map_length = 2,
                    .map_bits = 24,
                    .map = {9, 9, 9, 9, 9, 9},
                    .pixels = {1, 2, 3}};
  EXPECT_EQ(decode(images::decode_tga, skipped.bytes()).values, unit({3, 2, 1}));
}

TEST(ImagesTga, RunLengthPacketsCrossRowsAndStopAtTheImagesEnd) {
  // 2 x 2 grey: a raw packet of three pixels runs into the second row, then a run of one.
  const Image crossing =
      decode(images::decode_tga,
             Tga{.type = 11, .width = 2, .height = 2, .bits = 8, .pixels = {0x02, 1, 2, 3, 0x80, 4}}
                 .bytes());
  EXPECT_EQ(crossing.values, unit({1, 2, 3, 4}));
  // A run of 8 in a 3-pixel image, and a raw packet of 4 whose last pixel is missing: both are
  // cut at the image's end.
  EXPECT_EQ(decode(images::decode_tga,
                   Tga{.type = 11, .width = 3, .bits = 8, .pixels = {0x87, 200}}.bytes())
                .values,
            unit({200, 200, 200}));
  EXPECT_EQ(
      decode(images::decode_tga,
             Tga{.type = 10, .width = 3, .bits = 24, .pixels = {0x03, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
                 .bytes())
          .values,
      unit({3, 2, 1, 6, 5, 4, 9, 8, 7}));
}

// ---- TGA: damaged and hostile files ------------------------------------------------------------

TEST(ImagesTga, TruncatedFilesAreRefused) {
  // A raw 4 x 4 RGB image needs 48 bytes of pixels; it has 20. Refused before allocation.
  expect_refused(images::decode_tga,
                 Tga{.width = 4, .height = 4, .pixels = Bytes(20, 0x80)}.bytes(),
                 {"truncated", "4 x 4"});
  // Run-length data ending inside a packet (a raw packet of 5 pixels with 2 present), and before
  // the image is complete: found while decoding.
  expect_refused(images::decode_tga,
                 Tga{.type = 11, .width = 5, .bits = 8, .pixels = {0x04, 1, 2}}.bytes(),
                 {"truncated", "run-length packet"}, false);
  expect_refused(images::decode_tga,
                 Tga{.type = 11, .width = 5, .bits = 8, .pixels = {0x81, 1}}.bytes(),
                 {"truncated", "run-length packet"}, false);
  // A colour map cut short, and a header cut short.
  expect_refused(images::decode_tga,
                 Tga{.type = 1,
                     .bits = 8,
                     .map_type = 1,
                     .map_length = 200,
                     .map_bits = 24,
                     .map = Bytes(30, 1),
                     .pixels = {0}}
                     .bytes(),
                 {"truncated", "colour map"});
  expect_refused(images::decode_tga, Bytes(10, 0), {"truncated", "header"});
}

TEST(ImagesTga, AbsurdSizesAreRefusedBeforeAllocation) {
  // 19 bytes claiming 65280 x 24576 raw grey pixels.
  expect_refused(images::decode_tga,
                 Tga{.type = 3, .width = 65280, .height = 24576, .bits = 8, .pixels = {0}}.bytes(),
                 {"65280", "24576"});
  // Run-length coded: 65535 x 65535 pixels in two bytes.
  expect_refused(
      images::decode_tga,
      Tga{.type = 11, .width = 65535, .height = 65535, .bits = 8, .pixels = {0xFF, 7}}.bytes(),
      {"65535"});
  // 1000 x 1000 run-length pixels cannot come from 20 bytes.
  expect_refused(
      images::decode_tga,
      Tga{.type = 10, .width = 1000, .height = 1000, .bits = 24, .pixels = Bytes(20, 0xFF)}.bytes(),
      {"1000 x 1000", "bytes"});
  expect_refused(images::decode_tga, Tga{.width = 0, .pixels = {1, 2, 3}}.bytes(), {"width 0"});
  expect_refused(images::decode_tga, Tga{.height = 0, .pixels = {1, 2, 3}}.bytes(), {"height 0"});
}

TEST(ImagesTga, ImplausibleHeadersAreRefusedAndNotTakenForTga) {
  const std::vector<std::pair<Tga, const char*>> cases = {
      {Tga{.type = 4}, "image type 4"},
      {Tga{.type = 0}, "image type 0"},
      {Tga{.map_type = 2}, "colour map type 2"},
      {Tga{.bits = 8}, "true-colour"},
      {Tga{.type = 3, .bits = 24}, "grey"},
      {Tga{.type = 1, .bits = 8}, "no colour map"},
      {Tga{.type = 1, .bits = 24, .map_type = 1, .map_length = 1, .map_bits = 24}, "indices"},
      {Tga{.type = 1, .bits = 8, .map_type = 1, .map_length = 1, .map_bits = 12}, "12 bits"},
      {Tga{.width = 0}, "width 0"},
  };
  for (const auto& [tga, word] : cases) {
    Tga with_pixels = tga;
    with_pixels.pixels = Bytes(8, 1);
    expect_refused(images::decode_tga, with_pixels.bytes(), {word});
    EXPECT_FALSE(images::looks_like_tga(with_pixels.bytes())) << word;
  }
  EXPECT_TRUE(images::looks_like_tga(Tga{.pixels = {1, 2, 3}}.bytes()));
  EXPECT_FALSE(images::looks_like_tga(Bytes(17, 0)));
  EXPECT_FALSE(images::looks_like_tga(Bmp{}.bytes()));
  const Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13,
                     'I',  'H', 'D', 'R', 0,    0,    0,    1,    0, 0, 0, 1};
  EXPECT_FALSE(images::looks_like_tga(png));
}

}  // namespace
