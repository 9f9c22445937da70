// C API: images through stb (Debian's libstb): fload_image reads what stb_image reads,
// fstore_image writes PNG, JPEG and BMP.
//
// stb_image believes the sizes in a file's header: it allocates the whole image (a PNG also a
// guess of its whole decompressed data) before it looks at the pixel data, and its readers of
// uncompressed formats fill missing data with zeros. Files here are untrusted, so fload_image
// reads the file once into memory (its real size known), checks the header's claims against
// that size and against a hard limit, and only then lets stb decode.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <stb_image.h>
#include <stb_image_write.h>

#include "api/builder.hpp"
#include "capi/capi.hpp"
#include "graph/buffer.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"

namespace kiln::capi {
namespace {

struct StbFree {
  void operator()(void* p) const { stbi_image_free(p); }
};
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// The most pixel values (width * height * channels) an image may have: 2^28 values make a 1 GiB
// f32 tensor, more than any image a training pipeline reads, while a hostile header can claim
// up to 2^24 x 2^24 pixels (stb's own limit), which no machine holds.
constexpr std::uint64_t kMaxValues = std::uint64_t{1} << 28;
// The largest file read: an image within kMaxValues needs at most 2 bytes per value (16-bit
// samples) plus its headers; stb takes the length as an int in any case.
constexpr std::uint64_t kMaxFileBytes = std::uint64_t{1} << 30;
// The most pixel values one byte of a file can decode to. Run-length coding (TGA, PSD, HDR)
// turns 2 bytes into at most 128 samples, and a palette index expands to up to 4 channels: 256.
// Deflate (PNG) expands at most 1032:1, a 1-bit sample is 8 per byte and a palette expands it
// to 4 channels (33024); GIF's LZW, JPEG's entropy coding and PIC's 16-bit run lengths stay
// below that, so 2^16 bounds every compressed format with room to spare.
constexpr std::uint64_t kRunLengthRatio = 256;
constexpr std::uint64_t kCompressedRatio = std::uint64_t{1} << 16;

// `text` with every byte outside printable ASCII (and the backslash) written as \xNN, so that a
// path cannot put control sequences into a log or terminal.
std::string printable(const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
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

std::string quoted(const char* path) { return "'" + printable(path) + "'"; }

// Only the static reason strings of stb, escaped all the same: they are never file content.
std::string stb_reason() {
  const char* why = stbi_failure_reason();
  return why ? printable(why) : std::string("unknown reason");
}

[[noreturn]] void io_error(const char* path, const std::string& what) {
  throw CError(IO_ERROR, "image " + quoted(path) + ": " + what);
}

std::vector<stbi_uc> read_whole_file(const char* path) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path, "rb"));
  if (!f) io_error(path, std::string("cannot open (") + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fileno(f.get()), &st) != 0)
    io_error(path, std::string("cannot query (") + std::strerror(errno) + ")");
  // A directory or device reports no size that could bound the read.
  if (!S_ISREG(st.st_mode)) io_error(path, "not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kMaxFileBytes)
    io_error(path, "the file has " + std::to_string(size) + " bytes, more than the " +
                       std::to_string(kMaxFileBytes) + " kiln reads as an image");
  if (size == 0) io_error(path, "the file is empty");
  std::vector<stbi_uc> bytes(static_cast<std::size_t>(size));
  if (!bytes.empty() && std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
    io_error(path, std::ferror(f.get()) ? "read error" : "the file shrank while being read");
  if (std::fgetc(f.get()) != EOF) io_error(path, "the file grew while being read");
  return bytes;
}

enum class Format { png, jpeg, gif, bmp, psd, pic, pnm, hdr, tga };

// The format stb decodes `b` as (stb_info has already accepted it). Every format but TGA has a
// signature, and stb tries TGA last; a TGA's second byte (its colour map type) is 0 or 1, which
// no signature has there, so a TGA is never taken for another format or the other way round.
Format format_of(const std::vector<stbi_uc>& b) {
  auto starts = [&](const char* sig, std::size_t n) {
    return b.size() >= n && std::memcmp(b.data(), sig, n) == 0;
  };
  if (starts("\x89PNG\r\n\x1a\n", 8)) return Format::png;
  if (starts("\xFF\xD8", 2)) return Format::jpeg;
  if (starts("GIF8", 4)) return Format::gif;
  if (starts("BM", 2)) return Format::bmp;
  if (starts("8BPS", 4)) return Format::psd;
  if (starts("\x53\x80\xF6\x34", 4)) return Format::pic;
  if (starts("P5", 2) || starts("P6", 2)) return Format::pnm;
  if (starts("#?", 2)) return Format::hdr;
  return Format::tga;
}

std::uint64_t le(const std::vector<stbi_uc>& b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
  return v;
}
std::uint64_t be(const std::vector<stbi_uc>& b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
  return v;
}

// The fewest bytes a file of an uncompressed (or run-length coded) format needs to hold the
// pixels its header announces, from what stb reads; 0 where that is not known. Sizes are at most
// 2^24 x 2^24 (stb's limit) times small factors, so the 64-bit arithmetic cannot overflow.
std::uint64_t bytes_needed(Format format, const std::vector<stbi_uc>& b, std::uint64_t w,
                           std::uint64_t h, std::uint64_t values, bool sixteen_bit) {
  switch (format) {
    case Format::tga: {
      if (b.size() < 18) return 0;
      const std::uint64_t type = b[2], bits = b[16];
      const std::uint64_t start = 18 + b[0];  // header and image id
      std::uint64_t palette = 0;
      // stb reads a colour map only for colour-mapped images (types 1 and 9).
      if (b[1] == 1 && (type == 1 || type == 9)) palette = le(b, 5, 2) * ((b[7] + 7) / 8);
      if (type >= 1 && type <= 3) return start + palette + w * h * ((bits + 7) / 8);
      if (type >= 9 && type <= 11) return start + palette + 2 * ((w * h + 127) / 128);
      return 0;
    }
    case Format::psd: {
      // Three sections (colour mode data, image resources, layers), each a u32 length and its
      // bytes, then the compression field.
      std::uint64_t at = 26;
      for (int section = 0; section < 3; ++section) {
        if (at + 4 > b.size()) return at + 4;
        at += 4 + be(b, static_cast<std::size_t>(at), 4);
      }
      if (at + 2 > b.size()) return at + 2;
      const std::uint64_t compression = be(b, static_cast<std::size_t>(at), 2);
      const std::uint64_t planes = std::min<std::uint64_t>(be(b, 12, 2), 4);  // stb reads <= 4
      at += 2;
      if (compression == 0) return at + planes * w * h * (sixteen_bit ? 2 : 1);
      // Run-length coded: a 2-byte count per row and plane, then at least 2 bytes per 128.
      const std::uint64_t all_planes = be(b, 12, 2);
      return at + 2 * h * all_planes + planes * h * 2 * ((w + 127) / 128);
    }
    case Format::pnm:
      return 2 + values * (sixteen_bit ? 2 : 1);  // "P5"/"P6", then at least the samples
    case Format::bmp: {
      if (b.size() < 30) return 0;
      const std::uint64_t offset = le(b, 10, 4), header = le(b, 14, 4);
      const std::uint64_t bits = header == 12 ? le(b, 24, 2) : le(b, 28, 2);
      if (bits == 0 || bits > 32) return 0;
      const std::uint64_t stride = (w * bits + 31) / 32 * 4;
      return std::max<std::uint64_t>(offset, 14 + header) + stride * (h - 1) + (w * bits + 7) / 8;
    }
    default:
      return 0;
  }
}

// Checks the header's claims before stb allocates anything for them.
void validate(const std::vector<stbi_uc>& bytes, const char* path, int w, int h, int c,
              bool sixteen_bit) {
  if (w <= 0 || h <= 0)
    io_error(path, "the header gives width " + std::to_string(w) + " and height " +
                       std::to_string(h) + "; an image needs at least one pixel");
  if (c < 1 || c > 4) io_error(path, "the header gives " + std::to_string(c) + " channels");
  const std::string size = std::to_string(w) + " x " + std::to_string(h) + " pixels with " +
                           std::to_string(c) + " channel" + (c == 1 ? "" : "s");
  const std::uint64_t values =
      static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(h) * static_cast<std::uint64_t>(c);
  if (values > kMaxValues)
    io_error(path, "the header claims " + size + " (" + std::to_string(values) +
                       " values), more than kiln's limit of " + std::to_string(kMaxValues) +
                       " (2^28) values per image");
  const Format format = format_of(bytes);
  const std::uint64_t needed = bytes_needed(format, bytes, static_cast<std::uint64_t>(w),
                                            static_cast<std::uint64_t>(h), values, sixteen_bit);
  if (needed > bytes.size())
    io_error(path, "the file is truncated: " + size + " need at least " +
                       std::to_string(needed) + " bytes, the file has " +
                       std::to_string(bytes.size()));
  const bool compressed = format == Format::png || format == Format::jpeg ||
                          format == Format::gif || format == Format::pic;
  const std::uint64_t ratio = compressed ? kCompressedRatio : kRunLengthRatio;
  if (values / ratio > bytes.size())
    io_error(path, "the header claims " + size + ", more than its " +
                       std::to_string(bytes.size()) +
                       " bytes can encode; the file is truncated or corrupt");
}

// A new f32 tensor [h, w, c] whose values `fill` writes straight into its storage.
template <class F> Tensor image_tensor(int h, int w, int c, F fill) {
  Tensor t = detail::make_node(detail::Op::store, DType::f32, Shape{h, w, c}, {});
  auto buffer = std::make_shared<detail::Buffer>(DType::f32, t.numel());
  fill(buffer->as<float>(), static_cast<std::size_t>(t.numel()));
  detail::set_host_values(*t.node(), std::move(buffer));
  return t;
}

Tensor decode(const std::vector<stbi_uc>& bytes, const char* path) {
  const int len = static_cast<int>(bytes.size());
  int w = 0, h = 0, c = 0;
  if (!stbi_info_from_memory(bytes.data(), len, &w, &h, &c))
    io_error(path, "not an image kiln can read, or its header is corrupt (" + stb_reason() + ")");
  const bool hdr = stbi_is_hdr_from_memory(bytes.data(), len) != 0;
  const bool sixteen_bit = !hdr && stbi_is_16_bit_from_memory(bytes.data(), len) != 0;
  validate(bytes, path, w, h, c, sixteen_bit);

  int dw = 0, dh = 0, dc = 0;
  auto check_decoded = [&](const void* pixels) {
    if (pixels == nullptr) io_error(path, "cannot decode (" + stb_reason() + ")");
    // stb_info may give the channels of the file where the decoder expands them (GIF, PSD).
    if (dw != w || dh != h || dc < 1 || dc > 4 ||
        static_cast<std::uint64_t>(dw) * static_cast<std::uint64_t>(dh) *
                static_cast<std::uint64_t>(dc) > kMaxValues)
      io_error(path, "decoded to another size than its header gives");
  };
  if (hdr) {
    std::unique_ptr<float, StbFree> pixels(stbi_loadf_from_memory(bytes.data(), len, &dw, &dh, &dc, 0));
    check_decoded(pixels.get());
    return image_tensor(h, w, dc, [&](float* out, std::size_t n) {
      std::memcpy(out, pixels.get(), n * sizeof(float));
    });
  }
  if (sixteen_bit) {
    std::unique_ptr<stbi_us, StbFree> pixels(stbi_load_16_from_memory(bytes.data(), len, &dw, &dh, &dc, 0));
    check_decoded(pixels.get());
    return image_tensor(h, w, dc, [&](float* out, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) out[i] = pixels.get()[i] / 65535.0f;
    });
  }
  std::unique_ptr<stbi_uc, StbFree> pixels(stbi_load_from_memory(bytes.data(), len, &dw, &dh, &dc, 0));
  check_decoded(pixels.get());
  return image_tensor(h, w, dc, [&](float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = pixels.get()[i] / 255.0f;
  });
}

// stb's writers report nothing about the file (they ignore fwrite's and fclose's results), so
// they encode into memory and the file is written here, every step checked.
struct Encoded {
  std::vector<unsigned char> bytes;
  bool out_of_memory = false;
};

void append(void* context, void* data, int size) {
  auto* out = static_cast<Encoded*>(context);
  const auto* p = static_cast<const unsigned char*>(data);
  // An exception must not unwind through stb's C frames.
  try {
    if (size > 0 && !out->out_of_memory) out->bytes.insert(out->bytes.end(), p, p + size);
  } catch (const std::bad_alloc&) {
    out->out_of_memory = true;
  }
}

void write_file(const char* path, const std::vector<unsigned char>& bytes) {
  auto fail = [&](const char* step) {
    throw CError(IO_ERROR, "cannot write image " + quoted(path) + " (" + step + ": " +
                               std::strerror(errno) + ")");
  };
  errno = 0;
  std::FILE* f = std::fopen(path, "wb");
  if (f == nullptr) fail("open");
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() &&
                       std::fflush(f) == 0;
  const int saved = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written) {
    errno = saved;
    fail("write");
  }
  if (!closed) fail("close");
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
    const std::vector<stbi_uc> bytes = read_whole_file(path);
    return make_node(decode(bytes, path), FSTORE);
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
    execute(n);  // evaluates only once; safe while other threads execute n

    const std::vector<double> values = n.tensor.to_vector<double>();
    std::vector<unsigned char> pixels(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      const double clamped = v > 0.0 ? (v < 1.0 ? v : 1.0) : 0.0;  // NaN -> 0
      pixels[i] = static_cast<unsigned char>(std::lround(clamped * 255.0));
    }
    const int W = static_cast<int>(w), H = static_cast<int>(h), C = static_cast<int>(c);
    Encoded encoded;
    int ok = 0;
    switch (format) {
      case F_PNG: ok = stbi_write_png_to_func(append, &encoded, W, H, C, pixels.data(), W * C); break;
      case F_JPEG:
        ok = stbi_write_jpg_to_func(append, &encoded, W, H, C, pixels.data(), kJpegQuality);
        break;
      case F_BMP: ok = stbi_write_bmp_to_func(append, &encoded, W, H, C, pixels.data()); break;
    }
    if (encoded.out_of_memory) throw CError(OUT_OF_MEMORY, "out of memory encoding the image");
    if (ok == 0 || encoded.bytes.empty())
      throw CError(IO_ERROR, "cannot encode image " + quoted(path));
    write_file(path, encoded.bytes);
    return true;
  });
  return ok ? NO_ERROR : fErrorType();
}

}  // extern "C"
