// The PNM, Radiance HDR and PSD decoders, called directly: files Pillow wrote (PNM) and files
// built here byte by byte (HDR and PSD, raw and run-length coded, 8 and 16 bits) decode to the
// values their formula gives; damaged and hostile files are ImageErrors saying what was wrong,
// and files claiming more pixels than they hold fail before the canvas allocates anything.
#include <gtest/gtest.h>

#include <algorithm>

#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/images/image_codec.hpp"
#include "kiln/kiln.hpp"

namespace {

namespace img = kiln::data::images;
using Bytes = std::vector<std::uint8_t>;
using Decoder = void (*)(img::Bytes, img::Canvas&);

const std::string kImages = std::string(KILN_TEST_DATA_DIR) + "/images/";

Bytes read_fixture(const std::string& name) {
  std::ifstream f(kImages + name, std::ios::binary);
  if (!f) throw std::runtime_error("test setup: cannot open " + kImages + name);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void put_be(Bytes& b, std::uint64_t v, int bytes) {
  for (int s = 8 * (bytes - 1); s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}
Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

struct Image {
  kiln::Shape shape;
  std::vector<float> values;
};

Image decode(Decoder decoder, const Bytes& file) {
  img::Canvas canvas;
  decoder(img::Bytes(file), canvas);
  const kiln::Tensor t = canvas.take();
  return {t.shape(), t.to_vector<float>()};
}

// The ImageError's message ("" when the decoder succeeds); `allocated` tells whether the canvas
// had storage when the error came.
std::string error_of(Decoder decoder, const Bytes& file, bool* allocated = nullptr) {
  img::Canvas canvas;
  try {
    decoder(img::Bytes(file), canvas);
  } catch (const img::ImageError& e) {
    if (allocated != nullptr) *allocated = canvas.allocated();
    return e.what();
  }
  return "";
}

bool has(const std::string& message, const std::string& word) {
  return message.find(word) != std::string::npos;
}

// Expects an ImageError whose message holds every one of `words`, raised before allocation
// when `before_allocation`.
void expect_error(Decoder decoder, const Bytes& file, std::vector<std::string> words,
                  bool before_allocation = false) {
  bool allocated = false;
  const std::string message = error_of(decoder, file, &allocated);
  ASSERT_NE(message, "") << "decoded without an error";
  for (const std::string& w : words)
    EXPECT_TRUE(has(message, w)) << "'" << w << "' not in: " << message;
  if (before_allocation) {
    EXPECT_FALSE(allocated) << message;
  }
}

// ---- PNM ---------------------------------------------------------------------------------------

// The fixtures' formula (tests/data/images/make_pnm_fixtures.py), 7 x 5 pixels.
constexpr int kFixtureWidth = 7, kFixtureHeight = 5;
int value8(int x, int y, int c) { return (x * 37 + y * 91 + c * 53) % 256; }
int value16(int x, int y) { return (x * 4099 + y * 9001 + 17) % 65536; }

TEST(ImagesPnm, FilesPillowWroteDecode) {
  const Image grey = decode(img::decode_pnm, read_fixture("pnm_grey.pgm"));
  const Image rgb = decode(img::decode_pnm, read_fixture("pnm_rgb.ppm"));
  const Image grey16 = decode(img::decode_pnm, read_fixture("pnm_grey16.pgm"));
  EXPECT_EQ(grey.shape, (kiln::Shape{kFixtureHeight, kFixtureWidth, 1}));
  EXPECT_EQ(rgb.shape, (kiln::Shape{kFixtureHeight, kFixtureWidth, 3}));
  EXPECT_EQ(grey16.shape, (kiln::Shape{kFixtureHeight, kFixtureWidth, 1}));
  std::vector<float> want_grey, want_rgb, want_grey16;
  for (int y = 0; y < kFixtureHeight; ++y) {
    for (int x = 0; x < kFixtureWidth; ++x) {
      want_grey.push_back(static_cast<float>(value8(x, y, 0)) / 255.0f);
      for (int c = 0; c < 3; ++c) want_rgb.push_back(static_cast<float>(value8(x, y, c)) / 255.0f);
      want_grey16.push_back(static_cast<float>(value16(x, y)) / 65535.0f);
    }
  }
  EXPECT_EQ(grey.values, want_grey);
  EXPECT_EQ(rgb.values, want_rgb);
  EXPECT_EQ(grey16.values, want_grey16);
}

TEST(ImagesPnm, HeaderCommentsMaxvalAndSixteenBitSamples) {
  // Comments between every token, a CR LF, and a maxval below 255 that the values scale by.
  Bytes pgm = text("P5#magic\n2 # width\r\n  1\n#maxval next\n15\n");
  pgm.insert(pgm.end(), {5, 15});
  EXPECT_EQ(decode(img::decode_pnm, pgm).values, (std::vector<float>{5.0f / 15.0f, 1.0f}));
  // A sample above maxval is clamped to 1.
  Bytes over = text("P5 1 1 15\n");
  over.push_back(200);
  EXPECT_EQ(decode(img::decode_pnm, over).values, std::vector<float>{1.0f});
  // maxval 1000 takes two bytes a sample, big-endian.
  Bytes ppm = text("P6 1 1 1000\n");
  ppm.insert(ppm.end(), {0x01, 0xF4, 0x03, 0xE8, 0x00, 0x00});
  const Image deep = decode(img::decode_pnm, ppm);
  EXPECT_EQ(deep.shape, (kiln::Shape{1, 1, 3}));
  EXPECT_EQ(deep.values, (std::vector<float>{500.0f / 1000.0f, 1.0f, 0.0f}));
  // Data after the image (a second image of a multi-image file) is ignored.
  Bytes two = text("P5 1 1 255\n");
  two.insert(two.end(), {51, 'P', '5'});
  EXPECT_EQ(decode(img::decode_pnm, two).values, std::vector<float>{0.2f});
}

TEST(ImagesPnm, HostileHeadersAreErrors) {
  // "P6" and an endless run of digits: a bounded error, never a signed overflow.
  expect_error(img::decode_pnm,
               {0x50, 0x36, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37,
                0x37, 0xdc},
               {"width", "digits"}, true);
  expect_error(img::decode_pnm, text("P5 1 99999999999999999999 255\n"), {"height", "digits"});
  expect_error(img::decode_pnm, text("P5 2147483648 1 255\n"), {"width", "2147483648"});
  expect_error(img::decode_pnm, text("P5 1 1 0\n\x01"), {"maxval", "0"});
  expect_error(img::decode_pnm, text("P5 1 1 70000\n\x01\x01"), {"maxval", "70000"});
  expect_error(img::decode_pnm, text("P5 x 1 255\n"), {"width", "not a decimal"});
  expect_error(img::decode_pnm, text("P5 1 1 255x\x01"), {"whitespace"});
  expect_error(img::decode_pnm, text("P5 1 1 255"), {"truncated"});
  expect_error(img::decode_pnm, text("P5 1 1 # a comment without end"), {"truncated"});
  expect_error(img::decode_pnm, text("P3 1 1 255\n1"), {"P5 or P6"});
  expect_error(img::decode_pnm, text("P5 0 4 255\n"), {"width 0"});
}

TEST(ImagesPnm, SamplesMissingOrAbsurdSizesFailBeforeAllocation) {
  Bytes cut = text("P6 4 4 255\n");
  cut.insert(cut.end(), 47, 9);  // 48 needed
  expect_error(img::decode_pnm, cut, {"truncated", "4 x 4"}, true);
  Bytes cut16 = text("P5 2 2 65535\n");
  cut16.insert(cut16.end(), 7, 9);  // 8 needed
  expect_error(img::decode_pnm, cut16, {"truncated"}, true);
  Bytes huge = text("P6 2147483647 2147483647 65535\n");
  huge.insert(huge.end(), 6, 0);
  expect_error(img::decode_pnm, huge, {"truncated", "2147483647"}, true);
}

// ---- HDR ---------------------------------------------------------------------------------------

using Rgbe = std::array<std::uint8_t, 4>;

Bytes hdr_header(std::uint64_t width, std::uint64_t height) {
  return text("#?RADIANCE\n# made for kiln's tests\nFORMAT=32-bit_rle_rgbe\nEXPOSURE=1.0\n\n-Y " +
              std::to_string(height) + " +X " + std::to_string(width) + "\n");
}

float rgbe_value(std::uint8_t mantissa, std::uint8_t exponent) {
  return exponent == 0 ? 0.0f : std::ldexp(static_cast<float>(mantissa), exponent - 136);
}

// A scanline in the new run-length coding: each plane as runs of 3 or more equal bytes (at most
// 127) and literals (at most 128) between them.
void put_rle_scanline(Bytes& b, const std::vector<Rgbe>& pixels) {
  const std::size_t n = pixels.size();
  b.insert(b.end(), {2, 2, static_cast<std::uint8_t>(n >> 8), static_cast<std::uint8_t>(n)});
  for (int c = 0; c < 4; ++c) {
    std::vector<std::uint8_t> plane;
    for (const Rgbe& p : pixels) plane.push_back(p[static_cast<std::size_t>(c)]);
    std::size_t i = 0;
    while (i < n) {
      std::size_t run = 1;
      while (i + run < n && run < 127 && plane[i + run] == plane[i]) ++run;
      if (run >= 3) {
        b.push_back(static_cast<std::uint8_t>(128 + run));
        b.push_back(plane[i]);
        i += run;
        continue;
      }
      // A literal up to the next run of 3 or 128 bytes.
      std::size_t end = i;
      while (end < n && end - i < 128 &&
             !(end + 2 < n && plane[end] == plane[end + 1] && plane[end] == plane[end + 2]))
        ++end;
      if (end == i) end = i + 1;
      b.push_back(static_cast<std::uint8_t>(end - i));
      b.insert(b.end(), plane.begin() + static_cast<std::ptrdiff_t>(i),
               plane.begin() + static_cast<std::ptrdiff_t>(end));
      i = end;
    }
  }
}

void put_flat_scanline(Bytes& b, const std::vector<Rgbe>& pixels) {
  for (const Rgbe& p : pixels) b.insert(b.end(), p.begin(), p.end());
}

std::vector<float> values_of(const std::vector<std::vector<Rgbe>>& rows) {
  std::vector<float> v;
  for (const auto& row : rows)
    for (const Rgbe& p : row)
      for (int c = 0; c < 3; ++c) v.push_back(rgbe_value(p[static_cast<std::size_t>(c)], p[3]));
  return v;
}

TEST(ImagesHdr, FlatPixelsDecodeLinear) {
  // (128, 64, 32, 129) is (1, 0.5, 0.25); exponent 0 is black whatever the mantissas.
  const std::vector<std::vector<Rgbe>> rows = {{{128, 64, 32, 129}, {200, 7, 255, 0}},
                                               {{255, 128, 130, 200}, {129, 1, 0, 1}}};
  Bytes file = hdr_header(2, 2);
  for (const auto& row : rows) put_flat_scanline(file, row);
  const Image image = decode(img::decode_hdr, file);
  EXPECT_EQ(image.shape, (kiln::Shape{2, 2, 3}));
  EXPECT_EQ(image.values, values_of(rows));
  EXPECT_EQ(image.values[0], 1.0f);
  EXPECT_EQ(image.values[2], 0.25f);
  EXPECT_EQ(image.values[3], 0.0f);
  // #?RGBE is the other signature.
  Bytes rgbe = text("#?RGBE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 1\n");
  rgbe.insert(rgbe.end(), {128, 128, 128, 130});
  EXPECT_EQ(decode(img::decode_hdr, rgbe).values, (std::vector<float>(3, 2.0f)));
}

TEST(ImagesHdr, RunLengthCodedScanlinesDecode) {
  // Width 12: runs (the green and exponent planes) and literals (red); the second scanline is
  // flat, which the format allows line by line.
  std::vector<std::vector<Rgbe>> rows(3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 12; ++x)
      rows[static_cast<std::size_t>(y)].push_back(
          {static_cast<std::uint8_t>(128 + x * 9 + y), static_cast<std::uint8_t>(x < 7 ? 90 : 250),
           static_cast<std::uint8_t>(x % 2 == 0 ? 140 : 141),
           static_cast<std::uint8_t>(x == 11 ? 0 : 120 + x / 4 + y * 10)});
  Bytes file = hdr_header(12, 3);
  put_rle_scanline(file, rows[0]);
  put_flat_scanline(file, rows[1]);
  put_rle_scanline(file, rows[2]);
  const Image image = decode(img::decode_hdr, file);
  EXPECT_EQ(image.shape, (kiln::Shape{3, 12, 3}));
  EXPECT_EQ(image.values, values_of(rows));
  // A long scanline: runs of 127 and a literal of 128 in one plane.
  std::vector<Rgbe> wide;
  for (int x = 0; x < 300; ++x)
    wide.push_back({static_cast<std::uint8_t>(x < 128 ? x : 200),
                    static_cast<std::uint8_t>(x / 150), 77, 130});
  Bytes long_line = hdr_header(300, 1);
  put_rle_scanline(long_line, wide);
  EXPECT_EQ(decode(img::decode_hdr, long_line).values, values_of({wide}));
}

TEST(ImagesHdr, DamagedHeadersAreErrors) {
  Bytes endless = text("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n# ");
  endless.insert(endless.end(), 10000, 'a');
  expect_error(img::decode_hdr, endless, {"line longer than 4096"});
  expect_error(img::decode_hdr, text("#?RADIANCE\n# no end"), {"truncated"});
  expect_error(img::decode_hdr, text("#?RADIANCE\n\n-Y 1 +X 1\n\x80\x80\x80\x80"), {"FORMAT"});
  expect_error(img::decode_hdr, text("#?RADIANCE\nFORMAT=32-bit_rle_xyze\n\n-Y 1 +X 1\n"),
               {"XYZ"});
  expect_error(img::decode_hdr, text("#?RADIANCE\nFORMAT=rgb\n\n-Y 1 +X 1\n"), {"FORMAT"});
  expect_error(img::decode_hdr, text("#?PHOTOSHOP\n"), {"not a Radiance"});
  Bytes flipped = text("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n+Y 1 +X 1\n");
  flipped.insert(flipped.end(), {128, 128, 128, 128});
  expect_error(img::decode_hdr, flipped, {"orientation"});
  expect_error(img::decode_hdr, text("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X\n"),
               {"resolution line"});
  expect_error(img::decode_hdr,
               text("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 123456789012345 +X 1\n"),
               {"height", "digits"});
  expect_error(img::decode_hdr, text("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 3 +X 0\n"),
               {"width 0"});
}

TEST(ImagesHdr, DamagedPixelsAreErrors) {
  // A run of 9 in a scanline of width 8.
  Bytes run = hdr_header(8, 1);
  run.insert(run.end(), {2, 2, 0, 8, 128 + 9, 100});
  run.insert(run.end(), 30, 0);
  expect_error(img::decode_hdr, run, {"run of 9", "crossing"});
  // A literal of 5 after 5 bytes.
  Bytes literal = hdr_header(8, 1);
  literal.insert(literal.end(), {2, 2, 0, 8, 5, 1, 2, 3, 4, 5, 5, 1, 2, 3, 4, 5});
  literal.insert(literal.end(), 30, 0);
  expect_error(img::decode_hdr, literal, {"literal of 5", "crossing"});
  // Zero-length literals would make no progress.
  Bytes empty = hdr_header(8, 1);
  empty.insert(empty.end(), {2, 2, 0, 8, 0});
  empty.insert(empty.end(), 30, 0);
  expect_error(img::decode_hdr, empty, {"count 0"});
  // The stream ends in the third plane.
  Bytes cut = hdr_header(8, 1);
  cut.insert(cut.end(), {2, 2, 0, 8, 8, 1, 2, 3, 4, 5, 6, 7, 8, 128 + 8, 9});
  expect_error(img::decode_hdr, cut, {"truncated", "run-length"});
  // A marker for another width.
  Bytes other = hdr_header(8, 1);
  other.insert(other.end(), {2, 2, 0, 9});
  other.insert(other.end(), 40, 0);
  expect_error(img::decode_hdr, other, {"width 9"});
  // The old coding's repeat marker.
  Bytes old = hdr_header(2, 1);
  old.insert(old.end(), {128, 128, 128, 130, 1, 1, 1, 5});
  expect_error(img::decode_hdr, old, {"old"});
  // Flat pixels missing.
  Bytes flat = hdr_header(2, 2);
  flat.insert(flat.end(), 12, 128);
  expect_error(img::decode_hdr, flat, {"truncated"}, true);
  // Huge claims from a few bytes, flat and codable widths.
  Bytes huge = hdr_header(2000000000, 2000000000);
  huge.insert(huge.end(), {2, 2, 0, 8});
  expect_error(img::decode_hdr, huge, {"truncated", "2000000000"}, true);
  Bytes wide = hdr_header(32767, 1000000);
  wide.insert(wide.end(), 4096, 0x81);
  expect_error(img::decode_hdr, wide, {"truncated", "32767"}, true);
}

// ---- PSD ---------------------------------------------------------------------------------------

// Plane samples: 8-bit (runs of 3 along x, for the run-length coded files) and 16-bit.
std::uint32_t psd_sample(int x, int y, int c, int depth) {
  if (depth == 8) return static_cast<std::uint32_t>(((x / 3) * 37 + y * 91 + c * 53) % 256);
  return static_cast<std::uint32_t>(((x / 3) * 4099 + y * 9001 + c * 7919 + 17) % 65536);
}

// The header and the three sections (a few bytes of colour mode data and of image resources,
// to be skipped), up to the compression field.
Bytes psd_start(int mode, int channels, int width, int height, int depth) {
  Bytes b = text("8BPS");
  put_be(b, 1, 2);
  b.insert(b.end(), 6, 0);
  put_be(b, static_cast<std::uint64_t>(channels), 2);
  put_be(b, static_cast<std::uint64_t>(height), 4);
  put_be(b, static_cast<std::uint64_t>(width), 4);
  put_be(b, static_cast<std::uint64_t>(depth), 2);
  put_be(b, static_cast<std::uint64_t>(mode), 2);
  put_be(b, 3, 4);
  b.insert(b.end(), {0xAA, 0xBB, 0xCC});
  put_be(b, 5, 4);
  b.insert(b.end(), 5, 0xEE);
  put_be(b, 0, 4);
  return b;
}

Bytes psd_row(int y, int c, int width, int depth) {
  Bytes row;
  for (int x = 0; x < width; ++x) put_be(row, psd_sample(x, y, c, depth), depth / 8);
  return row;
}

Bytes psd_raw(int mode, int channels, int width, int height, int depth) {
  Bytes b = psd_start(mode, channels, width, height, depth);
  put_be(b, 0, 2);
  for (int c = 0; c < channels; ++c)
    for (int y = 0; y < height; ++y) {
      const Bytes row = psd_row(y, c, width, depth);
      b.insert(b.end(), row.begin(), row.end());
    }
  return b;
}

// PackBits: runs of 2 to 128 equal bytes, literals of 1 to 128; every row starts with a -128
// no-op, which decoders skip.
Bytes packbits(const Bytes& row) {
  Bytes out = {0x80};
  std::size_t i = 0;
  while (i < row.size()) {
    std::size_t run = 1;
    while (i + run < row.size() && run < 128 && row[i + run] == row[i]) ++run;
    if (run >= 2) {
      out.push_back(static_cast<std::uint8_t>(257 - run));
      out.push_back(row[i]);
      i += run;
      continue;
    }
    std::size_t end = i + 1;
    while (end < row.size() && end - i < 128 && !(end + 1 < row.size() && row[end] == row[end + 1]))
      ++end;
    out.push_back(static_cast<std::uint8_t>(end - i - 1));
    out.insert(out.end(), row.begin() + static_cast<std::ptrdiff_t>(i),
               row.begin() + static_cast<std::ptrdiff_t>(end));
    i = end;
  }
  return out;
}

Bytes psd_rle(int mode, int channels, int width, int height, int depth) {
  Bytes b = psd_start(mode, channels, width, height, depth);
  put_be(b, 1, 2);
  std::vector<Bytes> rows;
  for (int c = 0; c < channels; ++c)
    for (int y = 0; y < height; ++y) rows.push_back(packbits(psd_row(y, c, width, depth)));
  for (const Bytes& r : rows) put_be(b, r.size(), 2);
  for (const Bytes& r : rows) b.insert(b.end(), r.begin(), r.end());
  return b;
}

// The values a decoder gives: `out` channels of which the first `planes` come from the file,
// and an opaque alpha after them where out > planes. Where the file holds the alpha, Photoshop
// stored colour c at opacity a as a * c + (1 - a) (blended over white), which the decoder undoes.
std::vector<float> psd_values(int width, int height, int depth, int planes, int out) {
  const float scale = depth == 8 ? 255.0f : 65535.0f;
  std::vector<float> v;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const std::size_t first = v.size();
      for (int c = 0; c < out; ++c)
        v.push_back(c < planes ? static_cast<float>(psd_sample(x, y, c, depth)) / scale : 1.0f);
      const float a = v.back();
      if (planes == out && out % 2 == 0 && a > 0.0f && a < 1.0f)
        for (std::size_t c = first; c + 1 < v.size(); ++c)
          v[c] = std::clamp((v[c] - (1.0f - a)) / a, 0.0f, 1.0f);
    }
  return v;
}

struct PsdCase {
  const char* name;
  int mode, channels, depth, planes, out;
};

TEST(ImagesPsd, RawAndRunLengthCodedImagesDecode) {
  const PsdCase cases[] = {
      {"RGB 8-bit", 3, 3, 8, 3, 4},      {"RGBA 8-bit", 3, 4, 8, 4, 4},
      {"RGBA + spot 8-bit", 3, 5, 8, 4, 4}, {"RGB 16-bit", 3, 3, 16, 3, 4},
      {"RGBA 16-bit", 3, 4, 16, 4, 4},   {"grey 8-bit", 1, 1, 8, 1, 1},
      {"grey 16-bit", 1, 1, 16, 1, 1},   {"grey+alpha 8-bit", 1, 2, 8, 2, 2},
      {"grey+alpha+mask 16-bit", 1, 3, 16, 2, 2},
  };
  // 300 pixels wide: PackBits rows longer than one run or literal.
  for (const int width : {5, 300}) {
    const int height = 4;
    for (const PsdCase& k : cases) {
      SCOPED_TRACE(std::string(k.name) + ", width " + std::to_string(width));
      const std::vector<float> want = psd_values(width, height, k.depth, k.planes, k.out);
      const kiln::Shape shape{height, width, k.out};
      const Image raw =
          decode(img::decode_psd, psd_raw(k.mode, k.channels, width, height, k.depth));
      EXPECT_EQ(raw.shape, shape);
      EXPECT_EQ(raw.values, want);
      const Image rle =
          decode(img::decode_psd, psd_rle(k.mode, k.channels, width, height, k.depth));
      EXPECT_EQ(rle.shape, shape);
      EXPECT_EQ(rle.values, want);
    }
  }
}

TEST(ImagesPsd, PlanesNotGivenOutAreNotRead) {
  // A raw grey file whose second and third planes are missing altogether decodes its first.
  Bytes raw = psd_start(1, 1, 2, 1, 8);
  put_be(raw, 0, 2);
  raw.insert(raw.end(), {0, 255});
  EXPECT_EQ(decode(img::decode_psd, raw).values, (std::vector<float>{0, 1}));
  // A coded RGBA file whose fifth channel's rows have counts past the end.
  Bytes rle = psd_start(3, 5, 1, 1, 8);
  put_be(rle, 1, 2);
  for (int c = 0; c < 4; ++c) put_be(rle, 2, 2);
  put_be(rle, 60000, 2);
  for (int c = 0; c < 4; ++c)
    rle.insert(rle.end(), {0, static_cast<std::uint8_t>(c == 3 ? 255 : 51 * c)});
  EXPECT_EQ(decode(img::decode_psd, rle).values, (std::vector<float>{0, 0.2f, 0.4f, 1}));
}

TEST(ImagesPsd, UnsupportedFilesAreErrorsNamingWhy) {
  Bytes psb = psd_raw(3, 3, 1, 1, 8);
  psb[5] = 2;
  expect_error(img::decode_psd, psb, {"PSB"});
  expect_error(img::decode_psd, psd_raw(4, 4, 1, 1, 8), {"CMYK"});
  expect_error(img::decode_psd, psd_raw(9, 3, 1, 1, 8), {"Lab"});
  expect_error(img::decode_psd, psd_raw(2, 1, 1, 1, 8), {"indexed"});
  expect_error(img::decode_psd, psd_raw(3, 2, 1, 1, 8), {"RGB", "2 channels"});
  Bytes deep = psd_start(3, 3, 1, 1, 32);
  put_be(deep, 0, 2);
  deep.insert(deep.end(), 12, 0);
  expect_error(img::decode_psd, deep, {"depth of 32"});
  Bytes zip = psd_start(3, 3, 1, 1, 8);
  put_be(zip, 2, 2);
  zip.insert(zip.end(), 20, 0);
  expect_error(img::decode_psd, zip, {"ZIP"});
  expect_error(img::decode_psd, psd_start(3, 57, 1, 1, 8), {"57 channels"});
  expect_error(img::decode_psd, psd_start(3, 3, 30001, 1, 8), {"30001", "30000"});
  expect_error(img::decode_psd, psd_start(3, 3, 0, 1, 8), {"width 0"});
  expect_error(img::decode_psd, text("8BPX"), {"8BPS"});
}

TEST(ImagesPsd, SectionsAndPixelsPastTheEndAreErrors) {
  // The colour mode data says 1000 bytes; 10 follow.
  Bytes section = psd_start(3, 3, 1, 1, 8);
  section.resize(26);
  put_be(section, 1000, 4);
  section.insert(section.end(), 10, 0);
  expect_error(img::decode_psd, section, {"truncated", "colour mode data"}, true);
  // A header claiming 30000 x 30000 pixels in 27 bytes.
  Bytes huge = psd_start(3, 3, 30000, 30000, 8);
  huge.resize(27);
  expect_error(img::decode_psd, huge, {"truncated", "30000"}, true);
  // The same with its sections: the raw data, then the row counts, are missing.
  Bytes huge_raw = psd_start(3, 3, 30000, 30000, 16);
  put_be(huge_raw, 0, 2);
  huge_raw.insert(huge_raw.end(), 100, 0);
  expect_error(img::decode_psd, huge_raw, {"truncated", "30000"}, true);
  Bytes huge_rle = psd_start(3, 3, 30000, 30000, 8);
  put_be(huge_rle, 1, 2);
  huge_rle.insert(huge_rle.end(), 100, 0);
  expect_error(img::decode_psd, huge_rle, {"truncated", "row byte counts"}, true);
  // Raw pixels one byte short.
  Bytes cut = psd_raw(3, 3, 4, 4, 8);
  cut.pop_back();
  expect_error(img::decode_psd, cut, {"truncated", "48"}, true);
  // No compression field.
  expect_error(img::decode_psd, psd_start(1, 1, 2, 2, 8), {"truncated", "compression"}, true);
}

// A coded 4 x 1 grey file with the given row count and row bytes.
Bytes grey_rle_row(std::uint64_t count, const Bytes& row) {
  Bytes b = psd_start(1, 1, 4, 1, 8);
  put_be(b, 1, 2);
  put_be(b, count, 2);
  b.insert(b.end(), row.begin(), row.end());
  return b;
}

TEST(ImagesPsd, DamagedRunLengthRowsAreErrors) {
  // A correct row: a literal of 2, then a run of 2.
  const Bytes good = {1, 10, 20, 0xFF, 30};
  EXPECT_EQ(decode(img::decode_psd, grey_rle_row(5, good)).values,
            (std::vector<float>{10 / 255.0f, 20 / 255.0f, 30 / 255.0f, 30 / 255.0f}));
  // Bytes left in a row's count after the row is full are ignored.
  Bytes padded = good;
  padded.push_back(0x80);
  EXPECT_EQ(decode(img::decode_psd, grey_rle_row(6, padded)).values.size(), 4u);
  // The count too small: the row is cut.
  expect_error(img::decode_psd, grey_rle_row(3, good), {"row 0 of channel 0", "byte count"});
  // The counts adding up past the end of the file.
  expect_error(img::decode_psd, grey_rle_row(9, good), {"truncated", "row byte counts"}, true);
  // A row decoding to more than its width: a run of 3 after 2 bytes, a literal of 5.
  expect_error(img::decode_psd, grey_rle_row(5, {1, 10, 20, 0xFE, 30}), {"run of 3", "past"});
  expect_error(img::decode_psd, grey_rle_row(6, {4, 1, 2, 3, 4, 5}), {"literal of 5", "past"});
  // A row decoding to fewer than its width.
  expect_error(img::decode_psd, grey_rle_row(3, {1, 10, 20}), {"ends after 2 of its 4 bytes"});
  // A literal cut by its row's count.
  expect_error(img::decode_psd, grey_rle_row(3, {3, 10, 20, 30, 40}), {"ends inside"});
}

}  // namespace
