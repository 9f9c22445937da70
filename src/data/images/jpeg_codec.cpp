// JPEG through libjpeg-turbo's TurboJPEG API, reading and writing. TurboJPEG reports errors by
// return value (its longjmp stays inside the library), so no C++ frame is ever skipped.
#include <turbojpeg.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

// The most samples one byte of a JPEG can decode to. A block of 64 pixels costs at least a bit
// or two per component in the DC scan, and a progressive AC scan's end-of-band runs cover up to
// 32767 blocks per code, so 2^16 values per byte is a bound with room to spare.
constexpr std::uint64_t kJpegSamplesPerByte = std::uint64_t{1} << 16;

struct HandleCloser {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using Handle = std::unique_ptr<void, HandleCloser>;

std::string reason(tjhandle handle) { return printable(tjGetErrorStr2(handle)); }

}  // namespace

void decode_jpeg(Bytes file, Canvas& canvas) {
  Handle handle(tjInitDecompress());
  if (!handle) throw std::bad_alloc();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), file.data(), file.size(), &width, &height, &subsampling,
                          &colorspace) != 0)
    throw ImageError("not a JPEG kiln can read (" + reason(handle.get()) + ")");
  if (width <= 0 || height <= 0)
    throw ImageError("the JPEG's header gives width " + std::to_string(width) + " and height " +
                     std::to_string(height));
  const bool grey = colorspace == TJCS_GRAY;
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  const int channels = grey ? 1 : 3;
  const int format = grey ? TJPF_GRAY : cmyk ? TJPF_CMYK : TJPF_RGB;
  const int stored = tjPixelSize[format];
  float* out = canvas.allocate(static_cast<std::uint64_t>(height),
                               static_cast<std::uint64_t>(width), channels, file.size(),
                               kJpegSamplesPerByte);
  const std::size_t pixels = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  std::vector<unsigned char> decoded(pixels * static_cast<std::size_t>(stored));
  // LIMITSCANS refuses a progressive file with more than 500 scans, whose decoding time would
  // grow without bound while its size stays small.
  if (tjDecompress2(handle.get(), file.data(), file.size(), decoded.data(), width, 0, height,
                    format, TJFLAG_LIMITSCANS) != 0) {
    const std::string why = reason(handle.get());
    // A warning leaves a whole image (libjpeg-turbo mends small damage, as every viewer does),
    // except at a premature end, where the rest would be invented grey.
    if (tjGetErrorCode(handle.get()) != TJERR_WARNING || why.find("Premature end") != std::string::npos)
      throw ImageError("the JPEG's data are damaged or truncated (" + why + ")");
  }
  if (cmyk) {
    // Colour JPEGs in CMYK (Adobe's) store inverted inks, so each stored value is already the
    // light a colour lets through: red = (1 - cyan) * (1 - black) = C' * K'.
    for (std::size_t i = 0; i < pixels; ++i) {
      const unsigned char* p = decoded.data() + 4 * i;
      const float k = p[3] / 255.0f;
      for (int c = 0; c < 3; ++c) out[3 * i + static_cast<std::size_t>(c)] = p[c] / 255.0f * k;
    }
  } else {
    for (std::size_t i = 0; i < decoded.size(); ++i) out[i] = decoded[i] / 255.0f;
  }
}

std::vector<std::uint8_t> encode_jpeg(const std::uint8_t* pixels, int width, int height,
                                      int channels, int quality) {
  // Grey and alpha: the grey channel alone (JPEG has no alpha).
  std::vector<std::uint8_t> grey;
  if (channels == 2) {
    const std::size_t n = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    grey.resize(n);
    for (std::size_t i = 0; i < n; ++i) grey[i] = pixels[2 * i];
    pixels = grey.data();
    channels = 1;
  }
  static constexpr int kFormat[] = {TJPF_GRAY, TJPF_GRAY, TJPF_RGB, TJPF_RGBA};
  const int format = kFormat[channels - 1];
  // Chroma at full resolution for high qualities, where halving it would be the largest loss.
  const int subsampling = channels == 1 ? TJSAMP_GRAY : quality > 90 ? TJSAMP_444 : TJSAMP_420;
  Handle handle(tjInitCompress());
  if (!handle) throw std::bad_alloc();
  unsigned char* encoded = nullptr;
  unsigned long size = 0;
  const int status = tjCompress2(handle.get(), pixels, width, 0, height, format, &encoded, &size,
                                 subsampling, quality, 0);
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(encoded, tjFree);
  if (status != 0 || encoded == nullptr)
    throw ImageError("libjpeg-turbo cannot encode the image (" + reason(handle.get()) + ")");
  return std::vector<std::uint8_t>(encoded, encoded + size);
}

}  // namespace kiln::data::images
