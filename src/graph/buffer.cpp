#include "graph/buffer.hpp"

#include "graph/allocator.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

// `numel`, refused when its bytes exceed what an address can reach: 2^62 f32 values make 2^64
// bytes, which would wrap around to 0 and be allocated.
std::int64_t addressable(std::int64_t numel, DType dtype) {
  constexpr auto kMostBytes = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (numel < 0 || static_cast<std::uint64_t>(numel) > kMostBytes / size_of(dtype))
    throw Error(ErrorCode::out_of_memory, "allocation of " + std::to_string(numel) + " " +
                                              dtype_name(dtype) + " values exceeds any memory");
  return numel;
}

}  // namespace

Buffer::Buffer(DType dtype, std::int64_t numel)
    : dtype_(dtype), numel_(addressable(numel, dtype)), data_(nullptr, Free{bytes(), false, {}}) {
  auto* p = static_cast<std::byte*>(allocate_buffer(bytes()));
  if (p == nullptr)
    throw Error(ErrorCode::out_of_memory,
                "allocation of " + std::to_string(bytes()) + " bytes failed");
  data_.reset(p);
}

Buffer::Buffer(DType dtype, std::int64_t numel, void* external,
               std::function<void(void*)> release)
    : dtype_(dtype),
      numel_(addressable(numel, dtype)),
      borrowed_(true),
      data_(static_cast<std::byte*>(external), Free{bytes(), true, std::move(release)}) {}

Buffer::Buffer(DType dtype, std::int64_t numel, std::shared_ptr<DeviceMemory> on_device)
    : dtype_(dtype), numel_(addressable(numel, dtype)), data_(nullptr, Free{bytes(), false, {}}),
      host_valid_(false), has_device_copies_(true), device_copies_{std::move(on_device)} {}

void Buffer::make_host_copy() const {
  std::lock_guard lock(copies_mutex_);
  if (host_valid_.load(std::memory_order_relaxed)) return;  // another reader made it meanwhile
  if (device_copies_.empty())
    throw Error(ErrorCode::internal_error, "a buffer of " + std::to_string(numel_) + " " +
                                               dtype_name(dtype_) + " values holds no copy");
  if (!data_) {
    auto* p = static_cast<std::byte*>(allocate_buffer(bytes()));
    if (p == nullptr)
      throw Error(ErrorCode::out_of_memory,
                  "allocation of " + std::to_string(bytes()) + " bytes for a host copy failed");
    data_.reset(p);
  }
  device_copies_.front()->download(data_.get(), bytes());
  host_valid_.store(true, std::memory_order_release);
}

void Buffer::drop_device_copies() {
  std::lock_guard lock(copies_mutex_);
  device_copies_.clear();
  has_device_copies_.store(false, std::memory_order_relaxed);
}

std::size_t Buffer::device_copies() const {
  std::lock_guard lock(copies_mutex_);
  return device_copies_.size();
}

std::shared_ptr<DeviceMemory> Buffer::copy_on(const Device& device) const {
  if (!has_device_copies_.load(std::memory_order_relaxed)) return nullptr;
  std::lock_guard lock(copies_mutex_);
  for (const auto& copy : device_copies_)
    if (&copy->device() == &device) return copy;
  return nullptr;
}

std::shared_ptr<DeviceMemory> Buffer::first_device_copy() const {
  if (!has_device_copies_.load(std::memory_order_relaxed)) return nullptr;
  std::lock_guard lock(copies_mutex_);
  return device_copies_.empty() ? nullptr : device_copies_.front();
}

void Buffer::add_device_copy(std::shared_ptr<DeviceMemory> memory) const {
  std::lock_guard lock(copies_mutex_);
  device_copies_.push_back(std::move(memory));
  has_device_copies_.store(true, std::memory_order_relaxed);
}

void Buffer::overwrite_on_device(std::shared_ptr<DeviceMemory> memory) {
  std::lock_guard lock(copies_mutex_);
  device_copies_.assign(1, std::move(memory));
  has_device_copies_.store(true, std::memory_order_relaxed);
  host_valid_.store(false, std::memory_order_release);
}

void Buffer::Free::operator()(std::byte* p) const {
  if (!borrowed) {
    free_buffer(p, bytes);
  } else if (release) {
    release(p);
  }
}

void Buffer::set(std::int64_t i, const Scalar& value) {
  switch (dtype_) {
    case DType::i32: as<std::int32_t>()[i] = value.as<std::int32_t>(); return;
    case DType::i64: as<std::int64_t>()[i] = value.as<std::int64_t>(); return;
    case DType::f32: as<float>()[i] = value.as<float>(); return;
    case DType::f64: as<double>()[i] = value.as<double>(); return;
    case DType::f16:
    case DType::bf16: as<std::uint16_t>()[i] = narrow_bits(dtype_, value.as<double>()); return;
    case DType::boolean: as<std::uint8_t>()[i] = value.as<bool>() ? 1 : 0; return;
    case DType::u8: as<std::uint8_t>()[i] = value.as<std::uint8_t>(); return;
    case DType::i8: as<std::int8_t>()[i] = value.as<std::int8_t>(); return;
    case DType::i16: as<std::int16_t>()[i] = value.as<std::int16_t>(); return;
    case DType::c64: as<std::complex<float>>()[i] = value.as<std::complex<float>>(); return;
    case DType::c128: as<std::complex<double>>()[i] = value.as<std::complex<double>>(); return;
  }
}

Scalar Buffer::scalar(std::int64_t i) const {
  switch (dtype_) {
    case DType::i32: return Scalar(as<std::int32_t>()[i]);
    case DType::i64: return Scalar(as<std::int64_t>()[i]);
    case DType::f32: return Scalar(as<float>()[i]);
    case DType::f16: return Scalar(f16_to_f32(as<std::uint16_t>()[i])).cast(DType::f16);
    case DType::bf16: return Scalar(bf16_to_f32(as<std::uint16_t>()[i])).cast(DType::bf16);
    case DType::boolean: return Scalar(as<std::uint8_t>()[i] != 0);
    case DType::u8: return Scalar(std::int32_t{as<std::uint8_t>()[i]}).cast(DType::u8);
    case DType::i8: return Scalar(std::int32_t{as<std::int8_t>()[i]}).cast(DType::i8);
    case DType::i16: return Scalar(std::int32_t{as<std::int16_t>()[i]}).cast(DType::i16);
    case DType::c64: return Scalar(as<std::complex<float>>()[i]);
    case DType::c128: return Scalar(as<std::complex<double>>()[i]);
    case DType::f64: break;
  }
  return Scalar(as<double>()[i]);
}

}  // namespace kiln::detail
