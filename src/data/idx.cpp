// IDX files (plain or gzipped, read through zlib's gz* functions, which pass plain files
// through unchanged), MNIST-style data sets, and shuffled batches.
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <new>
#include <random>

#include "data/epoch_order.hpp"
#include "kiln/data.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"

namespace kiln::data {

namespace {

[[noreturn]] void io_fail(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::io_error, "data: " + path + ": " + what);
}

std::size_t type_size(std::uint8_t type) {
  switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// Reads exactly n bytes; false at the end of the data.
bool read_exact(gzFile f, void* dst, std::size_t n, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int got = gzread(f, p, chunk);
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      io_fail(path, std::string("read error (") + (msg ? msg : "unknown") +
                        "); the file may be truncated or corrupted");
    }
    if (got == 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace

std::int64_t IdxArray::numel() const {
  std::int64_t n = 1;
  bool overflow = false;
  for (auto d : dims) {
    if (d < 0)
      throw Error(ErrorCode::illegal_dimension,
                  "data::IdxArray: negative dimension in " + shape_to_string(dims));
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  // A zero dimension makes the array empty whatever the others multiply to.
  for (auto d : dims)
    if (d == 0) return 0;
  if (overflow)
    throw Error(ErrorCode::illegal_dimension,
                "data::IdxArray: dimensions " + shape_to_string(dims) + " overflow 64 bits");
  return n;
}

std::size_t IdxArray::element_size() const { return type_size(type); }

double IdxArray::value(std::int64_t i) const {
  const std::uint8_t* p = data.data() + static_cast<std::size_t>(i) * element_size();
  switch (type) {
    case 0x08: return *p;
    case 0x09: return static_cast<std::int8_t>(*p);
    case 0x0B: { std::int16_t v; std::memcpy(&v, p, 2); return v; }
    case 0x0C: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
    case 0x0D: { float v; std::memcpy(&v, p, 4); return v; }
    default: { double v; std::memcpy(&v, p, 8); return v; }
  }
}

namespace {

// The most value bytes an IDX file may announce: 2^36 bytes (64 GiB) is far beyond any data set
// read whole into memory, and well inside size_t and int64.
constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{1} << 36;
// Deflate expands at most 1032:1; a gzip file can therefore hold at most this many bytes per
// byte of file (with room for several members), whatever its size field says.
constexpr std::uint64_t kMaxGzipRatio = 1040;
// The data are read in pieces of this size, so memory grows only with the bytes that arrive.
constexpr std::size_t kChunk = std::size_t{16} << 20;

IdxArray read_idx_unchecked(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    io_fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) io_fail(path, "is a directory, not an IDX file");
  // The size bounds the data only for a regular file (a pipe or device reports none).
  const bool sized = S_ISREG(st.st_mode);
  const auto file_size = static_cast<std::uint64_t>(st.st_size);

  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (!f) io_fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  gzbuffer(f.get(), 1 << 17);

  std::uint8_t magic[4];
  if (!read_exact(f.get(), magic, 4, path)) io_fail(path, "file is empty or truncated (no header)");
  IdxArray out;
  out.type = magic[2];
  const std::size_t size = type_size(out.type);
  if (magic[0] != 0 || magic[1] != 0 || size == 0)
    io_fail(path, "not an IDX file (bad magic number)");
  const int rank = magic[3];
  if (rank == 0) io_fail(path, "not an IDX file (rank 0)");
  std::uint64_t numel = 1;
  bool overflow = false, empty = false;
  for (int d = 0; d < rank; ++d) {
    std::uint8_t b[4];
    if (!read_exact(f.get(), b, 4, path)) io_fail(path, "file is truncated (in the header)");
    const std::uint64_t dim = (std::uint64_t{b[0]} << 24) | (std::uint64_t{b[1]} << 16) |
                              (std::uint64_t{b[2]} << 8) | b[3];
    overflow |= __builtin_mul_overflow(numel, dim, &numel);
    empty |= dim == 0;
    out.dims.push_back(static_cast<std::int64_t>(dim));
  }
  std::uint64_t bytes = 0;
  // An empty array whose other sizes multiply past any memory is no array a writer made: the
  // tensor of that shape cannot exist even empty.
  std::uint64_t others = 1;
  bool others_overflow = false;
  for (const std::int64_t d : out.dims)
    if (d != 0) others_overflow |= __builtin_mul_overflow(others, static_cast<std::uint64_t>(d), &others);
  if (empty && (others_overflow || others > (std::uint64_t{1} << 62)))
    io_fail(path, "the header announces " + shape_to_string(out.dims) +
                      ", an empty array whose other sizes multiply past 2^62: not an IDX file");
  if (empty) numel = 0, overflow = false;
  overflow |= __builtin_mul_overflow(numel, std::uint64_t{size}, &bytes);
  if (overflow || bytes > kMaxIdxBytes)
    io_fail(path, "the header announces " + shape_to_string(out.dims) + " values of " +
                      std::to_string(size) + " bytes, too large (the limit is " +
                      std::to_string(kMaxIdxBytes) + " bytes)");
  const std::uint64_t header = 4 + 4 * static_cast<std::uint64_t>(rank);
  const std::string announced = "the header announces " + shape_to_string(out.dims) +
                                " values of " + std::to_string(size) + " bytes (" +
                                std::to_string(bytes) + " bytes)";
  if (sized && gzdirect(f.get()) && header + bytes > file_size)
    io_fail(path, "file is truncated: " + announced + ", the file has " +
                      std::to_string(file_size - std::min(file_size, header)) +
                      " bytes after the header");
  if (sized && !gzdirect(f.get()) && bytes / kMaxGzipRatio > file_size)
    io_fail(path, "file is truncated or corrupted: " + announced + ", more than " +
                      std::to_string(file_size) + " compressed bytes can hold");

  // Grown as data arrive, so a header that lies costs no more memory than the file holds (for
  // a plain file the size was checked above, so all of it can be reserved at once).
  if (sized && gzdirect(f.get())) out.data.reserve(static_cast<std::size_t>(bytes));
  std::uint64_t have = 0;
  while (have < bytes) {
    const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - have, kChunk));
    out.data.resize(static_cast<std::size_t>(have) + piece);
    if (!read_exact(f.get(), out.data.data() + have, piece, path))
      io_fail(path, "file is truncated: " + announced + ", the data end sooner");
    have += piece;
  }
  char extra;
  if (gzread(f.get(), &extra, 1) > 0)
    io_fail(path, "unexpected data after the " + shape_to_string(out.dims) + " values");
  int err = 0;
  const char* message = gzerror(f.get(), &err);
  if (err != Z_OK)
    io_fail(path, std::string("the file is truncated or corrupted (") +
                      (message ? message : "zlib error") + ")");
  // IDX values are big-endian.
  if (size > 1)
    for (std::size_t i = 0; i < out.data.size(); i += size)
      std::reverse(out.data.begin() + static_cast<std::ptrdiff_t>(i),
                   out.data.begin() + static_cast<std::ptrdiff_t>(i + size));
  return out;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  try {
    return read_idx_unchecked(path);
  } catch (const std::bad_alloc&) {
    io_fail(path, "not enough memory for the values the file holds");
  } catch (const std::length_error&) {
    io_fail(path, "not enough memory for the values the file holds");
  }
}

Tensor read_idx_images(const std::string& path) {
  const IdxArray a = read_idx(path);
  if (a.type != 0x08 || a.dims.size() != 3)
    io_fail(path, "expected u8 images [N, H, W], found type 0x" +
                      std::to_string(static_cast<int>(a.type)) + " of shape " +
                      shape_to_string(a.dims));
  std::vector<float> values(a.data.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = a.data[i] * (1.0f / 255.0f);
  return Tensor::from(values, {a.dims[0], 1, a.dims[1], a.dims[2]});
}

Tensor read_idx_labels(const std::string& path) {
  const IdxArray a = read_idx(path);
  if (a.type != 0x08 || a.dims.size() != 1)
    io_fail(path, "expected u8 labels [N], found type 0x" +
                      std::to_string(static_cast<int>(a.type)) + " of shape " +
                      shape_to_string(a.dims));
  std::vector<std::int64_t> values(a.data.begin(), a.data.end());
  return Tensor::from(values, {a.dims[0]});
}

Dataset load_mnist_split(const std::string& dir, const std::string& split) {
  std::string prefix;
  if (split == "train") prefix = "train";
  else if (split == "test" || split == "t10k") prefix = "t10k";
  else throw Error(ErrorCode::invalid_select,
                   "data::load_mnist_split: split must be \"train\" or \"test\", got \"" + split +
                       "\"");
  auto find = [&](const std::string& base) {
    const std::string plain = dir + "/" + base, gz = plain + ".gz";
    if (std::filesystem::exists(plain)) return plain;
    if (std::filesystem::exists(gz)) return gz;
    throw Error(ErrorCode::io_error, "data: missing file " + gz + " (or " + plain +
                                         "); on Debian install the dataset-fashion-mnist "
                                         "package, or pass another data directory");
  };
  Dataset d;
  const std::string images = find(prefix + "-images-idx3-ubyte");
  const std::string labels = find(prefix + "-labels-idx1-ubyte");
  d.images = read_idx_images(images);
  d.labels = read_idx_labels(labels);
  if (d.images.size(0) != d.labels.size(0))
    throw Error(ErrorCode::incompatible_shapes,
                "data: " + images + " holds " + std::to_string(d.images.size(0)) + " images but " +
                    labels + " holds " + std::to_string(d.labels.size(0)) + " labels");
  return d;
}

Dataset take(const Dataset& d, std::int64_t count) {
  if (count < 0 || count >= d.size()) return d;
  Dataset out;
  // Copied into new leaves, so the full data set can be released.
  const std::int64_t per_image = d.images.numel() / std::max<std::int64_t>(1, d.size());
  std::vector<float> images(static_cast<std::size_t>(d.images.numel()));
  d.images.copy_to(images.data(), DType::f32);
  images.resize(static_cast<std::size_t>(count * per_image));
  Shape shape = d.images.shape();
  shape[0] = count;
  out.images = Tensor::from(images, shape);
  std::vector<std::int64_t> labels = d.labels.to_vector<std::int64_t>();
  labels.resize(static_cast<std::size_t>(count));
  out.labels = Tensor::from(labels, {count});
  return out;
}

// ---- BatchIterator --------------------------------------------------------------------------------

BatchIterator::BatchIterator(Dataset data, std::int64_t batch_size, bool shuffle,
                             std::uint64_t seed, bool drop_last)
    : data_(std::move(data)), batch_size_(batch_size), shuffle_(shuffle), seed_(seed),
      drop_last_(drop_last) {
  if (batch_size <= 0)
    throw Error(ErrorCode::illegal_dimension,
                "data::BatchIterator: batch size must be positive, got " +
                    std::to_string(batch_size));
  if (!data_.images.defined() || !data_.labels.defined() ||
      data_.images.size(0) != data_.labels.size(0))
    throw Error(ErrorCode::incompatible_shapes,
                "data::BatchIterator: images and labels must have the same first dimension");
  start_epoch(0);
}

void BatchIterator::start_epoch(std::int64_t epoch) {
  order_ = epoch_order(data_.size(), shuffle_, seed_, epoch);
  position_ = 0;
  batch_index_ = 0;
}

std::int64_t BatchIterator::num_batches() const {
  const std::int64_t n = data_.size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

bool BatchIterator::next(Batch& batch) {
  const std::int64_t n = data_.size();
  const std::int64_t count = std::min(batch_size_, n - position_);
  if (count <= 0 || (drop_last_ && count < batch_size_)) return false;
  std::vector<std::int64_t> idx(order_.begin() + position_, order_.begin() + position_ + count);
  const Tensor indices = Tensor::from(idx, {count});
  batch.images = index_select(data_.images, 0, indices);
  batch.labels = index_select(data_.labels, 0, indices);
  batch.index = batch_index_++;
  position_ += count;
  return true;
}

}  // namespace kiln::data
