// Buffer: the values of one computed node, row-major. They live in host memory (64-byte
// aligned), on a device (a backend's DeviceMemory), or both: a buffer computed on a device gets
// its host copy when host code first reads it, and a host buffer that feeds a device keeps the
// copy its backend uploaded, so that data crosses only when it has to. Every copy a buffer holds
// has the same values; writing through the host pointer drops the device copies.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/device_memory.hpp"
#include "graph/narrow_floats.hpp"
#include "kiln/types.hpp"

namespace kiln::detail {

class Buffer {
 public:
  // Throws kiln::Error(out_of_memory) when the allocation fails.
  Buffer(DType dtype, std::int64_t numel);
  // Wraps memory kiln does not own (Tensor::from_blob); `release` (if any) is called with it when
  // the buffer dies. Such a buffer is never written into: only kiln's own memory is reused.
  Buffer(DType dtype, std::int64_t numel, void* external, std::function<void(void*)> release);
  // Values a backend computed into device memory; the host copy is made on the first host read.
  Buffer(DType dtype, std::int64_t numel, std::shared_ptr<DeviceMemory> on_device);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  DType dtype() const { return dtype_; }
  std::int64_t numel() const { return numel_; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel_) * size_of(dtype_); }
  // The values in host memory, copied from a device first when the host has none. The writable
  // form is for the buffer's producer (or an in-place update): the device copies are dropped,
  // since they would no longer match.
  void* data() {
    if (!host_valid_.load(std::memory_order_acquire)) [[unlikely]]
      make_host_copy();
    if (has_device_copies_.load(std::memory_order_relaxed)) [[unlikely]]
      drop_device_copies();
    return data_.get();
  }
  const void* data() const {
    if (!host_valid_.load(std::memory_order_acquire)) [[unlikely]]
      make_host_copy();
    return data_.get();
  }
  // Whether the host copy is current (reading data() then copies nothing).
  bool on_host() const { return host_valid_.load(std::memory_order_acquire); }
  // How many devices hold a copy.
  std::size_t device_copies() const;
  // The copy on `device`, or null.
  std::shared_ptr<DeviceMemory> copy_on(const Device& device) const;
  // The first copy a device holds, or null.
  std::shared_ptr<DeviceMemory> first_device_copy() const;
  // Keeps a copy of the same values that a backend placed on its device.
  void add_device_copy(std::shared_ptr<DeviceMemory> memory) const;
  // For a backend that writes new values into this buffer on its device (an in-place update):
  // `memory` becomes the only copy.
  void overwrite_on_device(std::shared_ptr<DeviceMemory> memory);
  template <class T> T* as() { return static_cast<T*>(data()); }
  template <class T> const T* as() const { return static_cast<const T*>(data()); }
  // The element at `i` converted to T.
  template <class T> T get(std::int64_t i) const {
    switch (dtype_) {
      case DType::i32: return convert_value<T>(as<std::int32_t>()[i]);
      case DType::i64: return convert_value<T>(as<std::int64_t>()[i]);
      case DType::f32: return convert_value<T>(as<float>()[i]);
      case DType::f16: return convert_value<T>(f16_to_f32(as<std::uint16_t>()[i]));
      case DType::bf16: return convert_value<T>(bf16_to_f32(as<std::uint16_t>()[i]));
      case DType::boolean: return convert_value<T>(as<std::uint8_t>()[i] != 0);
      case DType::u8:
      case DType::i8:
      case DType::i16: return narrow_integer<T>(i);
      case DType::c64: return convert_value<T>(as<std::complex<float>>()[i]);
      case DType::c128: return convert_value<T>(as<std::complex<double>>()[i]);
      case DType::f64: break;
    }
    return convert_value<T>(as<double>()[i]);
  }
  // get() of a u8, i8 or i16 buffer: out of line, so that get() stays small enough to be inlined
  // into the loops that read the other types element by element.
  template <class T> [[gnu::noinline]] T narrow_integer(std::int64_t i) const {
    if (dtype_ == DType::u8) return convert_value<T>(as<std::uint8_t>()[i]);
    if (dtype_ == DType::i8) return convert_value<T>(as<std::int8_t>()[i]);
    return convert_value<T>(as<std::int16_t>()[i]);
  }
  Scalar scalar(std::int64_t i) const;
  // Writes `value` converted to the buffer's type at `i`.
  void set(std::int64_t i, const Scalar& value);
  bool borrowed() const { return borrowed_; }

 private:
  struct Free {
    std::size_t bytes;
    bool borrowed = false;
    std::function<void(void*)> release;  // of borrowed memory
    void operator()(std::byte* p) const;
  };
  void make_host_copy() const;
  void drop_device_copies();

  DType dtype_;
  std::int64_t numel_;
  bool borrowed_ = false;
  // Host memory (null until a device buffer's first host read), valid while host_valid_.
  mutable std::unique_ptr<std::byte, Free> data_;
  mutable std::atomic<bool> host_valid_{true};
  mutable std::atomic<bool> has_device_copies_{false};
  mutable std::mutex copies_mutex_;  // guards device_copies_ and making the host copy
  mutable std::vector<std::shared_ptr<DeviceMemory>> device_copies_;
};

}  // namespace kiln::detail
