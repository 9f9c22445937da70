// kiln::data's image files: fixtures written by Pillow (tests/data/images/make_fixtures.py) read
// back with their values, kiln's own writers round-tripped, the pixel limit (set in C++ and by
// KILN_IMAGE_MAX_PIXELS), and writes that must fail cleanly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kiln/data.hpp"
#include "kiln/kiln.hpp"

namespace {

namespace data = kiln::data;
using kiln::ErrorCode;
using kiln::Tensor;

const std::string kFixtures = std::string(KILN_TEST_DATA_DIR) + "/images/";

std::string scratch_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("kiln_test_images_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The largest difference between two images of the same shape (infinity if the shapes differ).
float max_difference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  float worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

// The error read_image throws for `path`, or a failure if it reads the file.
kiln::Error read_error(const std::string& path) {
  try {
    data::read_image(path);
  } catch (const kiln::Error& e) {
    return e;
  }
  ADD_FAILURE() << path << " was read";
  return kiln::Error(ErrorCode::none, "");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Restores the pixel limit a test changed.
class PixelLimit {
 public:
  explicit PixelLimit(std::uint64_t pixels) : saved_(data::image_pixel_limit()) {
    data::set_image_pixel_limit(pixels);
  }
  ~PixelLimit() { data::set_image_pixel_limit(saved_); }

 private:
  std::uint64_t saved_;
};

TEST(ImageFiles, FixturesWrittenByPillowReadBackWithTheirValues) {
  struct Fixture {
    const char* name;
    float tolerance;  // JPEG: libjpeg-turbo's versions may round a sample differently
  };
  const Fixture fixtures[] = {
      {"png_grey1.png", 0},          {"png_grey8.png", 0},
      {"png_grey16.png", 0},         {"png_grey_alpha.png", 0},
      {"png_rgb_interlaced.png", 0}, {"png_rgba.png", 0},
      {"png_palette.png", 0},        {"png_palette_alpha.png", 0},
      {"gif_transparent.gif", 0},    {"gif_interlaced.gif", 0},
      {"jpeg_grey.jpg", 2.5f / 255}, {"jpeg_rgb444.jpg", 2.5f / 255},
      {"jpeg_rgb420_progressive.jpg", 2.5f / 255},
      {"jpeg_cmyk.jpg", 2.5f / 255},
  };
  for (const Fixture& f : fixtures) {
    SCOPED_TRACE(f.name);
    const Tensor expected = data::load_npy(kFixtures + f.name + ".npy");
    const Tensor image = data::read_image(kFixtures + f.name);
    EXPECT_EQ(image.dtype(), kiln::DType::f32);
    EXPECT_EQ(image.shape(), expected.shape());
    EXPECT_LE(max_difference(image, expected), f.tolerance);
    // The same bytes from memory give the same image.
    const std::vector<std::uint8_t> bytes = file_bytes(kFixtures + f.name);
    const Tensor decoded = data::decode_image(std::as_bytes(std::span(bytes)), f.name);
    EXPECT_EQ(max_difference(image, decoded), 0.0f);
  }
}

// 8-bit values of an image [h, w, c] with every sample different from its neighbours.
Tensor pattern(std::int64_t h, std::int64_t w, std::int64_t c) {
  std::vector<float> v(static_cast<std::size_t>(h * w * c));
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x)
      for (std::int64_t k = 0; k < c; ++k)
        v[static_cast<std::size_t>((y * w + x) * c + k)] =
            static_cast<float>((x * 37 + y * 91 + k * 53) % 256) / 255.0f;
  return Tensor::from(v, {h, w, c});
}

TEST(ImageFiles, KilnsWritersRoundTrip) {
  const std::string path = scratch_path("round_trip");
  for (std::int64_t c = 1; c <= 4; ++c) {
    SCOPED_TRACE("channels " + std::to_string(c));
    const Tensor image = pattern(5, 7, c);
    // PNG is lossless for every channel count.
    data::write_image(path, image, data::ImageFormat::png);
    EXPECT_EQ(max_difference(data::read_image(path), image), 0.0f);
    // BMP stores RGB (grey expanded) or RGBA.
    data::write_image(path, image, data::ImageFormat::bmp);
    const Tensor bmp = data::read_image(path);
    if (c == 3 || c == 4) {
      EXPECT_EQ(max_difference(bmp, image), 0.0f);
    } else {
      const Tensor grey = image.index({kiln::indexing::Slice(), kiln::indexing::Slice(), kiln::indexing::Slice(0, 1)});
      EXPECT_EQ(max_difference(bmp, kiln::concat({grey, grey, grey}, 2)), 0.0f);
    }
    // JPEG is lossy and keeps grey or colour, without alpha.
    data::write_image(path, image, data::ImageFormat::jpeg, 100);
    const Tensor jpeg = data::read_image(path);
    const std::int64_t kept = c <= 2 ? 1 : 3;
    EXPECT_EQ(jpeg.shape(), (kiln::Shape{5, 7, kept}));
    const Tensor colour = image.index({kiln::indexing::Slice(), kiln::indexing::Slice(), kiln::indexing::Slice(0, kept)});
    EXPECT_LE(max_difference(jpeg, colour), 8.0f / 255);
  }
  // Values outside [0, 1] are clamped, NaN is 0.
  data::write_image(path, Tensor::from(std::vector<float>{-1, 2, NAN, 0.5f}, {1, 4}),
                    data::ImageFormat::png);
  EXPECT_EQ(data::read_image(path).to_vector<float>(),
            (std::vector<float>{0, 1, 0, 128 / 255.0f}));
  std::remove(path.c_str());
}

TEST(ImageFiles, WritesThatCannotSucceedAreErrors) {
  const Tensor image = pattern(4, 4, 3);
  auto code_of = [](auto&& write) {
    try {
      write();
    } catch (const kiln::Error& e) {
      return e.code();
    }
    return ErrorCode::none;
  };
  const std::string path = scratch_path("bad.png");
  EXPECT_EQ(code_of([&] { data::write_image(path, pattern(4, 4, 5), data::ImageFormat::png); }),
            ErrorCode::illegal_dimension);
  EXPECT_EQ(code_of([&] { data::write_image(path, pattern(4, 4, 3).reshape({48}),
                                            data::ImageFormat::png); }),
            ErrorCode::illegal_dimensionality);
  EXPECT_EQ(code_of([&] { data::write_image(path, image, data::ImageFormat::jpeg, 0); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { data::write_image(path, image, static_cast<data::ImageFormat>(7)); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(code_of([&] { data::write_image(path, image.to(kiln::DType::c64),
                                            data::ImageFormat::png); }),
            ErrorCode::wrong_type);
  EXPECT_FALSE(std::filesystem::exists(path));
  // A directory that does not exist: io_error naming the path; nothing is left behind.
  const std::string missing = scratch_path("no_such_dir") + "/x.png";
  const kiln::Error e = [&] {
    try {
      data::write_image(missing, image, data::ImageFormat::png);
    } catch (const kiln::Error& error) {
      return error;
    }
    return kiln::Error(ErrorCode::none, "");
  }();
  EXPECT_EQ(e.code(), ErrorCode::io_error);
  EXPECT_TRUE(contains(e.what(), "x.png")) << e.what();
}

TEST(ImageFiles, TheFormatComesFromTheContentNotTheName) {
  const std::string path = scratch_path("really_a_png.jpg");
  data::write_image(path, pattern(3, 2, 3), data::ImageFormat::png);
  EXPECT_EQ(data::read_image(path).shape(), (kiln::Shape{3, 2, 3}));
  std::remove(path.c_str());
}

TEST(ImageFiles, UnreadableFormatsAreNamedErrors) {
  const std::string path = scratch_path("odd");
  struct Case {
    std::vector<std::uint8_t> bytes;
    const char* part;
  };
  const Case cases[] = {
      {{0x53, 0x80, 0xF6, 0x34, 0, 0, 0, 0}, "Softimage PIC"},
      {{'h', 'e', 'l', 'l', 'o', '\n'}, "not an image kiln reads"},
      {{}, "empty"},
  };
  for (const Case& c : cases) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(c.bytes.data()),
               static_cast<std::streamsize>(c.bytes.size()));
    const kiln::Error e = read_error(path);
    EXPECT_EQ(e.code(), ErrorCode::io_error) << e.what();
    EXPECT_TRUE(contains(e.what(), c.part)) << e.what();
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_EQ(read_error(scratch_path("missing.png")).code(), ErrorCode::io_error);
  EXPECT_EQ(read_error(std::filesystem::temp_directory_path().string()).code(),
            ErrorCode::io_error);
}

TEST(ImageLimit, ImagesOverTheLimitAreRefusedBeforeDecoding) {
  const std::string name = kFixtures + "png_rgba.png";  // 7 x 5
  {
    PixelLimit limit(34);
    const kiln::Error e = read_error(name);
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    for (const char* part : {"7 x 5", "35 pixels", "560 bytes", "limit of 34", "png_rgba.png"})
      EXPECT_TRUE(contains(e.what(), part)) << part << ": " << e.what();
  }
  PixelLimit limit(35);
  EXPECT_EQ(data::read_image(name).shape(), (kiln::Shape{5, 7, 4}));
  EXPECT_EQ(data::image_pixel_limit(), 35u);
  try {
    data::set_image_pixel_limit(0);
    ADD_FAILURE() << "a limit of 0 was taken";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_select);
  }
  EXPECT_EQ(data::image_pixel_limit(), 35u);
}

// Run once as part of the suite (no KILN_IMAGE_MAX_PIXELS: the default) and by ctest with
// KILN_IMAGE_MAX_PIXELS=34 and with a value that is not a number.
TEST(ImageLimit, FromTheEnvironment) {
  const char* text = std::getenv("KILN_IMAGE_MAX_PIXELS");
  const std::string name = kFixtures + "png_rgba.png";  // 35 pixels
  if (text == nullptr) {
    EXPECT_EQ(data::image_pixel_limit(), std::uint64_t{1} << 28);
  } else if (std::string(text) == "34") {
    EXPECT_EQ(data::image_pixel_limit(), 34u);
    EXPECT_TRUE(contains(read_error(name).what(), "limit of 34"));
  } else {
    const kiln::Error e = read_error(name);
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    EXPECT_TRUE(contains(e.what(), "KILN_IMAGE_MAX_PIXELS")) << e.what();
    // A limit set in code takes over from the variable (this process runs only this test).
    data::set_image_pixel_limit(100);
    EXPECT_EQ(data::read_image(name).shape(), (kiln::Shape{5, 7, 4}));
  }
}

}  // namespace
