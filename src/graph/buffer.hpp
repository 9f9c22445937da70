// Buffer: the values of one computed node, row-major, 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "kiln/types.hpp"

namespace kiln::detail {

class Buffer {
 public:
  // Throws kiln::Error(out_of_memory) when the allocation fails.
  Buffer(DType dtype, std::int64_t numel);
  // Wraps memory kiln does not own (Tensor::from_blob); `release` (if any) is called with it when
  // the buffer dies. Such a buffer is never written into: only kiln's own memory is reused.
  Buffer(DType dtype, std::int64_t numel, void* external, std::function<void(void*)> release);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  DType dtype() const { return dtype_; }
  std::int64_t numel() const { return numel_; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel_) * size_of(dtype_); }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <class T> T* as() { return static_cast<T*>(data()); }
  template <class T> const T* as() const { return static_cast<const T*>(data()); }
  // The element at `i` converted to T.
  template <class T> T get(std::int64_t i) const {
    switch (dtype_) {
      case DType::i32: return convert_value<T>(as<std::int32_t>()[i]);
      case DType::i64: return convert_value<T>(as<std::int64_t>()[i]);
      case DType::f32: return convert_value<T>(as<float>()[i]);
      case DType::f64: break;
    }
    return convert_value<T>(as<double>()[i]);
  }
  Scalar scalar(std::int64_t i) const;
  bool borrowed() const { return borrowed_; }

 private:
  struct Free {
    std::size_t bytes;
    bool borrowed = false;
    std::function<void(void*)> release;  // of borrowed memory
    void operator()(std::byte* p) const;
  };
  DType dtype_;
  std::int64_t numel_;
  bool borrowed_ = false;
  std::unique_ptr<std::byte, Free> data_;
};

}  // namespace kiln::detail
