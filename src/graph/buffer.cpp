#include "graph/buffer.hpp"

#include "graph/allocator.hpp"

#include "kiln/error.hpp"

namespace kiln::detail {

Buffer::Buffer(DType dtype, std::int64_t numel)
    : dtype_(dtype), numel_(numel), data_(nullptr, Free{bytes()}) {
  auto* p = static_cast<std::byte*>(allocate_buffer(bytes()));
  if (p == nullptr)
    throw Error(ErrorCode::out_of_memory,
                "allocation of " + std::to_string(bytes()) + " bytes failed");
  data_.reset(p);
}

void Buffer::Free::operator()(std::byte* p) const { free_buffer(p, bytes); }

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
