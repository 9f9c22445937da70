// The decoders' shared pieces: printable messages, the bounded cursor, the pixel limit and the
// canvas that enforces it.
#include "data/images/image_codec.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "api/builder.hpp"
#include "graph/buffer.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"
#include "kiln/error.hpp"
#include "kiln/images.hpp"

namespace kiln::data {
namespace {

constexpr std::uint64_t kDefaultPixelLimit = std::uint64_t{1} << 28;
constexpr const char* kLimitVariable = "KILN_IMAGE_MAX_PIXELS";

// 0 until the limit is first needed or set.
std::atomic<std::uint64_t> g_pixel_limit{0};

// The limit from the environment, or 0 if the variable holds no positive integer.
std::uint64_t limit_from_environment() {
  const char* text = std::getenv(kLimitVariable);
  if (text == nullptr || *text == '\0') return kDefaultPixelLimit;
  std::uint64_t value = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return 0;
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, static_cast<std::uint64_t>(*p - '0'), &value))
      return 0;
  }
  return value;
}

}  // namespace

std::uint64_t image_pixel_limit() {
  try {
    return images::pixel_limit();
  } catch (const images::ImageError& e) {
    throw Error(ErrorCode::io_error, std::string("image_pixel_limit: ") + e.what());
  }
}

void set_image_pixel_limit(std::uint64_t pixels) {
  if (pixels == 0)
    throw Error(ErrorCode::invalid_select, "set_image_pixel_limit: the limit must be at least 1");
  g_pixel_limit.store(pixels, std::memory_order_relaxed);
}

namespace images {

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

std::uint64_t pixel_limit() {
  std::uint64_t limit = g_pixel_limit.load(std::memory_order_relaxed);
  if (limit != 0) return limit;
  limit = limit_from_environment();
  if (limit == 0)
    throw ImageError(std::string(kLimitVariable) + "='" + printable(std::getenv(kLimitVariable)) +
                     "' is not a positive integer (the most pixels an image may have)");
  // A concurrent set_image_pixel_limit wins over the environment.
  std::uint64_t expected = 0;
  g_pixel_limit.compare_exchange_strong(expected, limit, std::memory_order_relaxed);
  return g_pixel_limit.load(std::memory_order_relaxed);
}

// ---- Cursor ------------------------------------------------------------------------------------

const std::uint8_t* Cursor::take(std::uint64_t n, const char* what) {
  if (n > remaining()) throw ImageError(std::string("the file is truncated: it ends inside ") + what);
  const std::uint8_t* p = bytes_.data() + at_;
  at_ += static_cast<std::size_t>(n);
  return p;
}

void Cursor::seek(std::uint64_t offset, const char* what) {
  if (offset > bytes_.size()) throw ImageError(std::string("the file is truncated: it ends before ") + what);
  at_ = static_cast<std::size_t>(offset);
}

std::uint8_t Cursor::u8(const char* what) { return *take(1, what); }

std::uint32_t Cursor::u16le(const char* what) {
  const std::uint8_t* p = take(2, what);
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8;
}

std::uint32_t Cursor::u32le(const char* what) {
  const std::uint8_t* p = take(4, what);
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

std::uint32_t Cursor::u16be(const char* what) {
  const std::uint8_t* p = take(2, what);
  return std::uint32_t{p[0]} << 8 | std::uint32_t{p[1]};
}

std::uint32_t Cursor::u32be(const char* what) {
  const std::uint8_t* p = take(4, what);
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 |
         std::uint32_t{p[3]};
}

// ---- Canvas ------------------------------------------------------------------------------------

float* Canvas::allocate(std::uint64_t height, std::uint64_t width, int channels,
                        std::uint64_t file_bytes, std::uint64_t samples_per_byte) {
  if (data_ != nullptr) throw ImageError("the decoder asked twice for pixels (a kiln bug)");
  if (width == 0 || height == 0)
    throw ImageError("the header gives width " + std::to_string(width) + " and height " +
                     std::to_string(height) + "; an image needs at least one pixel");
  if (channels < 1 || channels > 4)
    throw ImageError("the header gives " + std::to_string(channels) + " channels (1 to 4 read)");
  const std::string size = std::to_string(width) + " x " + std::to_string(height) +
                           " pixels with " + std::to_string(channels) + " channel" +
                           (channels == 1 ? "" : "s");
  // Each side fits 32 bits in every format read, so the products below cannot overflow.
  if (width > 0xFFFFFFFFu || height > 0xFFFFFFFFu)
    throw ImageError("the header claims " + size + ", beyond any image format's range");
  const std::uint64_t pixels = width * height;
  const std::uint64_t values = pixels * static_cast<std::uint64_t>(channels);
  const std::uint64_t limit = pixel_limit();
  if (pixels > limit)
    throw ImageError("the header claims " + size + " (" + std::to_string(pixels) +
                     " pixels, " + std::to_string(values * sizeof(float)) +
                     " bytes as f32), more than the limit of " + std::to_string(limit) +
                     " pixels (kiln::data::set_image_pixel_limit, KILN_IMAGE_MAX_PIXELS)");
  if (values / std::max<std::uint64_t>(samples_per_byte, 1) > file_bytes)
    throw ImageError("the header claims " + size + ", more than the file's " +
                     std::to_string(file_bytes) +
                     " bytes can encode: the file is truncated or corrupt");
  shape_ = Shape{static_cast<std::int64_t>(height), static_cast<std::int64_t>(width), channels};
  buffer_ = std::make_shared<detail::Buffer>(DType::f32, static_cast<std::int64_t>(values));
  data_ = buffer_->as<float>();
  std::fill_n(data_, values, 0.0f);
  return data_;
}

Tensor Canvas::take() {
  if (data_ == nullptr) throw ImageError("the decoder produced no pixels (a kiln bug)");
  data_ = nullptr;
  Tensor t = detail::make_node(detail::Op::store, DType::f32, shape_, {});
  detail::set_host_values(*t.node(), std::move(buffer_));
  return t;
}

}  // namespace images
}  // namespace kiln::data
