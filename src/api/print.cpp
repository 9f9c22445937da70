// Printing tensors: shape, dtype and values, abbreviated with "..." when large.
#include <cmath>
#include <ostream>
#include <sstream>

#include "graph/node.hpp"
#include "graph/values.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace {

constexpr std::int64_t kFullPrintLimit = 1000;  // more elements than this are abbreviated
constexpr std::int64_t kEdgeItems = 3;          // shown at each end of a long dimension

std::string format_real(double v) {
  // NaN's sign bit (0/0 sets it on x86) carries no meaning: every NaN prints as "nan".
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

std::string format_value(const detail::Buffer& b, std::int64_t i) {
  const Scalar v = b.scalar(i);
  if (is_integer(v.dtype()) || is_bool(v.dtype())) return v.to_string();
  if (is_complex(v.dtype())) {  // 1+2i, 1-2i, 0+nani
    const auto z = v.as<std::complex<double>>();
    const bool minus = std::signbit(z.imag()) && !std::isnan(z.imag());
    return format_real(z.real()) + (minus ? "-" : "+") + format_real(std::fabs(z.imag())) + "i";
  }
  return format_real(v.as<double>());
}

void print_block(std::ostream& os, const detail::Buffer& b, const Shape& shape,
                 const std::vector<std::int64_t>& strides, std::size_t dim, std::int64_t offset,
                 bool abbreviate) {
  if (dim == shape.size()) {
    os << format_value(b, offset);
    return;
  }
  os << '[';
  const std::int64_t n = shape[dim];
  const bool cut = abbreviate && n > 2 * kEdgeItems;
  for (std::int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdgeItems) {
      os << "...";
      i = n - kEdgeItems - 1;
      if (i + 1 < n) os << (dim + 1 == shape.size() ? ", " : ",\n" + std::string(dim + 1, ' '));
      continue;
    }
    print_block(os, b, shape, strides, dim + 1, offset + i * strides[dim], abbreviate);
    if (i + 1 < n) os << (dim + 1 == shape.size() ? ", " : ",\n" + std::string(dim + 1, ' '));
  }
  os << ']';
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Sizes& sizes) {
  out << '[';
  for (std::size_t i = 0; i < sizes.size(); ++i) out << (i == 0 ? "" : ", ") << sizes[i];
  return out << ']';
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(empty handle)";
  t.eval();
  const detail::Node& n = *t.node();
  os << "Tensor " << dtype_name(n.dtype) << shape_to_string(n.shape) << '\n';
  print_block(os, detail::host_values(n), n.shape, detail::row_major_strides(n.shape), 0, 0,
              n.numel() > kFullPrintLimit);
  return os;
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace kiln
