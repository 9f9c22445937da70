// Builds tensors from nested initializer lists, checking that the nesting is rectangular.
#pragma once

#include <initializer_list>
#include <type_traits>
#include <vector>

namespace kiln {
namespace detail {

void check_rectangular(bool same_size, const char* what);

template <class T> void flatten_into(std::initializer_list<T> v, Shape& shape, std::size_t depth,
                                     std::vector<T>& out) {
  if (shape.size() <= depth) shape.push_back(static_cast<std::int64_t>(v.size()));
  check_rectangular(shape[depth] == static_cast<std::int64_t>(v.size()), "tensor");
  out.insert(out.end(), v.begin(), v.end());
}
template <class L, class T>
void flatten_into(std::initializer_list<L> v, Shape& shape, std::size_t depth,
                  std::vector<T>& out) {
  if (shape.size() <= depth) shape.push_back(static_cast<std::int64_t>(v.size()));
  check_rectangular(shape[depth] == static_cast<std::int64_t>(v.size()), "tensor");
  for (const auto& inner : v) flatten_into(inner, shape, depth + 1, out);
}
template <class T, class L> Tensor from_nested(std::initializer_list<L> v) {
  Shape shape;
  std::vector<T> values;
  flatten_into(v, shape, 0, values);
  if constexpr (std::is_same_v<T, double>)
    return in_default_dtype(values, std::move(shape));  // libtorch's rule (see tensor())
  else
    return Tensor::from(values, shape);
}
template <class T, class L> Tensor from_nested(std::initializer_list<L> v, DType dtype) {
  Shape shape;
  std::vector<T> values;
  flatten_into(v, shape, 0, values);
  return converted_leaf(Tensor::from(values, shape), dtype);
}

}  // namespace detail

template <class T> Tensor tensor(std::initializer_list<std::initializer_list<T>> v) {
  return detail::from_nested<T>(v);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v) {
  return detail::from_nested<T>(v);
}
template <class T>
Tensor tensor(
    std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>>
        v) {
  return detail::from_nested<T>(v);
}

template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> v, DType dtype) {
  return detail::from_nested<T>(v, dtype);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v,
              DType dtype) {
  return detail::from_nested<T>(v, dtype);
}
template <class T>
Tensor tensor(
    std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>>
        v,
    DType dtype) {
  return detail::from_nested<T>(v, dtype);
}

}  // namespace kiln
