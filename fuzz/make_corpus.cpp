// Writes the seed corpus of the fuzz harnesses: small inputs made by kiln itself (fserialize
// output, an nn::save file of the nn_load harness's model, IDX files, images from fstore_image
// and a few written by hand) and a few programs for the graph harness.
//
// Usage: kiln_fuzz_make_corpus <corpus dir>   (the committed corpus is fuzz/corpus)
// It writes <dir>/<harness>/<name> files, replacing ones of the same name.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "flint.h"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "kiln/safetensors.hpp"

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

fs::path root;

void write(const std::string& harness, const std::string& name, const Bytes& bytes) {
  fs::create_directories(root / harness);
  std::ofstream out(root / harness / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", (root / harness / name).c_str());
    std::exit(1);
  }
}

Bytes read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Bytes with_prefix(std::uint8_t prefix, const Bytes& body) {
  Bytes out{prefix};
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Bytes gzip(const Bytes& data) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::exit(1);
  Bytes out(deflateBound(&z, static_cast<uLong>(data.size())) + 32);
  z.next_in = const_cast<Bytef*>(data.data());
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::exit(1);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// ---- fdeserialize: fserialize output of every type ----

void serialized(const std::string& name, FGraphNode* node) {
  size_t n = 0;
  char* bytes = fserialize(node, &n);
  if (bytes == nullptr) std::exit(1);
  const Bytes body(bytes, bytes + n);
  std::free(bytes);
  fFreeGraph(node);
  write("fdeserialize", name, with_prefix(0, body));
  // The same with the checksums repaired by the harness (prefix bit 0).
  write("fdeserialize", name + "-repair", with_prefix(1, body));
}

void fdeserialize_corpus() {
  const float f32[] = {1.5f, -2, 0, 3, 4.25f, -0.5f};
  const int i32[] = {7, -1, 0, 65536};
  const long i64[] = {1, -2, 3, 1L << 40};
  const double f64[] = {3.25};
  const size_t s23[] = {2, 3}, s4[] = {4}, s212[] = {2, 1, 2}, s1[] = {1}, s030[] = {0, 3};
  serialized("f32-2x3", fCreateGraph(f32, 6, F_FLOAT32, s23, 2));
  serialized("i32-4", fCreateGraph(i32, 4, F_INT32, s4, 1));
  serialized("i64-2x1x2", fCreateGraph(i64, 4, F_INT64, s212, 3));
  serialized("f64-1", fCreateGraph(f64, 1, F_FLOAT64, s1, 1));
  serialized("f32-0x3", fCreateGraph(f32, 0, F_FLOAT32, s030, 2));
}

// ---- nn_load: nn::save of the harness's model, and of another model ----

void nn_corpus() {
  const fs::path tmp = fs::temp_directory_path() / "kiln-make-corpus.params";
  {
    kiln::nn::manual_seed(1);  // the harness's model (fuzz/nn_load.cpp)
    kiln::nn::Sequential m(kiln::nn::Linear(3, 4), kiln::nn::ReLU(),
                           kiln::nn::Linear(4, 2, false));
    kiln::nn::save(m, tmp.string());
    const Bytes file = read(tmp);
    write("nn_load", "model", with_prefix(0, file));
    write("nn_load", "model-repair", with_prefix(1, file));
  }
  {
    kiln::nn::Sequential other(kiln::nn::Linear(2, 2));
    kiln::nn::save(other, tmp.string());
    write("nn_load", "other-model", with_prefix(0, read(tmp)));
  }
  fs::remove(tmp);
}

// ---- safetensors: save_safetensors files of the harness's model, another model, every dtype ----

void safetensors_corpus() {
  const fs::path tmp = root / "safetensors-tmp";
  kiln::nn::manual_seed(1);
  kiln::nn::Sequential model(kiln::nn::Linear(3, 4), kiln::nn::ReLU(),
                             kiln::nn::Linear(4, 2, false));
  kiln::nn::save_safetensors(model, tmp.string());
  write("safetensors", "model", with_prefix(1, read(tmp)));
  write("safetensors", "model-lenient", with_prefix(0, read(tmp)));
  kiln::save_safetensors(tmp.string(),
                         {{"i32", kiln::Tensor::from(std::vector<std::int32_t>{1, -2}, {2})},
                          {"i64", kiln::Tensor::from(std::vector<std::int64_t>{3}, {1, 1})},
                          {"f64", kiln::Tensor::from(std::vector<double>{0.5}, {})},
                          {"empty", kiln::zeros({0, 2})}},
                         {{"format", "pt"}});
  write("safetensors", "dtypes", with_prefix(0, read(tmp)));
  fs::remove(tmp);
}

// ---- read_idx: IDX files of several types, plain and gzipped ----

Bytes idx(std::uint8_t type, const std::vector<std::uint32_t>& dims, std::size_t elem_size) {
  Bytes out{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  std::size_t n = 1;
  for (std::uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(d >> s));
    n *= d;
  }
  for (std::size_t i = 0; i < n * elem_size; ++i) out.push_back(static_cast<std::uint8_t>(i * 37 + 1));
  return out;
}

void idx_corpus() {
  // Prefix 0: the file as it is; prefix 1: the harness gzips it.
  write("read_idx", "u8-2x3x3", with_prefix(0, idx(0x08, {2, 3, 3}, 1)));
  write("read_idx", "u8-labels-5", with_prefix(1, idx(0x08, {5}, 1)));
  write("read_idx", "i8-4", with_prefix(0, idx(0x09, {4}, 1)));
  write("read_idx", "i16-2x2", with_prefix(1, idx(0x0B, {2, 2}, 2)));
  write("read_idx", "i32-3", with_prefix(0, idx(0x0C, {3}, 4)));
  write("read_idx", "f32-2x1", with_prefix(1, idx(0x0D, {2, 1}, 4)));
  write("read_idx", "f64-2", with_prefix(0, idx(0x0E, {2}, 8)));
  // A file that is gzipped already (as MNIST's .gz files), passed as it is.
  write("read_idx", "u8-3x2-gz", with_prefix(0, gzip(idx(0x08, {3, 2}, 1))));
}

// ---- load_image: images written by fstore_image, and TGA, HDR and PGM by hand ----

void image_corpus() {
  const fs::path tmp = fs::temp_directory_path() / "kiln-make-corpus.img";
  std::vector<float> px;
  for (int i = 0; i < 3 * 2 * 4; ++i) px.push_back(static_cast<float>(i % 5) / 4.0f);
  const size_t rgb[] = {3, 2, 3}, rgba[] = {2, 3, 4}, gray[] = {2, 2, 1};
  struct Image {
    const char* name;
    const size_t* shape;
    int n;
    FImageFormat format;
  } images[] = {{"rgb.png", rgb, 18, F_PNG},
                {"rgba.png", rgba, 24, F_PNG},
                {"gray.png", gray, 4, F_PNG},
                {"rgb.bmp", rgb, 18, F_BMP},
                {"rgba.bmp", rgba, 24, F_BMP},
                {"rgb.jpg", rgb, 18, F_JPEG}};
  for (const Image& im : images) {
    FGraphNode* node = fCreateGraph(px.data(), im.n, F_FLOAT32, im.shape, 3);
    if (node == nullptr || fstore_image(node, tmp.c_str(), im.format) != NO_ERROR) std::exit(1);
    fFreeGraph(node);
    write("load_image", im.name, read(tmp));
  }
  fs::remove(tmp);

  // TGA: uncompressed true-colour, 2x2, 24 bits, origin at the top left.
  Bytes tga{0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 24, 0x20};
  for (int i = 0; i < 12; ++i) tga.push_back(static_cast<std::uint8_t>(i * 20));
  write("load_image", "rgb.tga", tga);
  // TGA: run-length encoded, 2x1: one run of 2 pixels.
  Bytes tga_rle{0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0, 24, 0x20, 0x81, 10, 20, 30};
  write("load_image", "rle.tga", tga_rle);
  // Radiance HDR: 2x2 flat (not run-length encoded) RGBE pixels.
  const std::string header = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 2 +X 2\n";
  Bytes hdr(header.begin(), header.end());
  for (int i = 0; i < 4; ++i)
    for (std::uint8_t b : {std::uint8_t(64 + i), std::uint8_t(32), std::uint8_t(16), std::uint8_t(129)})
      hdr.push_back(b);
  write("load_image", "flat.hdr", hdr);
  // Binary PGM, 2x2.
  const std::string pgm = "P5\n2 2\n255\n";
  Bytes p(pgm.begin(), pgm.end());
  for (std::uint8_t b : {0, 85, 170, 255}) p.push_back(b);
  write("load_image", "gray.pgm", p);
}

// ---- graph: a few programs (byte layout in fuzz/graph.cpp) ----

void graph_corpus() {
  // Deterministic pseudo-random programs of a few lengths; the fuzzer takes it from there.
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 8; ++k) {
    Bytes program;
    const std::size_t length = 48u << (k % 4);
    for (std::size_t i = 0; i < length; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      program.push_back(static_cast<std::uint8_t>(state >> 56));
    }
    write("graph", "random-" + std::to_string(k), program);
  }
  // Programs aimed at size arithmetic that once overflowed (byte meanings in graph.cpp):
  // PyTorch-style pooling and convolution of a [1,1,5,5] input with a 2x2 window, stride 1 and
  // a dilation of INT64_MAX (conv2d with 1 filter and no bias) ...
  for (std::uint8_t which : {0, 1, 2}) {
    Bytes p{23, which, 0, 0, 5, 5, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 200, 197, 197, 0, 0};
    write("graph", "window2d-dilation-max-" + std::to_string(which), p);
  }
  // ... and a [4] f64 node sliced from 0 to LONG_MAX with step LONG_MAX, then repeated,
  // extended and windowed with hostile sizes.
  write("graph", "slice-step-max",
        Bytes{0, 0, 3, 0, 4, 0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 0, 12, 1, 0, 0, 2, 3,
              0, 2, 185, 0, 2, 185, 15, 0, 0, 0, 2, 210, 13, 0, 0, 0, 2, 215, 0, 2, 215});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  root = argv[1];
  fSetLoggingLevel(F_NO_LOGGING);
  fdeserialize_corpus();
  nn_corpus();
  idx_corpus();
  image_corpus();
  graph_corpus();
  safetensors_corpus();
  flintCleanup();
  std::printf("corpus written to %s\n", root.c_str());
  return 0;
}
