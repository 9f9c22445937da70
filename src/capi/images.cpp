// C API: images through stb (Debian's libstb): fload_image reads what stb_image reads,
// fstore_image writes PNG, JPEG and BMP.
#include <climits>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <stb_image.h>
#include <stb_image_write.h>

#include "capi/capi.hpp"

namespace kiln::capi {
namespace {

struct StbFree {
  void operator()(void* p) const { stbi_image_free(p); }
};

std::string failure(const char* path) {
  const char* why = stbi_failure_reason();
  return "cannot read image '" + std::string(path) + "'" + (why ? std::string(": ") + why : "");
}

constexpr int kJpegQuality = 95;

}  // namespace
}  // namespace kiln::capi

using namespace kiln;
using namespace kiln::capi;

extern "C" {

FGraphNode* fload_image(const char* path) {
  Call call("fload_image");
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    call.array(path, "path");
    int w = 0, h = 0, c = 0;
    std::vector<float> values;
    if (stbi_is_hdr(path)) {
      std::unique_ptr<float, StbFree> pixels(stbi_loadf(path, &w, &h, &c, 0));
      if (!pixels) throw CError(IO_ERROR, failure(path));
      values.assign(pixels.get(), pixels.get() + static_cast<std::size_t>(w) * h * c);
    } else if (stbi_is_16_bit(path)) {
      std::unique_ptr<stbi_us, StbFree> pixels(stbi_load_16(path, &w, &h, &c, 0));
      if (!pixels) throw CError(IO_ERROR, failure(path));
      const std::size_t n = static_cast<std::size_t>(w) * h * c;
      values.resize(n);
      for (std::size_t i = 0; i < n; ++i) values[i] = pixels.get()[i] / 65535.0f;
    } else {
      std::unique_ptr<stbi_uc, StbFree> pixels(stbi_load(path, &w, &h, &c, 0));
      if (!pixels) throw CError(IO_ERROR, failure(path));
      const std::size_t n = static_cast<std::size_t>(w) * h * c;
      values.resize(n);
      for (std::size_t i = 0; i < n; ++i) values[i] = pixels.get()[i] / 255.0f;
    }
    return make_node(Tensor::from(values, Shape{h, w, c}), FSTORE);
  });
}

FErrorType fstore_image(FGraphNode* node, const char* path, enum FImageFormat format) {
  Call call("fstore_image");
  const bool ok = guarded(call, false, [&] {
    CNode& n = call.node(node, "node");
    call.array(path, "path");
    if (format != F_PNG && format != F_JPEG && format != F_BMP)
      throw CError(INVALID_SELECT, "unknown image format " + std::to_string(static_cast<int>(format)));
    const Shape& s = n.tensor.shape();
    if (s.size() != 2 && s.size() != 3)
      throw CError(ILLEGAL_DIMENSIONALITY,
                   "an image needs shape [height, width, channels] or [height, width], got " +
                       shape_to_string(s));
    const std::int64_t h = s[0], w = s[1], c = s.size() == 3 ? s[2] : 1;
    if (c < 1 || c > 4)
      throw CError(ILLEGAL_DIMENSION, "an image has 1 to 4 channels, got " + std::to_string(c));
    if (h < 1 || w < 1 || h > INT_MAX / 4 || w > INT_MAX / 4 || w * c > INT_MAX)
      throw CError(ILLEGAL_DIMENSION, "image size " + shape_to_string(s) + " not writable");
    if (format == F_JPEG && (h > 65535 || w > 65535))
      throw CError(ILLEGAL_DIMENSION, "JPEG images are at most 65535 pixels wide and high");
    if (n.result_data == nullptr) execute(n);

    const std::vector<double> values = n.tensor.to_vector<double>();
    std::vector<unsigned char> pixels(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      const double clamped = v > 0.0 ? (v < 1.0 ? v : 1.0) : 0.0;  // NaN -> 0
      pixels[i] = static_cast<unsigned char>(std::lround(clamped * 255.0));
    }
    const int W = static_cast<int>(w), H = static_cast<int>(h), C = static_cast<int>(c);
    int written = 0;
    switch (format) {
      case F_PNG: written = stbi_write_png(path, W, H, C, pixels.data(), W * C); break;
      case F_JPEG: written = stbi_write_jpg(path, W, H, C, pixels.data(), kJpegQuality); break;
      case F_BMP: written = stbi_write_bmp(path, W, H, C, pixels.data()); break;
    }
    if (written == 0) throw CError(IO_ERROR, "cannot write image '" + std::string(path) + "'");
    return true;
  });
  return ok ? NO_ERROR : fErrorType();
}

}  // extern "C"
