// The elementwise rows of the op registry with their public functions, for tests that draw
// ops from the registry instead of naming them (test_registry_ops.cpp, the random graphs of
// test_executors.cpp).
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "api/flint_rules.hpp"
#include "graph/op_registry.hpp"
#include "kiln/kiln.hpp"

namespace kiln_test {

struct Row {
  kiln::detail::Op op;
  std::string_view name;
  std::function<kiln::Tensor(const kiln::Tensor&)> unary;
  std::function<kiln::Tensor(const kiln::Tensor&, const kiln::Tensor&)> binary;
  const kiln::detail::OpInfo& info() const { return kiln::detail::op_info(op); }
};

// The public function of each unary row; a row whose function takes more (convert: the target
// type) is called with f64 there.
template <class F> std::function<kiln::Tensor(const kiln::Tensor&)> unary_call(F f) {
  return [f](const kiln::Tensor& a) { return f(a); };
}

#define KILN_TEST_NONE_(...)
#define KILN_TEST_UNARY_(name, ...)                                                     \
  rows.push_back({kiln::detail::Op::name, #name, unary_call([](const auto& a) {         \
                    if constexpr (requires { kiln::name(a); }) return kiln::name(a);    \
                    else return kiln::name(a, kiln::DType::f64);                        \
                  }), nullptr});
#define KILN_TEST_BINARY_(name, ...)                                                    \
  rows.push_back({kiln::detail::Op::name, #name, nullptr,                               \
                  [](const kiln::Tensor& a, const kiln::Tensor& b) { return kiln::name(a, b); }});

inline const std::vector<Row>& elementwise_rows() {
  static const std::vector<Row> all = [] {
    std::vector<Row> rows;
    KILN_OP_REGISTRY(KILN_TEST_NONE_, KILN_TEST_UNARY_, KILN_TEST_BINARY_)
    // The C++ API's sign and / are libtorch's (kiln::sign keeps the type, / of integers is true
    // division), composed of other rows; these two rows are reached as the C API reaches them.
    for (Row& row : rows) {
      if (row.op == kiln::detail::Op::sign)
        row.unary = [](const kiln::Tensor& a) {
          return kiln::detail::flint_unary(kiln::detail::Op::sign, a);
        };
      if (row.op == kiln::detail::Op::div)
        row.binary = [](const kiln::Tensor& a, const kiln::Tensor& b) {
          return kiln::detail::flint_binary(kiln::detail::Op::div, a, b);
        };
    }
    return rows;
  }();
  return all;
}
#undef KILN_TEST_NONE_
#undef KILN_TEST_UNARY_
#undef KILN_TEST_BINARY_

}  // namespace kiln_test
