// PNG through libpng, reading and writing.
//
// libpng reports errors by longjmp to the setjmp point of the call that failed. Every function
// below that calls setjmp holds only trivially destructible locals, and the callbacks libpng
// calls hold none either, so a longjmp never skips a destructor. Storage is allocated by the
// callers, outside those functions, after the header's size has passed the canvas's checks.
#include <png.h>

#include <bit>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

// The most samples one byte of a PNG can decode to: deflate expands at most 1032:1, a 1-bit
// sample is 8 per byte and a palette with transparency expands it to 4 channels.
constexpr std::uint64_t kPngSamplesPerByte = 1032 * 8 * 4;

// What libpng's callbacks share with the code that called libpng.
struct PngContext {
  Bytes file;
  std::size_t at = 0;
  std::vector<std::uint8_t>* out = nullptr;  // encoding
  char message[200] = {};
};

void remember(PngContext& context, const char* message) {
  std::snprintf(context.message, sizeof context.message, "%s", message ? message : "");
}

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  remember(*static_cast<PngContext*>(png_get_error_ptr(png)), message);
  png_longjmp(png, 1);
}

// Warnings (an unknown ancillary chunk, a bad CRC in one) leave a readable image.
void on_warning(png_structp, png_const_charp) {}

void read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto& context = *static_cast<PngContext*>(png_get_io_ptr(png));
  if (n > context.file.size() - context.at) png_error(png, "the file is truncated");
  std::memcpy(out, context.file.data() + context.at, n);
  context.at += n;
}

void write_bytes(png_structp png, png_bytep data, png_size_t n) {
  auto& context = *static_cast<PngContext*>(png_get_io_ptr(png));
  // An exception must not unwind through libpng's C frames.
  try {
    context.out->insert(context.out->end(), data, data + n);
  } catch (const std::bad_alloc&) {
    png_error(png, "out of memory");
  }
}

void flush_nothing(png_structp) {}

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int channels = 0;
  int bit_depth = 0;  // 8 or 16, after the transformations
  int passes = 1;     // 7 when interlaced
};

// Reads the header and sets the transformations that give 8- or 16-bit samples in 1-4 channels.
bool read_header(png_structp png, png_infop info, PngHeader* header) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  const int color_type = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  // The 16-bit samples are read below in the host's byte order.
  if (depth == 16 && std::endian::native == std::endian::little) png_set_swap(png);
  header->passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  header->width = png_get_image_width(png, info);
  header->height = png_get_image_height(png, info);
  header->channels = png_get_channels(png, info);
  header->bit_depth = png_get_bit_depth(png, info);
  return true;
}

void to_floats(const png_byte* row, std::size_t samples, int bit_depth, float* out) {
  if (bit_depth == 16) {
    for (std::size_t i = 0; i < samples; ++i) {
      std::uint16_t v;
      std::memcpy(&v, row + 2 * i, 2);
      out[i] = v / 65535.0f;
    }
  } else {
    for (std::size_t i = 0; i < samples; ++i) out[i] = row[i] / 255.0f;
  }
}

// A non-interlaced image row by row through one row buffer.
bool read_rows(png_structp png, const PngHeader* header, png_byte* row, float* out) {
  if (setjmp(png_jmpbuf(png))) return false;
  const std::size_t samples = std::size_t{header->width} * static_cast<std::size_t>(header->channels);
  for (png_uint_32 y = 0; y < header->height; ++y) {
    png_read_row(png, row, nullptr);
    to_floats(row, samples, header->bit_depth, out + samples * y);
  }
  return true;
}

// An interlaced image needs all of its rows at once.
bool read_interlaced(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

bool write_all(png_structp png, png_infop info, const PngHeader* header, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  static constexpr int kColorType[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                       PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_IHDR(png, info, header->width, header->height, 8, kColorType[header->channels - 1],
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

std::string libpng_reason(const PngContext& context) {
  return context.message[0] ? printable(context.message) : std::string("unknown reason");
}

}  // namespace

void decode_png(Bytes file, Canvas& canvas) {
  PngContext context;
  context.file = file;
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &context, on_error, on_warning);
  if (png == nullptr) throw std::bad_alloc();
  png_infop info = png_create_info_struct(png);
  struct Destroy {
    png_structp* png;
    png_infop* info;
    ~Destroy() { png_destroy_read_struct(png, info, nullptr); }
  } destroy{&png, &info};
  if (info == nullptr) throw std::bad_alloc();
  png_set_read_fn(png, &context, read_bytes);
  // The canvas enforces kiln's own limit; libpng's default (10^6 per side) would refuse images
  // that are merely long.
  png_set_user_limits(png, 0x7FFFFFFF, 0x7FFFFFFF);

  PngHeader header;
  if (!read_header(png, info, &header))
    throw ImageError("not a PNG kiln can read (" + libpng_reason(context) + ")");
  if (header.channels < 1 || header.channels > 4 ||
      (header.bit_depth != 8 && header.bit_depth != 16))
    throw ImageError("libpng gave " + std::to_string(header.channels) + " channels of " +
                     std::to_string(header.bit_depth) + " bits");
  float* out = canvas.allocate(header.height, header.width, header.channels, file.size(),
                               kPngSamplesPerByte);
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  const std::size_t samples = std::size_t{header.width} * static_cast<std::size_t>(header.channels);
  if (row_bytes != samples * static_cast<std::size_t>(header.bit_depth / 8))
    throw ImageError("libpng gave rows of an unexpected size");
  bool ok;
  if (header.passes == 1) {
    std::vector<png_byte> row(row_bytes);
    ok = read_rows(png, &header, row.data(), out);
  } else {
    std::vector<png_byte> pixels(row_bytes * header.height);
    std::vector<png_bytep> rows(header.height);
    for (png_uint_32 y = 0; y < header.height; ++y) rows[y] = pixels.data() + row_bytes * y;
    ok = read_interlaced(png, rows.data());
    if (ok)
      for (png_uint_32 y = 0; y < header.height; ++y)
        to_floats(rows[y], samples, header.bit_depth, out + samples * y);
  }
  if (!ok) throw ImageError("the PNG's pixel data are damaged (" + libpng_reason(context) + ")");
}

std::vector<std::uint8_t> encode_png(const std::uint8_t* pixels, int width, int height,
                                     int channels) {
  std::vector<std::uint8_t> out;
  PngContext context;
  context.out = &out;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &context, on_error, on_warning);
  if (png == nullptr) throw std::bad_alloc();
  png_infop info = png_create_info_struct(png);
  struct Destroy {
    png_structp* png;
    png_infop* info;
    ~Destroy() { png_destroy_write_struct(png, info); }
  } destroy{&png, &info};
  if (info == nullptr) throw std::bad_alloc();
  png_set_write_fn(png, &context, write_bytes, flush_nothing);
  png_set_user_limits(png, 0x7FFFFFFF, 0x7FFFFFFF);

  PngHeader header;
  header.width = static_cast<png_uint_32>(width);
  header.height = static_cast<png_uint_32>(height);
  header.channels = channels;
  const std::size_t row_bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  std::vector<png_bytep> rows(static_cast<std::size_t>(height));
  for (std::size_t y = 0; y < rows.size(); ++y)
    rows[y] = const_cast<png_bytep>(pixels + row_bytes * y);  // libpng only reads them
  if (!write_all(png, info, &header, rows.data())) {
    if (std::strcmp(context.message, "out of memory") == 0) throw std::bad_alloc();
    throw ImageError("libpng cannot encode the image (" + libpng_reason(context) + ")");
  }
  return out;
}

}  // namespace kiln::data::images
