// BMP writing through stb_image_write (Debian's libstb), which encodes into memory here; the
// file itself is written by write_image with every step checked.
#include <stb_image_write.h>

#include <new>
#include <vector>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

struct Encoded {
  std::vector<std::uint8_t> bytes;
  bool out_of_memory = false;
};

void append(void* context, void* data, int size) {
  auto* out = static_cast<Encoded*>(context);
  const auto* p = static_cast<const std::uint8_t*>(data);
  // An exception must not unwind through stb's C frames.
  try {
    if (size > 0 && !out->out_of_memory) out->bytes.insert(out->bytes.end(), p, p + size);
  } catch (const std::bad_alloc&) {
    out->out_of_memory = true;
  }
}

}  // namespace

std::vector<std::uint8_t> encode_bmp(const std::uint8_t* pixels, int width, int height,
                                     int channels) {
  Encoded encoded;
  const int ok = stbi_write_bmp_to_func(append, &encoded, width, height, channels, pixels);
  if (encoded.out_of_memory) throw std::bad_alloc();
  if (ok == 0 || encoded.bytes.empty()) throw ImageError("stb_image_write cannot encode the BMP");
  return std::move(encoded.bytes);
}

}  // namespace kiln::data::images
