/// @file
/// The index vocabulary of Tensor::index, as libtorch spells it:
///
///   using namespace kiln::indexing;
///   x.index({0, Slice(1, None, 2), None, Ellipsis, idx})
///
/// Every index gives a view except an index tensor, which gathers (index_select).
#pragma once

#include <cstdint>
#include <limits>
#include <variant>

#include "kiln/tensor.hpp"

namespace kiln {

namespace indexing {

/// As an index: a new dimension of size 1. As a Slice bound: "from the start" / "to the end".
struct NoneIndex {};
inline constexpr NoneIndex None{};
/// As many whole dimensions as the other indices leave.
struct EllipsisIndex {};
inline constexpr EllipsisIndex Ellipsis{};

/// One bound of a Slice: a position or None.
class SliceBound {
 public:
  constexpr SliceBound(NoneIndex = None) {}
  constexpr SliceBound(std::int64_t v) : value_(v), given_(true) {}
  constexpr SliceBound(int v) : value_(v), given_(true) {}
  constexpr bool given() const { return given_; }
  constexpr std::int64_t value() const { return value_; }

 private:
  std::int64_t value_ = 0;
  bool given_ = false;
};

/// Python's start:stop:step: negative positions count from the end, out-of-range bounds are
/// clamped, a negative step walks backwards, and a step of 0 is an invalid_select error.
class Slice {
 public:
  constexpr Slice(SliceBound start = None, SliceBound stop = None, SliceBound step = None)
      : start_(start), stop_(stop), step_(step) {}
  constexpr SliceBound start() const { return start_; }
  constexpr SliceBound stop() const { return stop_; }
  constexpr std::int64_t step() const { return step_.given() ? step_.value() : 1; }

 private:
  SliceBound start_, stop_, step_;
};
/// The whole dimension (Python's `:`).
inline constexpr Slice All{};

}  // namespace indexing

/// One entry of Tensor::index.
class TensorIndex {
 public:
  TensorIndex(std::int64_t i) : v_(i) {}
  TensorIndex(int i) : v_(static_cast<std::int64_t>(i)) {}
  TensorIndex(indexing::Slice s) : v_(s) {}
  TensorIndex(indexing::NoneIndex n) : v_(n) {}
  TensorIndex(indexing::EllipsisIndex e) : v_(e) {}
  /// An integer tensor of any shape: the dimension is replaced by the index tensor's dimensions.
  /// A bool mask: the dimensions it covers (its shape must equal theirs) are replaced by one, the
  /// positions where it is true in row-major order (the mask is evaluated then, as by nonzero).
  TensorIndex(Tensor indices) : v_(std::move(indices)) {}

  using Variant = std::variant<std::int64_t, indexing::Slice, indexing::NoneIndex,
                               indexing::EllipsisIndex, Tensor>;
  const Variant& value() const { return v_; }

 private:
  Variant v_;
};

}  // namespace kiln
