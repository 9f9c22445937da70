// Data-dependent indices (gather, scatter_add, index_select, one_hot): an index must lie in
// [0, size) of the dimension it selects from, and every executor checks all of them before using
// any, so that a bad index is an invalid_select error with the same message everywhere.
// Accumulating into the selected positions (scatter_add, unwindow) wraps for integers.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "exec/semantics/integer.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

inline bool index_in_range(std::int64_t index, std::int64_t size) {
  return index >= 0 && index < size;
}

// Named as the user called the op when a composite built the node (nn::Embedding's gather).
[[noreturn]] inline void index_out_of_range(const Node& n, std::int64_t index, std::int64_t size) {
  const std::string op(n.info().name);
  const std::string called = n.called_as != nullptr && op != n.called_as
                                 ? std::string(n.called_as) + ": " + op
                                 : op;
  throw Error(ErrorCode::invalid_select, called + ": index " + std::to_string(index) +
                                             " out of range for a dimension of size " +
                                             std::to_string(size));
}

// a + b as the selected positions accumulate: wrapping for integers.
template <class T> inline T accumulate(T a, T b) {
  if constexpr (std::is_integral_v<T>) return wrap_add(a, b);
  else return a + b;
}

}  // namespace kiln::detail
