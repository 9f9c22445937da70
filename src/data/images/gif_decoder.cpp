// GIF through giflib's record-level API: the first frame on its logical screen, as RGBA.
// giflib's whole-file reader (DGifSlurp) would allocate every frame at the size its descriptor
// claims; reading record by record, kiln checks the screen's size on the canvas first and
// decodes the frame a line at a time into a buffer of the frame's width.
#include <gif_lib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "data/images/image_codec.hpp"

namespace kiln::data::images {
namespace {

// The most samples one byte of LZW data can decode to: with 12-bit codes a code stands for up
// to 4096 pixels, which makes under 2^12 * 8 / 12 pixels (of 4 values) per byte.
constexpr std::uint64_t kGifSamplesPerByte = std::uint64_t{1} << 16;

struct Source {
  Bytes file;
  std::size_t at = 0;
};

int read_bytes(GifFileType* gif, GifByteType* out, int n) {
  auto& source = *static_cast<Source*>(gif->UserData);
  const std::size_t left = source.file.size() - source.at;
  const std::size_t count = n < 0 ? 0 : std::min(static_cast<std::size_t>(n), left);
  std::memcpy(out, source.file.data() + source.at, count);
  source.at += count;
  return static_cast<int>(count);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};

[[noreturn]] void fail(const char* step, int error) {
  const char* why = GifErrorString(error);
  throw ImageError(std::string(step) + " (" + printable(why ? why : "unknown giflib error") + ")");
}

struct Rgba {
  std::uint8_t r = 0, g = 0, b = 0, a = 0;
};

// The frame's colours. An index past the colour table, and the transparent colour, are
// transparent black: the screen's colour where the frame does not draw.
std::array<Rgba, 256> palette_of(const ColorMapObject& map, int transparent) {
  std::array<Rgba, 256> palette{};
  const int count = std::min(map.ColorCount, 256);
  for (int i = 0; i < count; ++i) {
    const GifColorType& c = map.Colors[i];
    palette[static_cast<std::size_t>(i)] = {c.Red, c.Green, c.Blue, 255};
  }
  if (transparent >= 0 && transparent < 256) palette[static_cast<std::size_t>(transparent)] = Rgba{};
  return palette;
}

// The rows of an interlaced frame in the order they are stored: every 8th from 0, every 8th
// from 4, every 4th from 2, every 2nd from 1.
std::vector<int> row_order(int height, bool interlaced) {
  std::vector<int> rows;
  rows.reserve(static_cast<std::size_t>(height));
  if (!interlaced) {
    for (int y = 0; y < height; ++y) rows.push_back(y);
    return rows;
  }
  static constexpr int kStart[] = {0, 4, 2, 1}, kStep[] = {8, 8, 4, 2};
  for (int pass = 0; pass < 4; ++pass)
    for (int y = kStart[pass]; y < height; y += kStep[pass]) rows.push_back(y);
  return rows;
}

}  // namespace

void decode_gif(Bytes file, Canvas& canvas) {
  Source source{file};
  int error = 0;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&source, read_bytes, &error));
  if (!gif) fail("not a GIF kiln can read", error);
  const int screen_width = gif->SWidth, screen_height = gif->SHeight;
  int transparent = -1;
  while (true) {
    GifRecordType record = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif.get(), &record) == GIF_ERROR)
      fail("the GIF is damaged or truncated", gif->Error);
    if (record == TERMINATE_RECORD_TYPE) throw ImageError("the GIF holds no image");
    if (record == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      if (DGifGetExtension(gif.get(), &code, &block) == GIF_ERROR)
        fail("the GIF's extension is damaged", gif->Error);
      // A graphic control block (its first byte the length, 4) names the transparent colour of
      // the frame that follows.
      if (code == GRAPHICS_EXT_FUNC_CODE && block != nullptr && block[0] >= 4)
        transparent = (block[1] & 1) ? block[4] : -1;
      while (block != nullptr)
        if (DGifGetExtensionNext(gif.get(), &block) == GIF_ERROR)
          fail("the GIF's extension is damaged", gif->Error);
      continue;
    }
    if (record != IMAGE_DESC_RECORD_TYPE) throw ImageError("the GIF holds an unknown record");
    break;
  }
  if (DGifGetImageDesc(gif.get()) == GIF_ERROR)
    fail("the GIF's image descriptor is damaged", gif->Error);
  const GifImageDesc& frame = gif->Image;
  if (frame.Left < 0 || frame.Top < 0 || frame.Width <= 0 || frame.Height <= 0 ||
      frame.Left + frame.Width > screen_width || frame.Top + frame.Height > screen_height)
    throw ImageError("the GIF's first frame (" + std::to_string(frame.Width) + " x " +
                     std::to_string(frame.Height) + " at " + std::to_string(frame.Left) + ", " +
                     std::to_string(frame.Top) + ") does not lie on its " +
                     std::to_string(screen_width) + " x " + std::to_string(screen_height) +
                     " screen");
  const ColorMapObject* map = frame.ColorMap ? frame.ColorMap : gif->SColorMap;
  if (map == nullptr || map->Colors == nullptr) throw ImageError("the GIF has no colour table");
  const std::array<Rgba, 256> palette = palette_of(*map, transparent);

  float* out = canvas.allocate(static_cast<std::uint64_t>(screen_height),
                               static_cast<std::uint64_t>(screen_width), 4, file.size(),
                               kGifSamplesPerByte);
  std::vector<GifPixelType> line(static_cast<std::size_t>(frame.Width));
  for (const int y : row_order(frame.Height, frame.Interlace)) {
    if (DGifGetLine(gif.get(), line.data(), frame.Width) == GIF_ERROR)
      fail("the GIF's pixel data are damaged or truncated", gif->Error);
    float* row = out + (static_cast<std::size_t>(frame.Top + y) * static_cast<std::size_t>(screen_width) +
                        static_cast<std::size_t>(frame.Left)) * 4;
    for (std::size_t x = 0; x < line.size(); ++x) {
      const Rgba& c = palette[line[x]];
      row[4 * x + 0] = c.r / 255.0f;
      row[4 * x + 1] = c.g / 255.0f;
      row[4 * x + 2] = c.b / 255.0f;
      row[4 * x + 3] = c.a / 255.0f;
    }
  }
}

}  // namespace kiln::data::images
