// Readers fed hostile files (images through the C API, IDX files, nn parameter files) and writes
// that fail (a full device, a file size limit): every failure must be a clear error naming the
// file, found before memory is spent on sizes that a header merely claims.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <flint.h>

#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"

namespace {

namespace nn = kiln::nn;
namespace data = kiln::data;
using kiln::ErrorCode;
using Bytes = std::vector<unsigned char>;

std::string scratch_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("kiln_test_readers_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f.good()) throw std::runtime_error("test setup: cannot write " + path);
}

Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void put_be(Bytes& b, std::uint64_t v, int bytes) {
  for (int s = 8 * (bytes - 1); s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
}
void put_le(Bytes& b, std::uint64_t v, int bytes) {
  for (int s = 0; s < 8 * bytes; s += 8) b.push_back(static_cast<unsigned char>(v >> s));
}
void put_text(Bytes& b, const std::string& s) { b.insert(b.end(), s.begin(), s.end()); }

std::uint32_t crc32_of(const unsigned char* p, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// The problems found, one per line; empty when every check held.
struct Problems {
  std::string text;
  void check(bool ok, const std::string& what) {
    if (!ok) text += what + "\n";
  }
};

bool under_address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

// Caps the growth of this process' address space at `budget` bytes beyond what it maps now.
void limit_address_space(std::uint64_t budget) {
  // AddressSanitizer reserves terabytes of shadow memory up front; a cap would break it, so
  // there only the results are checked.
  if (under_address_sanitizer()) return;
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  if (!(statm >> pages)) return;
  const std::uint64_t now = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const rlimit limit{now + budget, now + budget};
  ::setrlimit(RLIMIT_AS, &limit);
}

// Runs `check` in a child process (gtest's death-test machinery, re-executing the test binary so
// that no threads are inherited) whose address space may grow by only 512 MiB, so that a reader
// believing a size from a hostile header fails the test at once instead of exhausting the
// machine. `check` returns the problems it found; an exception escaping it is one too.
void run_bounded(const std::function<std::string()>& check) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        // The readers are host code; an OpenCL driver opened under the cap (KILN_EXECUTOR=opencl)
        // may crash on a failed allocation of its own (PoCL's compiler does), so the child
        // computes on the CPU.
        kiln::set_executor(kiln::cpu_executor());
        limit_address_space(std::uint64_t{512} << 20);
        std::string problems;
        try {
          problems = check();
        } catch (const std::exception& e) {
          problems = std::string("an exception escaped: ") + e.what();
        } catch (...) {
          problems = "an unknown exception escaped";
        }
        std::fputs(problems.c_str(), stderr);
        std::fflush(stderr);
        std::_Exit(problems.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool printable(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7E) return false;
  return true;
}

// ---- images (C API) ----------------------------------------------------------------------------

// fload_image of `bytes` written to a file: the loaded node (NULL on failure) and the message.
struct Loaded {
  FGraphNode* node = nullptr;
  FErrorType type = NO_ERROR;
  std::string message;
};
Loaded load_image_bytes(const std::string& name, const Bytes& bytes) {
  const std::string path = scratch_path(name);
  write_file(path, bytes);
  Loaded l;
  l.node = fload_image(path.c_str());
  l.type = fErrorType();
  l.message = fErrorMessage();
  std::remove(path.c_str());
  return l;
}

// Checks that loading failed with an IO_ERROR whose message is printable and names the file
// and every one of `parts`.
void expect_rejected(Problems& p, const Loaded& l, const std::string& name,
                     const std::vector<std::string>& parts) {
  p.check(l.node == nullptr, name + ": loaded although it should have been rejected");
  if (l.node != nullptr) fFreeGraph(l.node);
  p.check(l.type == IO_ERROR, name + ": error type " + std::to_string(l.type) + ", not IO_ERROR");
  p.check(contains(l.message, name), name + ": the message does not name the file: " + l.message);
  p.check(printable(l.message), name + ": the message is not printable: " + l.message);
  for (const std::string& part : parts)
    p.check(contains(l.message, part), name + ": the message lacks '" + part + "': " + l.message);
}

// The values of a loaded image, or a problem.
std::vector<float> values_of(Problems& p, const Loaded& l, const std::string& name,
                             std::vector<std::size_t> shape) {
  if (l.node == nullptr) {
    p.check(false, name + ": not loaded: " + l.message);
    return {};
  }
  std::vector<float> out;
  const FOperation& op = l.node->operation;
  std::vector<std::size_t> got(op.shape, op.shape + op.dimensions);
  p.check(got == shape, name + ": unexpected shape");
  FGraphNode* r = fCalculateResult(l.node);
  if (r != nullptr && r->result_data != nullptr && op.data_type == F_FLOAT32) {
    const float* v = static_cast<const float*>(r->result_data->data);
    out.assign(v, v + r->result_data->num_entries);
  }
  fFreeGraph(l.node);
  return out;
}

// An 18-byte TGA header: `type` 2 (true colour), 3 (grey) or 10/11 (run-length encoded); the
// origin is the top left, so rows are stored in reading order.
Bytes tga_header(int type, std::uint32_t width, std::uint32_t height, int bits) {
  Bytes b = {0, 0, static_cast<unsigned char>(type), 0, 0, 0, 0, 0, 0, 0, 0, 0};
  put_le(b, width, 2);
  put_le(b, height, 2);
  b.push_back(static_cast<unsigned char>(bits));
  b.push_back(0x20);
  return b;
}

// A PSD header (RGB, 8 bits) and its three empty sections, up to the compression field.
Bytes psd_header(std::uint32_t channels, std::uint32_t width, std::uint32_t height) {
  Bytes b;
  put_text(b, "8BPS");
  put_be(b, 1, 2);
  b.insert(b.end(), 6, 0);
  put_be(b, channels, 2);
  put_be(b, height, 4);
  put_be(b, width, 4);
  put_be(b, 8, 2);
  put_be(b, 3, 2);
  return b;
}

void png_chunk(Bytes& b, const std::string& type, const Bytes& payload) {
  put_be(b, payload.size(), 4);
  const std::size_t start = b.size();
  put_text(b, type);
  b.insert(b.end(), payload.begin(), payload.end());
  put_be(b, crc32_of(b.data() + start, b.size() - start), 4);
}

// A PNG whose header claims width x height RGBA pixels, followed by an empty zlib stream.
Bytes png_claiming(std::uint32_t width, std::uint32_t height) {
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  put_be(ihdr, width, 4);
  put_be(ihdr, height, 4);
  ihdr.insert(ihdr.end(), {8, 6, 0, 0, 0});
  png_chunk(b, "IHDR", ihdr);
  png_chunk(b, "IDAT", {0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01});
  png_chunk(b, "IEND", {});
  return b;
}

TEST(ReadersImages, HeadersClaimingHugeImagesAreRejectedBeforeDecoding) {
  run_bounded([] {
    Problems p;
    // 19 bytes claiming 65280 x 24576 grey pixels: stb used to fill them with zeros.
    Bytes tga = tga_header(3, 65280, 24576, 8);
    tga.push_back(0);
    expect_rejected(p, load_image_bytes("huge.tga", tga), "huge.tga", {"65280", "24576"});
    // 27 bytes claiming 30000 x 30000 pixels, and 30 bytes claiming 1000 x 1000.
    Bytes psd = psd_header(3, 30000, 30000);
    psd.push_back(0);
    expect_rejected(p, load_image_bytes("huge.psd", psd), "huge.psd", {"30000"});
    Bytes small_psd = psd_header(3, 1000, 1000);
    small_psd.insert(small_psd.end(), 4, 0);
    expect_rejected(p, load_image_bytes("cut.psd", small_psd), "cut.psd", {"1000"});
    // PNGs of a few dozen bytes: one over the pixel limit, one implausible for its size.
    expect_rejected(p, load_image_bytes("huge.png", png_claiming(32768, 16384)), "huge.png",
                    {"32768", "limit"});
    expect_rejected(p, load_image_bytes("large.png", png_claiming(2048, 2048)), "large.png",
                    {"2048", "bytes"});
    return p.text;
  });
}

// The files that made stb_image 2.27 misbehave: each must be a clean IO_ERROR through the C API
// and kiln::Error(io_error) through the C++ API, with no sanitizer report and no allocation
// beyond the child's 512 MiB.
std::vector<std::pair<std::string, Bytes>> decoder_regressions() {
  std::vector<std::pair<std::string, Bytes>> files;
  // A JPEG whose Huffman table counts add up past 256 (stb wrote 4 KB past an array).
  files.push_back({"huffman.jpg", {0xff, 0xd8, 0xff, 0xc4, 0x01, 0x01, 0x00, 0xff, 0xff}});
  // "P6" and a run of digits (signed overflow in stb's PNM header parser).
  files.push_back({"digits.ppm", {0x50, 0x36, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37, 0x37,
                                  0x37, 0x37, 0xdc}});
  // A PNG with a zero-length IDAT (stb did arithmetic on NULL and memcpy from it).
  Bytes empty_idat = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  put_be(ihdr, 4, 4);
  put_be(ihdr, 4, 4);
  ihdr.insert(ihdr.end(), {8, 6, 0, 0, 0});
  png_chunk(empty_idat, "IHDR", ihdr);
  png_chunk(empty_idat, "IDAT", {});
  png_chunk(empty_idat, "IEND", {});
  files.push_back({"empty_idat.png", empty_idat});
  // A 124-byte PNG whose IDAT claims 2 GiB (stb allocated 2 GiB before failing).
  Bytes long_idat = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  png_chunk(long_idat, "IHDR", ihdr);
  put_be(long_idat, 0x80000000u, 4);
  put_text(long_idat, "IDAT");
  long_idat.insert(long_idat.end(), {0x78, 0x9C});
  while (long_idat.size() < 124) long_idat.push_back(0x41);
  files.push_back({"long_idat.png", long_idat});
  return files;
}

TEST(ReadersImages, FilesThatBrokeStbAreCleanErrors) {
  run_bounded([] {
    Problems p;
    for (const auto& [name, bytes] : decoder_regressions()) {
      expect_rejected(p, load_image_bytes(name, bytes), name, {});
      const std::string path = scratch_path(name);
      write_file(path, bytes);
      try {
        data::read_image(path);
        p.check(false, name + ": read_image accepted it");
      } catch (const kiln::Error& e) {
        p.check(e.code() == ErrorCode::io_error, name + ": read_image gave " +
                                                     kiln::error_code_name(e.code()));
        p.check(contains(e.what(), name) && printable(e.what()),
                name + ": read_image's message: " + e.what());
      }
      std::remove(path.c_str());
    }
    return p.text;
  });
}

TEST(ReadersImages, TruncatedUncompressedImagesAreErrorsNotZeros) {
  Problems p;
  // A 4 x 4 RGB TGA needs 48 bytes of pixels; it has 20.
  Bytes tga = tga_header(2, 4, 4, 24);
  tga.insert(tga.end(), 20, 0x80);
  expect_rejected(p, load_image_bytes("cut.tga", tga), "cut.tga", {"truncated"});
  // A raw PSD of 4 x 4 x 3 channels needs 48 bytes of pixels; it has 10.
  Bytes psd = psd_header(3, 4, 4);
  psd.insert(psd.end(), 12, 0);  // the three section lengths
  put_be(psd, 0, 2);             // raw
  psd.insert(psd.end(), 10, 0x80);
  expect_rejected(p, load_image_bytes("cut.psd", psd), "cut.psd", {"truncated"});
  // A binary PGM of 8 x 8 with 5 bytes of pixels.
  Bytes pgm;
  put_text(pgm, "P5\n8 8\n255\n");
  pgm.insert(pgm.end(), 5, 7);
  expect_rejected(p, load_image_bytes("cut.pgm", pgm), "cut.pgm", {"truncated"});
  // A 4 x 4 24-bit BMP cut after its first row.
  Bytes bmp = {'B', 'M'};
  put_le(bmp, 54 + 48, 4);
  put_le(bmp, 0, 4);
  put_le(bmp, 54, 4);
  put_le(bmp, 40, 4);
  put_le(bmp, 4, 4);
  put_le(bmp, 4, 4);
  put_le(bmp, 1, 2);
  put_le(bmp, 24, 2);
  bmp.insert(bmp.end(), 24, 0);
  bmp.insert(bmp.end(), 12, 0x40);
  expect_rejected(p, load_image_bytes("cut.bmp", bmp), "cut.bmp", {"truncated"});
  EXPECT_EQ(p.text, "");
}

TEST(ReadersImages, ValidSmallImagesStillLoad) {
  Problems p;
  // Raw grey TGA 2 x 2.
  Bytes tga = tga_header(3, 2, 2, 8);
  tga.insert(tga.end(), {0, 85, 170, 255});
  const std::vector<float> grey = values_of(p, load_image_bytes("ok.tga", tga), "ok.tga", {2, 2, 1});
  EXPECT_EQ(grey, (std::vector<float>{0, 85 / 255.0f, 170 / 255.0f, 1}));
  // Run-length encoded grey TGA 6 x 1: one run of six, in two bytes.
  Bytes rle = tga_header(11, 6, 1, 8);
  rle.insert(rle.end(), {0x85, 200});
  const std::vector<float> run = values_of(p, load_image_bytes("rle.tga", rle), "rle.tga", {1, 6, 1});
  EXPECT_EQ(run, std::vector<float>(6, 200 / 255.0f));
  // Raw PSD 2 x 1 with three channels (stb adds an opaque alpha channel).
  Bytes psd = psd_header(3, 2, 1);
  psd.insert(psd.end(), 12, 0);
  put_be(psd, 0, 2);
  psd.insert(psd.end(), {255, 0, 0, 255, 51, 102});
  const std::vector<float> rgb = values_of(p, load_image_bytes("ok.psd", psd), "ok.psd", {1, 2, 4});
  EXPECT_EQ(rgb, (std::vector<float>{1, 0, 51 / 255.0f, 1, 0, 1, 102 / 255.0f, 1}));
  // Binary PGM 3 x 1.
  Bytes pgm;
  put_text(pgm, "P5 3 1 255\n");
  pgm.insert(pgm.end(), {10, 20, 30});
  const std::vector<float> pg = values_of(p, load_image_bytes("ok.pgm", pgm), "ok.pgm", {1, 3, 1});
  EXPECT_EQ(pg, (std::vector<float>{10 / 255.0f, 20 / 255.0f, 30 / 255.0f}));
  // Flat (not run-length encoded) HDR 2 x 1: RGBE (128, 64, 32, 129) is (1, 0.5, 0.25).
  Bytes hdr;
  put_text(hdr, "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 2\n");
  hdr.insert(hdr.end(), {128, 64, 32, 129, 128, 64, 32, 129});
  const std::vector<float> lin = values_of(p, load_image_bytes("ok.hdr", hdr), "ok.hdr", {1, 2, 3});
  EXPECT_EQ(lin, (std::vector<float>{1, 0.5f, 0.25f, 1, 0.5f, 0.25f}));
  EXPECT_EQ(p.text, "");
}

TEST(ReadersImages, ImagesWithoutPixelsAreRejected) {
  Problems p;
  Bytes hdr;
  put_text(hdr, "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 2 +X 0\n");
  expect_rejected(p, load_image_bytes("empty.hdr", hdr), "empty.hdr", {"width 0"});
  EXPECT_EQ(p.text, "");
}

TEST(ReadersImages, ErrorMessagesArePrintableAndHoldNoFileContent) {
  // A path with control characters (one would clear a terminal) that does not exist.
  const std::string odd = scratch_path("odd\x01\x7f\x1b[2J.png");
  EXPECT_EQ(fload_image(odd.c_str()), nullptr);
  const std::string message = fErrorMessage();
  EXPECT_EQ(fErrorType(), IO_ERROR);
  EXPECT_TRUE(printable(message)) << message;
  EXPECT_TRUE(contains(message, "odd\\x01\\x7f\\x1b[2J.png")) << message;

  // A file that is no image: the message says so without quoting it.
  Bytes junk;
  put_text(junk, "PRIVATE-CONTENT\x01\x02\xff of some text file");
  Problems p;
  expect_rejected(p, load_image_bytes("junk.png", junk), "junk.png", {});
  EXPECT_EQ(p.text, "");
  EXPECT_FALSE(contains(fErrorMessage(), "PRIVATE")) << fErrorMessage();
}

TEST(ReadersImages, StoreImageReportsAFailedWrite) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  const std::vector<float> pixels(4 * 4 * 3, 0.5f);
  const std::size_t shape[3] = {4, 4, 3};
  FGraphNode* node = fCreateGraph(pixels.data(), static_cast<int>(pixels.size()), F_FLOAT32,
                                  shape, 3);
  ASSERT_NE(node, nullptr);
  for (FImageFormat format : {F_PNG, F_JPEG, F_BMP}) {
    EXPECT_EQ(fstore_image(node, "/dev/full", format), IO_ERROR) << "format " << format;
    EXPECT_TRUE(contains(fErrorMessage(), "/dev/full")) << fErrorMessage();
  }
  // And a successful write still reads back.
  const std::string path = scratch_path("ok.png");
  EXPECT_EQ(fstore_image(node, path.c_str(), F_PNG), NO_ERROR) << fErrorMessage();
  FGraphNode* back = fload_image(path.c_str());
  ASSERT_NE(back, nullptr) << fErrorMessage();
  EXPECT_EQ(back->operation.shape[0], 4u);
  EXPECT_EQ(back->operation.shape[2], 3u);
  fFreeGraph(back);
  fFreeGraph(node);
  std::remove(path.c_str());
}

// ---- IDX files ------------------------------------------------------------------------------------

Bytes idx_header(std::uint8_t type, const std::vector<std::uint32_t>& dims) {
  Bytes b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (std::uint32_t d : dims) put_be(b, d, 4);
  return b;
}

// A gzip member holding `bytes` in stored deflate blocks; `claimed_size` goes into its size
// field (a reader must not believe it).
Bytes gzip_stored(const Bytes& bytes, std::uint32_t claimed_size) {
  Bytes out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  std::size_t pos = 0;
  do {
    const std::size_t n = std::min<std::size_t>(bytes.size() - pos, 65535);
    out.push_back(pos + n == bytes.size() ? 1 : 0);
    put_le(out, n, 2);
    put_le(out, ~n & 0xFFFF, 2);
    out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(pos),
               bytes.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
  } while (pos < bytes.size());
  put_le(out, crc32_of(bytes.data(), bytes.size()), 4);
  put_le(out, claimed_size, 4);
  return out;
}

// read_idx of `bytes` must fail with an io_error naming the file and holding `part`.
void expect_idx_error(Problems& p, const std::string& name, const Bytes& bytes,
                      const std::string& part) {
  const std::string path = scratch_path(name);
  write_file(path, bytes);
  try {
    data::read_idx(path);
    p.check(false, name + ": read without an error");
  } catch (const kiln::Error& e) {
    p.check(e.code() == ErrorCode::io_error, name + ": not an io_error: " + e.what());
    p.check(contains(e.what(), path), name + ": the message does not name the file: " + e.what());
    p.check(contains(e.what(), part), name + ": the message lacks '" + part + "': " + e.what());
  }
  std::remove(path.c_str());
}

TEST(ReadersIdx, HeadersClaimingMoreThanTheFileHoldsFailBeforeAllocating) {
  run_bounded([] {
    Problems p;
    // 12 bytes claiming 2^24 x 2^16 doubles (8 TiB), then 2^24 x 2^8 (32 GiB).
    expect_idx_error(p, "tiny.idx", idx_header(0x0E, {0xFFFFFF, 0xFFFF}), "too large");
    expect_idx_error(p, "small.idx", idx_header(0x0E, {0xFFFFFF, 0xFF}), "truncated");
    // 2 GiB of bytes announced, 100 there; plain and gzipped (with a size field that agrees
    // with the header, so only the data actually there can tell).
    Bytes two_gib = idx_header(0x08, {0x80000000u});
    two_gib.insert(two_gib.end(), 100, 1);
    expect_idx_error(p, "two_gib.idx", two_gib, "truncated");
    expect_idx_error(p, "two_gib.idx.gz", gzip_stored(two_gib, 0x80000008u), "truncated");
    return p.text;
  });
}

TEST(ReadersIdx, DimensionsWhoseProductOverflowsAreRejected) {
  run_bounded([] {
    Problems p;
    // 2^20 * 2^20 * 2^24 wraps to 0 in 64 bits, as does (2^16)^4: no values follow.
    expect_idx_error(p, "wrap1.idx", idx_header(0x08, {1u << 20, 1u << 20, 1u << 24}), "large");
    expect_idx_error(p, "wrap2.idx", idx_header(0x08, {1u << 16, 1u << 16, 1u << 16, 1u << 16}),
                     "large");
    return p.text;
  });
  // An empty array of [0, 2^32 - 1, 2^32 - 1]: malformed, not a request for memory.
  const std::string path = scratch_path("empty_huge.idx");
  write_file(path, {0, 0, 8, 3, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  for (auto read : {+[](const std::string& f) { data::read_idx_images(f); },
                    +[](const std::string& f) { data::read_idx(f); }}) {
    try {
      read(path);
      ADD_FAILURE() << "an empty array of impossible size was read";
    } catch (const kiln::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::io_error) << e.what();
      EXPECT_TRUE(contains(e.what(), "empty_huge.idx")) << e.what();
    }
  }
  std::remove(path.c_str());
  data::IdxArray a;
  a.dims = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_THROW(a.numel(), kiln::Error);
  a.dims = {3, 0, std::int64_t{1} << 62};
  EXPECT_EQ(a.numel(), 0);
}

TEST(ReadersIdx, DirectoriesAndValidFiles) {
  const std::string dir = scratch_path("idx_dir");
  std::filesystem::create_directory(dir);
  try {
    data::read_idx(dir);
    ADD_FAILURE() << "a directory was read";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    EXPECT_TRUE(contains(e.what(), dir)) << e.what();
  }
  std::filesystem::remove(dir);

  // i16 values [2, 2], plain and gzipped, and an empty array.
  Bytes file = idx_header(0x0B, {2, 2});
  file.insert(file.end(), {0, 1, 1, 0, 0xFF, 0xFF, 0x80, 0});
  for (const bool gz : {false, true}) {
    const std::string path = scratch_path(gz ? "ok.idx.gz" : "ok.idx");
    write_file(path, gz ? gzip_stored(file, static_cast<std::uint32_t>(file.size())) : file);
    const data::IdxArray a = data::read_idx(path);
    EXPECT_EQ(a.dims, (kiln::Shape{2, 2}));
    EXPECT_EQ(a.numel(), 4);
    EXPECT_EQ(a.value(0), 1);
    EXPECT_EQ(a.value(1), 256);
    EXPECT_EQ(a.value(2), -1);
    EXPECT_EQ(a.value(3), -32768);
    std::remove(path.c_str());
  }
  const std::string empty = scratch_path("empty.idx");
  write_file(empty, idx_header(0x08, {0, 7}));
  EXPECT_EQ(data::read_idx(empty).numel(), 0);
  std::remove(empty.c_str());
}

// ---- nn parameter files ------------------------------------------------------------------------

std::vector<std::vector<float>> parameter_values(nn::Module& m) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(p.value().to_vector<float>());
  return out;
}

TEST(ReadersNn, LoadingADirectoryIsAnIoErrorAndChangesNothing) {
  run_bounded([] {
    Problems p;
    nn::manual_seed(3);
    nn::Linear model(4, 3);
    const auto before = parameter_values(model);
    const std::string dir = scratch_path("nn_dir");
    std::filesystem::create_directory(dir);
    try {
      nn::load(model, dir);
      p.check(false, "a directory was loaded");
    } catch (const kiln::Error& e) {
      p.check(e.code() == ErrorCode::io_error, std::string("not an io_error: ") + e.what());
      p.check(contains(e.what(), dir), std::string("the message lacks the path: ") + e.what());
    }
    std::filesystem::remove(dir);
    p.check(parameter_values(model) == before, "the model changed");
    return p.text;
  });
}

TEST(ReadersNn, SaveReportsAFullDevice) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  nn::Linear model(64, 64);
  try {
    nn::save(model, "/dev/full");
    ADD_FAILURE() << "saving to /dev/full succeeded";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    EXPECT_TRUE(contains(e.what(), "/dev/full")) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/full"));
}

TEST(ReadersNn, AFailedSaveKeepsThePreviousFile) {
  run_bounded([] {
    Problems p;
    nn::manual_seed(5);
    nn::Linear first(64, 64), second(64, 64);
    const std::string path = scratch_path("params.kiln");
    nn::save(first, path);
    const Bytes saved = read_file(path);
    // Writing past a file size limit fails with EFBIG (instead of killing the process).
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1024, RLIM_INFINITY};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      nn::save(second, path);
      p.check(false, "a save past the file size limit succeeded");
    } catch (const kiln::Error& e) {
      p.check(e.code() == ErrorCode::io_error, std::string("not an io_error: ") + e.what());
      p.check(contains(e.what(), path), std::string("the message lacks the path: ") + e.what());
    }
    p.check(read_file(path) == saved, "the previous file was damaged");
    // Nothing is left behind next to it.
    const std::filesystem::path target(path);
    for (const auto& entry : std::filesystem::directory_iterator(target.parent_path())) {
      const std::string name = entry.path().filename().string();
      p.check(name == target.filename().string() ||
                  name.rfind(target.filename().string(), 0) != 0,
              "a temporary file was left: " + name);
    }
    // The previous file still loads.
    nn::Linear third(64, 64);
    nn::load(third, path);
    p.check(parameter_values(third) == parameter_values(first), "the file holds other values");
    std::remove(path.c_str());
    return p.text;
  });
}

}  // namespace
