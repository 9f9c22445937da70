// read_image, decode_image, write_image and encode_image: the format of a file from its
// content, its decoder, and the errors named after the file.
#include <climits>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "data/images/image_codec.hpp"
#include "data/whole_files.hpp"
#include "kiln/error.hpp"
#include "kiln/images.hpp"

namespace kiln::data {
namespace {

using images::Bytes;

bool starts_with(Bytes file, std::string_view signature) {
  return file.size() >= signature.size() &&
         std::memcmp(file.data(), signature.data(), signature.size()) == 0;
}

using Decoder = void (*)(Bytes, images::Canvas&);

// The decoder for a file's content. Every format but TGA has a signature; a TGA's second byte
// (its colour map type) is 0 or 1, which no signature has there, so TGA is tried last.
Decoder decoder_for(Bytes file) {
  if (starts_with(file, "\x89PNG\r\n\x1a\n")) return images::decode_png;
  if (starts_with(file, "\xFF\xD8\xFF")) return images::decode_jpeg;
  if (starts_with(file, "GIF87a") || starts_with(file, "GIF89a")) return images::decode_gif;
  if (starts_with(file, "BM")) return images::decode_bmp;
  if (starts_with(file, "8BPS")) return images::decode_psd;
  if (starts_with(file, "#?")) return images::decode_hdr;
  if (file.size() >= 2 && file[0] == 'P' && file[1] >= '1' && file[1] <= '7')
    return images::decode_pnm;
  if (starts_with(file, "\x53\x80\xF6\x34"))
    throw images::ImageError("a Softimage PIC image, a format kiln does not read");
  if (images::looks_like_tga(file)) return images::decode_tga;
  throw images::ImageError(
      "not an image kiln reads (PNG, JPEG, GIF, BMP, TGA, PSD, HDR or binary PNM)");
}

[[noreturn]] void fail(ErrorCode code, const std::string& source, const std::string& what) {
  throw Error(code, "image '" + images::printable(source) + "': " + what);
}

Tensor decode(Bytes file, const std::string& source) {
  try {
    if (file.empty()) throw images::ImageError("the file is empty");
    images::Canvas canvas;
    decoder_for(file)(file, canvas);
    return canvas.take();
  } catch (const images::ImageError& e) {
    fail(ErrorCode::io_error, source, e.what());
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::out_of_memory, source, "not enough memory to decode it");
  } catch (const std::length_error&) {
    fail(ErrorCode::out_of_memory, source, "not enough memory to decode it");
  } catch (const Error& e) {
    fail(e.code(), source, e.what());
  }
}

// The largest file read_image reads: more than any image within the pixel limit needs (16 bytes
// a pixel: four 16-bit channels twice over), and never less than 64 MiB of metadata.
std::uint64_t file_byte_limit() {
  const std::uint64_t pixels = images::pixel_limit();
  const std::uint64_t floor = std::uint64_t{64} << 20;
  return pixels > (UINT64_MAX - floor) / 16 ? UINT64_MAX : floor + 16 * pixels;
}

}  // namespace

Tensor read_image(const std::string& path) {
  std::uint64_t max_bytes = 0;
  try {
    max_bytes = file_byte_limit();
  } catch (const images::ImageError& e) {
    fail(ErrorCode::io_error, path, e.what());
  }
  std::vector<char> bytes;
  try {
    bytes = detail::read_whole_file(path, "read_image", max_bytes);
  } catch (const Error& e) {
    // The message names the path as given; an image's errors show it in printable text.
    throw Error(e.code(), images::printable(e.what()));
  }
  return decode(Bytes(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), path);
}

Tensor decode_image(std::span<const std::byte> bytes, const std::string& source) {
  return decode(Bytes(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), source);
}

namespace images {

void check_writable(const Tensor& image, ImageFormat format, int jpeg_quality) {
  const char* op = "write_image";
  if (!image.defined()) throw Error(ErrorCode::invalid_select, std::string(op) + ": no tensor");
  if (format != ImageFormat::png && format != ImageFormat::jpeg && format != ImageFormat::bmp)
    throw Error(ErrorCode::invalid_select,
                std::string(op) + ": unknown image format " + std::to_string(static_cast<int>(format)));
  if (format == ImageFormat::jpeg && (jpeg_quality < 1 || jpeg_quality > 100))
    throw Error(ErrorCode::invalid_select,
                std::string(op) + ": JPEG quality " + std::to_string(jpeg_quality) +
                    " is not in 1-100");
  if (is_complex(image.dtype()))
    throw Error(ErrorCode::wrong_type, std::string(op) + ": an image has real values, got " +
                                           dtype_name(image.dtype()));
  const Shape& s = image.shape();
  if (s.size() != 2 && s.size() != 3)
    throw Error(ErrorCode::illegal_dimensionality,
                std::string(op) + ": an image needs shape [height, width, channels] or " +
                    "[height, width], got " + shape_to_string(s));
  const std::int64_t h = s[0], w = s[1], c = s.size() == 3 ? s[2] : 1;
  if (c < 1 || c > 4)
    throw Error(ErrorCode::illegal_dimension,
                std::string(op) + ": an image has 1 to 4 channels, got " + std::to_string(c));
  if (h < 1 || w < 1 || h > INT_MAX / 4 || w > INT_MAX / 4 || w * c > INT_MAX)
    throw Error(ErrorCode::illegal_dimension,
                std::string(op) + ": image size " + shape_to_string(s) + " not writable");
  if (format == ImageFormat::jpeg && (h > 65535 || w > 65535))
    throw Error(ErrorCode::illegal_dimension,
                std::string(op) + ": JPEG images are at most 65535 pixels wide and high, got " +
                    shape_to_string(s));
}

}  // namespace images

std::vector<std::uint8_t> encode_image(const Tensor& image, ImageFormat format, int jpeg_quality) {
  images::check_writable(image, format, jpeg_quality);
  const Shape& s = image.shape();
  const std::int64_t h = s[0], w = s[1], c = s.size() == 3 ? s[2] : 1;
  std::vector<std::uint8_t> pixels;
  if (image.dtype() == DType::u8) {  // the bytes as they are (torchvision's uint8 images)
    pixels = image.to_vector<std::uint8_t>();
  } else {
    const std::vector<double> values = image.to_vector<double>();
    pixels.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      const double clamped = v > 0.0 ? (v < 1.0 ? v : 1.0) : 0.0;  // NaN -> 0
      pixels[i] = static_cast<std::uint8_t>(std::lround(clamped * 255.0));
    }
  }
  const int W = static_cast<int>(w), H = static_cast<int>(h), C = static_cast<int>(c);
  try {
    switch (format) {
      case ImageFormat::png: return images::encode_png(pixels.data(), W, H, C);
      case ImageFormat::jpeg: return images::encode_jpeg(pixels.data(), W, H, C, jpeg_quality);
      case ImageFormat::bmp: break;
    }
    return images::encode_bmp(pixels.data(), W, H, C);
  } catch (const images::ImageError& e) {
    throw Error(ErrorCode::io_error, std::string("write_image: ") + e.what());
  }
}

void write_image(const std::string& path, const Tensor& image, ImageFormat format,
                 int jpeg_quality) {
  const std::vector<std::uint8_t> bytes = encode_image(image, format, jpeg_quality);
  try {
    detail::write_file_atomically(
        path, std::span(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "write_image");
  } catch (const Error& e) {
    throw Error(e.code(), images::printable(e.what()));
  }
}

}  // namespace kiln::data
