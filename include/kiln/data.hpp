/// @file
/// kiln::data: reading IDX files (the format of MNIST and Fashion-MNIST, plain or gzipped) and
/// iterating over a data set in shuffled batches; image files (kiln/images.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/data_loader.hpp"
#include "kiln/images.hpp"
#include "kiln/tensor.hpp"

namespace kiln::data {

/// An IDX file: magic `0x00 0x00 <type> <rank>`, rank big-endian u32 dimensions, then the values,
/// big-endian, row-major. Types: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64.
struct IdxArray {
  std::uint8_t type = 0x08;
  Shape dims;
  std::vector<std::uint8_t> data;  ///< the values in host byte order, row-major

  /// The product of dims; throws kiln::Error(illegal_dimension) if a dimension is negative or
  /// the product overflows 64 bits (read_idx never returns such dims).
  std::int64_t numel() const;
  std::size_t element_size() const;  ///< bytes per value
  double value(std::int64_t i) const;  ///< value i (every IDX type converts exactly)
};

/// Reads a plain or gzipped IDX file (gzip is recognised by its content, not the name). A file
/// that is missing, a directory, unreadable, truncated, has a bad header or trailing bytes, or
/// announces more than 2^36 bytes of values throws kiln::Error(io_error) with a message naming
/// the file. The header's sizes are checked against the file before memory is allocated for them
/// (gzipped data are read in pieces, so memory grows only with the data actually there).
IdxArray read_idx(const std::string& path);

/// Images [N, H, W] (u8) as f32 [N, 1, H, W] scaled to [0, 1].
Tensor read_idx_images(const std::string& path);
/// Labels [N] (u8) as i64 [N].
Tensor read_idx_labels(const std::string& path);

/// NumPy's .npy files (numpy.save / numpy.load). Reading takes format versions 1 to 3, C and
/// Fortran order, either byte order, and the dtypes f2, f4, f8, i1, u1, i2, i4, i8, b1 (as
/// kiln's f16, f32, f64, i8, u8, i16, i32, i64, bool), and u2 (as i32) and u4 (as i64), values
/// converted exactly; u8 as i64 when every value fits. Anything else (object arrays, structured dtypes, complex) is
/// wrong_type; a damaged file (bad magic, header, or a size that does not match the shape) is
/// io_error; both name the file. save_npy writes version 1.0, C order, little-endian (a bf16
/// tensor, for which NumPy has no dtype, is wrong_type).
Tensor load_npy(const std::string& path);
Tensor parse_npy(std::span<const std::byte> bytes, const std::string& source = "npy data");
void save_npy(const std::string& path, const Tensor& t);
std::vector<std::byte> serialize_npy(const Tensor& t);

/// NumPy's .npz archives (numpy.savez, numpy.savez_compressed): a ZIP archive of .npy files, one
/// per array, named "<key>.npy". Loading gives the arrays in the archive's order, read as
/// load_npy reads them; stored and deflated entries and ZIP64 are read, every size and CRC-32 is
/// checked, and entries that overlap (a zip bomb) are refused. An entry that is not an .npy file,
/// two of the same key, or a damaged archive is io_error naming the file and the entry.
std::vector<std::pair<std::string, Tensor>> load_npz(const std::string& path);
std::vector<std::pair<std::string, Tensor>> parse_npz(std::span<const std::byte> bytes,
                                                      const std::string& source = "npz data");
/// Writes the arrays (keys distinct, not empty) as numpy.savez does, or deflated as
/// numpy.savez_compressed does when `compressed`; the file is replaced atomically.
void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays,
              bool compressed = false);

/// Numeric CSV files (RFC 4180: fields may be quoted, "" is a quote inside quotes; `\n` or `\r\n`
/// line ends; blank lines are skipped).
struct CsvOptions {
  char delimiter = ',';
  /// Whether the first row names the columns; when unset, it does if any of its fields is not a
  /// number.
  enum class Header { automatic, present, absent } header = Header::automatic;
  DType dtype = DType::f32;  ///< of the values: f32, f64, i32 or i64
};

struct CsvTable {
  std::vector<std::string> columns;  ///< the header's names, or "0", "1", ... without one
  Tensor values;                     ///< [rows, columns]
};

/// A field that is not a number of `dtype` (an empty field is NaN for floats, an error for
/// integers), or a row with another number of fields, is io_error naming the file, the line and
/// the column.
CsvTable load_csv(const std::string& path, const CsvOptions& options = {});
CsvTable parse_csv(std::string_view text, const CsvOptions& options = {},
                   const std::string& source = "CSV text");

/// Transforms of image batches [N, C, H, W] (any float dtype), built lazily into the graph that
/// reads them, so they fuse with the training step. Random choices are per image, drawn from
/// `seed` (0: kiln's generator, see kiln::manual_seed), the same for the same seed.
/// (x - mean[c]) / std[c] per channel; mean and std have C entries, std > 0.
Tensor normalize(const Tensor& images, const std::vector<double>& mean,
                 const std::vector<double>& std);
/// Each image mirrored left to right with probability p in [0, 1].
Tensor random_horizontal_flip(const Tensor& images, double p = 0.5, std::uint64_t seed = 0);
/// Each image padded by `padding` zeros on every side, then a height x width window of it at a
/// random place (torchvision's RandomCrop with padding).
Tensor random_crop(const Tensor& images, std::int64_t height, std::int64_t width,
                   std::int64_t padding = 0, std::uint64_t seed = 0);

struct Dataset {
  Tensor images;  ///< f32 [N, 1, H, W]
  Tensor labels;  ///< i64 [N]
  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

/// Debian's dataset-fashion-mnist package installs the files here.
inline constexpr const char* fashion_mnist_default_dir = "/usr/share/datasets/fashion-mnist";

/// Reads "<dir>/train-images-idx3-ubyte" and "<dir>/train-labels-idx1-ubyte" (split "train") or
/// the "t10k-" files (split "test"), each with or without ".gz". A missing file is an io_error
/// naming the paths tried; images and labels of different counts are incompatible_shapes.
Dataset load_mnist_split(const std::string& dir, const std::string& split);

/// The first `count` examples (all of them when count < 0 or count >= size).
Dataset take(const Dataset& d, std::int64_t count);

struct Batch {
  Tensor images;  ///< [B, ...]
  Tensor labels;  ///< [B]
  std::int64_t index = 0;  ///< batch number within the epoch
};

/// Batches over a data set. With shuffling, epoch e visits the examples in an order that depends
/// only on (seed, e). The last batch is smaller when the size is not a multiple of the batch size,
/// unless drop_last. Batches are lazy gathers (index_select) from the data set's tensors.
class BatchIterator {
 public:
  BatchIterator(Dataset data, std::int64_t batch_size, bool shuffle = true,
                std::uint64_t seed = 0, bool drop_last = false);

  /// Starts epoch `epoch` (0-based): reshuffles and rewinds.
  void start_epoch(std::int64_t epoch);
  /// The next batch of the current epoch; false when the epoch is done.
  bool next(Batch& batch);
  std::int64_t num_batches() const;
  std::int64_t batch_size() const { return batch_size_; }
  const Dataset& dataset() const { return data_; }
  const std::vector<std::int64_t>& order() const { return order_; }

 private:
  Dataset data_;
  std::int64_t batch_size_;
  bool shuffle_;
  std::uint64_t seed_;
  bool drop_last_;
  std::vector<std::int64_t> order_;
  std::int64_t position_ = 0, batch_index_ = 0;
};

}  // namespace kiln::data
