// The pieces every image decoder and encoder of kiln::data shares: the error a decoder throws,
// a cursor that never reads past the file, and the canvas that checks an image's size against
// the pixel limit before any memory is allocated for it.
//
// A decoder reads the whole file from memory. It parses and checks its header with the cursor,
// asks the canvas for storage (the limit is enforced there, before the allocation), then writes
// every value of the [height, width, channels] image as f32. Its messages say what was wrong in
// printable text; read_image adds the file's name.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/images.hpp"
#include "kiln/tensor.hpp"

namespace kiln::detail {
class Buffer;
}

namespace kiln::data::images {

using Bytes = std::span<const std::uint8_t>;

// A file that is damaged, unsupported or over the limit: read_image's io_error.
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `text` with every byte outside printable ASCII (and the backslash) written as \xNN, so that a
// path or a library's message cannot put control sequences or invalid UTF-8 into a message.
std::string printable(std::string_view text);

// Reads a file's bytes in order; every read past the end throws ImageError("the file is truncated: it ends inside
// <what>"), so a decoder never reads outside the file.
class Cursor {
 public:
  explicit Cursor(Bytes bytes, std::size_t at = 0) : bytes_(bytes), at_(at) {}
  std::size_t position() const { return at_; }
  std::size_t remaining() const { return at_ < bytes_.size() ? bytes_.size() - at_ : 0; }
  bool at_end() const { return remaining() == 0; }

  std::uint8_t u8(const char* what);
  std::uint32_t u16le(const char* what);
  std::uint32_t u32le(const char* what);
  std::uint32_t u16be(const char* what);
  std::uint32_t u32be(const char* what);
  // The next n bytes, or ImageError if fewer remain.
  const std::uint8_t* take(std::uint64_t n, const char* what);
  void skip(std::uint64_t n, const char* what) { take(n, what); }
  // Moves to an absolute offset inside the file (the end itself allowed).
  void seek(std::uint64_t offset, const char* what);

 private:
  Bytes bytes_;
  std::size_t at_;
};

// The most pixels (width * height) an image may have, from set_image_pixel_limit or else from
// KILN_IMAGE_MAX_PIXELS, else 2^28. Throws ImageError if the variable is not a positive integer.
std::uint64_t pixel_limit();

// The decoded image: storage for it comes only through allocate, after the size is checked.
class Canvas {
 public:
  // Checks the size (width and height at least 1, channels 1-4, width * height within the pixel
  // limit) and returns zeroed storage for height * width * channels f32 values, [y][x][c].
  // `samples_per_byte` is the most values one byte of the file can decode to under the format's
  // coding (1 for raw data); a header claiming more than the file's bytes can hold is refused as
  // truncated here, before the allocation.
  float* allocate(std::uint64_t height, std::uint64_t width, int channels,
                  std::uint64_t file_bytes, std::uint64_t samples_per_byte);
  bool allocated() const { return data_ != nullptr; }
  Tensor take();

 private:
  std::shared_ptr<detail::Buffer> buffer_;
  Shape shape_;
  float* data_ = nullptr;
};

// The decoders, one per format; each throws ImageError for a file it cannot read.
void decode_png(Bytes file, Canvas& canvas);
void decode_jpeg(Bytes file, Canvas& canvas);
void decode_gif(Bytes file, Canvas& canvas);
void decode_bmp(Bytes file, Canvas& canvas);
void decode_tga(Bytes file, Canvas& canvas);
void decode_psd(Bytes file, Canvas& canvas);
void decode_hdr(Bytes file, Canvas& canvas);
void decode_pnm(Bytes file, Canvas& canvas);

// Whether a file without a signature has a TGA header kiln reads (TGA is tried last).
bool looks_like_tga(Bytes file);

// Throws what write_image throws for an image it cannot write (shape, type, format, quality),
// before anything is evaluated.
void check_writable(const Tensor& image, ImageFormat format, int jpeg_quality);

// 8-bit pixels [height][width][channels] (1-4 channels) encoded as a file; ImageError if the
// library refuses. JPEG drops alpha (2 channels: grey, 4: RGB).
std::vector<std::uint8_t> encode_png(const std::uint8_t* pixels, int width, int height,
                                     int channels);
std::vector<std::uint8_t> encode_jpeg(const std::uint8_t* pixels, int width, int height,
                                      int channels, int quality);
std::vector<std::uint8_t> encode_bmp(const std::uint8_t* pixels, int width, int height,
                                     int channels);

}  // namespace kiln::data::images
