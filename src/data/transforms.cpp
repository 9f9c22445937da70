// Image transforms for batches (kiln/data.hpp).
#include <cmath>

#include "kiln/composite_ops.hpp"
#include "kiln/data.hpp"
#include "kiln/error.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"

namespace kiln::data {

namespace {

void require_images(const Tensor& images, const char* op) {
  if (!images.defined() || images.rank() != 4 || !is_float(images.dtype()))
    throw Error(ErrorCode::illegal_dimension,
                std::string("data::") + op + ": needs float images [N, C, H, W], got " +
                    (images.defined() ? std::string(dtype_name(images.dtype())) + " " +
                                            shape_to_string(images.shape())
                                      : std::string("an empty tensor")));
}

// splitmix64: a well-mixed 64-bit value for (seed, image, draw), independent per image.
std::uint64_t mix(std::uint64_t seed, std::uint64_t image, std::uint64_t draw) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (image * 4 + draw + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

std::uint64_t seed_or_next(std::uint64_t seed) { return seed != 0 ? seed : next_seed(); }

}  // namespace

Tensor normalize(const Tensor& images, const std::vector<double>& mean,
                 const std::vector<double>& std) {
  require_images(images, "normalize");
  const auto channels = static_cast<std::size_t>(images.size(1));
  if (mean.size() != channels || std.size() != channels)
    throw Error(ErrorCode::incompatible_shapes,
                "data::normalize: images " + shape_to_string(images.shape()) + " have " +
                    std::to_string(channels) + " channels, mean and std " +
                    std::to_string(mean.size()) + " and " + std::to_string(std.size()));
  for (double s : std)
    if (!(s > 0)) throw Error(ErrorCode::invalid_select, "data::normalize: std must be > 0");
  const Shape per_channel{1, static_cast<std::int64_t>(channels), 1, 1};
  const Tensor m = convert(Tensor::from(mean, per_channel), images.dtype());
  const Tensor s = convert(Tensor::from(std, per_channel), images.dtype());
  return (images - m) / s;
}

Tensor random_horizontal_flip(const Tensor& images, double p, std::uint64_t seed) {
  require_images(images, "random_horizontal_flip");
  if (!(p >= 0 && p <= 1))
    throw Error(ErrorCode::invalid_select, "data::random_horizontal_flip: p must be in [0, 1]");
  seed = seed_or_next(seed);
  const std::int64_t n = images.size(0);
  std::vector<std::int32_t> flipped(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    flipped[static_cast<std::size_t>(i)] = unit(mix(seed, static_cast<std::uint64_t>(i), 0)) < p;
  return where(Tensor::from(flipped, {n, 1, 1, 1}), flip(images, {3}), images);
}

Tensor random_crop(const Tensor& images, std::int64_t height, std::int64_t width,
                   std::int64_t padding, std::uint64_t seed) {
  require_images(images, "random_crop");
  const std::int64_t h = images.size(2) + 2 * padding, w = images.size(3) + 2 * padding;
  if (height <= 0 || width <= 0 || padding < 0 || height > h || width > w)
    throw Error(ErrorCode::illegal_dimension,
                "data::random_crop: a " + std::to_string(height) + " x " + std::to_string(width) +
                    " window of images " + shape_to_string(images.shape()) + " padded by " +
                    std::to_string(padding));
  seed = seed_or_next(seed);
  const Tensor padded =
      padding > 0 ? pad(images, {0, 0, padding, padding}, {0, 0, padding, padding}, 0.0) : images;
  const std::int64_t n = images.size(0), c = images.size(1);
  if (n == 0) return slice(padded, {0, 0, 0, 0}, {0, c, height, width});
  std::vector<Tensor> windows;
  windows.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto y = static_cast<std::int64_t>(mix(seed, static_cast<std::uint64_t>(i), 1) %
                                             static_cast<std::uint64_t>(h - height + 1));
    const auto x = static_cast<std::int64_t>(mix(seed, static_cast<std::uint64_t>(i), 2) %
                                             static_cast<std::uint64_t>(w - width + 1));
    windows.push_back(slice(padded, {i, 0, y, x}, {i + 1, c, y + height, x + width}));
  }
  return n == 1 ? windows[0] : concat(windows, 0);
}

}  // namespace kiln::data
