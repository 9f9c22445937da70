/// @file
/// kiln::data image files: reading PNG, JPEG, GIF, BMP, TGA, PSD, HDR and PNM into f32 tensors,
/// writing PNG, JPEG and BMP. Made for files from anywhere: every decoder bounds every read by
/// the file's size, and the size an image's header claims is checked against a pixel limit
/// before memory is allocated for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::data {

/// Reads an image file as f32 [height, width, channels], the format known from the file's
/// content, not its name:
/// - PNG (libpng): grey 1 channel, grey+alpha 2, RGB 3, RGBA 4; palettes expand to RGB (RGBA with
///   transparency), a tRNS colour adds an alpha channel; 8- and 16-bit samples scaled to [0, 1];
///   interlaced images; an APNG gives its default image.
/// - JPEG (libjpeg-turbo): grey 1 channel, colour 3 (CMYK and YCCK converted to RGB); baseline and
///   progressive; the EXIF orientation is not applied (the pixels as stored).
/// - GIF (giflib): the first frame on its logical screen, RGBA (transparent where the frame does
///   not cover the screen or uses its transparent colour).
/// - BMP: 1, 4, 8, 16, 24 and 32 bits per pixel, uncompressed or bit fields; RGB, or RGBA where
///   the pixels have alpha (32-bit pixels, an alpha mask; all-zero alpha reads as opaque).
/// - TGA: colour-mapped, true colour and grey, raw and run-length coded, either origin.
/// - PSD: the merged image, 8 or 16 bits, raw or PackBits; RGB as RGBA (opaque without an alpha
///   channel, colours taken out of Photoshop's white matte), grey as 1 or 2 channels.
/// - HDR (Radiance RGBE, flat or run-length scanlines, orientation -Y +X): linear values, not
///   clamped to [0, 1].
/// - PNM: binary P5 (grey) and P6 (RGB), samples divided by their maxval (up to 65535).
/// Softimage PIC, which stb_image also reads, is refused (no maintained decoder exists for it),
/// as are the PNM kinds other than P5 and P6.
/// A file that cannot be read, is not one of these formats, is damaged or truncated, or whose
/// header claims more pixels (width * height) than image_pixel_limit() throws
/// kiln::Error(io_error) naming the file and what was wrong, in printable text; the size is
/// checked before any memory is allocated for the pixels.
Tensor read_image(const std::string& path);
/// The same for a file's bytes in memory; `source` names them in errors.
Tensor decode_image(std::span<const std::byte> bytes, const std::string& source = "image data");

enum class ImageFormat { png, jpeg, bmp };

/// Writes `image` ([height, width, channels] with 1-4 channels, or [height, width]: grey) of any
/// real type, its values clamped to [0, 1] (NaN to 0) and rounded to 8 bits; a u8 image's values
/// are the bytes written, as they are (an 8-bit file read back is `round(read_image(p) * 255)`
/// converted to u8). PNG (libpng) is
/// lossless; JPEG (libjpeg-turbo, `jpeg_quality` 1-100, 4:4:4 above 90) drops alpha; BMP stores
/// RGB (grey expanded) or RGBA. The file is replaced atomically; a failed write is io_error and
/// leaves the old file whole. A bad shape is illegal_dimensionality/illegal_dimension.
void write_image(const std::string& path, const Tensor& image, ImageFormat format,
                 int jpeg_quality = 95);
/// The encoded file's bytes, as write_image would write them.
std::vector<std::uint8_t> encode_image(const Tensor& image, ImageFormat format,
                                       int jpeg_quality = 95);

/// The most pixels (width * height) read_image and fload_image accept: 2^28 unless the
/// environment variable KILN_IMAGE_MAX_PIXELS (a positive integer, read once) or
/// set_image_pixel_limit says otherwise. An f32 image of 2^28 RGBA pixels takes 4 GiB.
std::uint64_t image_pixel_limit();
/// Sets the limit for every thread (at least 1; 0 is invalid_select).
void set_image_pixel_limit(std::uint64_t pixels);

}  // namespace kiln::data
