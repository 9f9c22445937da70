#include "graph/buffer.hpp"

#include <new>

#include "kiln/error.hpp"

namespace kiln::detail {

namespace {
constexpr std::align_val_t kAlignment{64};
}

Buffer::Buffer(DType dtype, std::int64_t numel) : dtype_(dtype), numel_(numel) {
  const std::size_t n = bytes() == 0 ? 64 : bytes();
  std::byte* p = static_cast<std::byte*>(::operator new(n, kAlignment, std::nothrow));
  if (p == nullptr)
    throw Error(ErrorCode::out_of_memory,
                "allocation of " + std::to_string(bytes()) + " bytes failed");
  data_.reset(p);
}

void Buffer::Free::operator()(std::byte* p) const { ::operator delete(p, kAlignment); }

Scalar Buffer::scalar(std::int64_t i) const {
  switch (dtype_) {
    case DType::i32: return Scalar(as<std::int32_t>()[i]);
    case DType::i64: return Scalar(as<std::int64_t>()[i]);
    case DType::f32: return Scalar(as<float>()[i]);
    case DType::f64: break;
  }
  return Scalar(as<double>()[i]);
}

}  // namespace kiln::detail
