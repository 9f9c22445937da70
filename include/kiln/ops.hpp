// The op set of kiln as free functions. Every function only builds a graph node: shape, type and
// argument errors are thrown here as kiln::Error; nothing runs until a result is read.
//
// Conventions:
// - Axes may be negative (counted from the end).
// - Binary ops broadcast normally (shapes aligned at the right) and, where that does not fit,
//   inversely (aligned at the left); a handle marked with inverse_broadcast() is aligned at the
//   left only. Dimensions of size 1 repeat as in NumPy. Nothing is copied to broadcast.
// - Types promote to the larger operand type (i32 < i64 < f32 < f64); a Scalar counts as the
//   type of its C++ literal (so `x_f32 * 2.0` is f64 and `x_f32 * 2.0f` is f32).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

// ---- creation ---------------------------------------------------------------------------------
Tensor full(Shape shape, Scalar value);
Tensor full(Shape shape, Scalar value, DType dtype);
Tensor zeros(Shape shape, DType dtype = DType::f32);
Tensor ones(Shape shape, DType dtype = DType::f32);
Tensor scalar(Scalar value);  // a 0-d tensor
// i64 tensor whose every element is its own index along `axis` (Flint's farange).
Tensor arange(Shape shape, int axis);
Tensor arange(std::int64_t n);  // [0, 1, ..., n-1]
// Uniform values in [0, 1). With a seed the values depend only on (seed, shape, dtype); without
// one, a seed is drawn from the global generator (see manual_seed).
Tensor uniform(Shape shape, std::uint64_t seed, DType dtype = DType::f64);
Tensor uniform(Shape shape, DType dtype = DType::f64);
void manual_seed(std::uint64_t seed);

// Nested initializer lists: tensor({{1.f, 2.f}, {3.f, 4.f}}) is f32 [2,2].
template <class T> Tensor tensor(std::initializer_list<T> v) {
  return Tensor::from(std::vector<T>(v));
}
template <class T> Tensor tensor(std::initializer_list<std::initializer_list<T>> v);
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v);
template <class T>
Tensor tensor(
    std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>>
        v);

// ---- binary elementwise -------------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
// Integer division truncates toward zero; an integer division by zero gives 0.
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);  // NaN propagates
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN propagates
// Comparisons in the promoted type, returning i32 0/1.
Tensor less(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
// `cond` of any type (non-zero is true); the result has the promoted type of a and b.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

enum class Comparison { less, greater, equal, less_equal, greater_equal, not_equal };
// cl-waffe2's compare: `true_value` where `a <op> b` holds, else `false_value`.
Tensor compare(const Tensor& a, const Tensor& b, Comparison op, Scalar true_value = 1,
               Scalar false_value = 0);

// Scalar forms, the scalar on either side (a 0-d constant of the scalar's type).
#define KILN_SCALAR_FORMS(fn)             \
  Tensor fn(const Tensor& a, Scalar b); \
  Tensor fn(Scalar a, const Tensor& b);
KILN_SCALAR_FORMS(add)
KILN_SCALAR_FORMS(sub)
KILN_SCALAR_FORMS(mul)
KILN_SCALAR_FORMS(div)
KILN_SCALAR_FORMS(pow)
KILN_SCALAR_FORMS(minimum)
KILN_SCALAR_FORMS(maximum)
KILN_SCALAR_FORMS(less)
KILN_SCALAR_FORMS(greater)
KILN_SCALAR_FORMS(equal)
KILN_SCALAR_FORMS(less_equal)
KILN_SCALAR_FORMS(greater_equal)
KILN_SCALAR_FORMS(not_equal)
#undef KILN_SCALAR_FORMS

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
inline Tensor operator+(Scalar a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(Scalar a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(Scalar a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(Scalar a, const Tensor& b) { return div(a, b); }

// ---- unary elementwise --------------------------------------------------------------------------
// neg, abs, square and relu keep the type. sign returns i32 (1 where a >= 0, else -1). even needs
// an integer tensor and returns i32 (1 where a is even). The other functions are float-valued:
// f32 stays f32, f64 stays f64, integer tensors give f64.
Tensor neg(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor sign(const Tensor& a);
Tensor even(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor expm1(const Tensor& a);
Tensor log(const Tensor& a);
Tensor log2(const Tensor& a);
Tensor log10(const Tensor& a);
Tensor log1p(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor tan(const Tensor& a);
Tensor asin(const Tensor& a);
Tensor acos(const Tensor& a);
Tensor atan(const Tensor& a);
Tensor sinh(const Tensor& a);
Tensor cosh(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor asinh(const Tensor& a);
Tensor acosh(const Tensor& a);
Tensor atanh(const Tensor& a);
Tensor square(const Tensor& a);
Tensor reciprocal(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor erf(const Tensor& a);
Tensor relu(const Tensor& a);
// log(1 + exp(a)), computed as max(a, 0) + log1p(exp(-|a|)) so that it neither overflows nor
// loses the small values.
Tensor softplus(const Tensor& a);
// Cast; float to integer truncates toward zero and saturates, NaN becomes 0.
Tensor convert(const Tensor& a, DType to);
inline Tensor operator-(const Tensor& a) { return neg(a); }

// ---- reductions ---------------------------------------------------------------------------------
// With no axes, all axes are reduced (a 0-d result). Reducing an empty dimension gives 0 for sum,
// 1 for prod, NaN for mean, and is an error for min, max, argmin and argmax.
// sum, prod, min and max keep the type; mean is float-valued (integers give f64).
Tensor sum(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
Tensor prod(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
Tensor min(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
Tensor max(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
Tensor mean(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
// i64 index of the first maximum/minimum along `axis` (NaN counts as the maximum and minimum).
Tensor argmax(const Tensor& a, int axis, bool keepdims = false);
Tensor argmin(const Tensor& a, int axis, bool keepdims = false);
// Index into the flattened tensor.
Tensor argmax(const Tensor& a);
Tensor argmin(const Tensor& a);

// ---- linear algebra -------------------------------------------------------------------------
// Matrix product of the last two dimensions; the leading (batch) dimensions broadcast.
// Both operands need at least 2 dimensions.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor dot(const Tensor& a, const Tensor& b);  // two vectors of equal length -> 0-d

// ---- shape ops ----------------------------------------------------------------------------------
// All of these are views (index maps over their input, no copy) except concat and contiguous.
Tensor reshape(const Tensor& a, Shape shape);  // one entry may be -1 (inferred)
Tensor flatten(const Tensor& a);               // to 1-D
// Merges dimension `axis` into dimension `axis - 1` (Flint's fflatten_dimension; axis >= 1).
Tensor flatten(const Tensor& a, int axis);
// Result dimension i is input dimension perm[i].
Tensor permute(const Tensor& a, std::vector<int> perm);
Tensor transpose(const Tensor& a);  // reverses all dimensions
Tensor transpose(const Tensor& a, int axis_a, int axis_b);
// Per dimension start (inclusive), stop (exclusive) and step. Negative start/stop count from the
// end; out-of-range values are clamped as in Python; a negative step walks backwards from start
// (start > stop); a step of 0 is an invalid_select error. Crossed bounds give an empty dimension.
Tensor slice(const Tensor& a, std::vector<std::int64_t> start, std::vector<std::int64_t> stop);
Tensor slice(const Tensor& a, std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
             std::vector<std::int64_t> step);
// The same along a single axis.
Tensor slice_axis(const Tensor& a, int axis, std::int64_t start, std::int64_t stop,
                  std::int64_t step = 1);
// Zeros of `shape` with `a` embedded at `insert_at` (Flint's fextend).
Tensor extend(const Tensor& a, Shape shape, std::vector<std::int64_t> insert_at);
// As extend, with |step[i]| - 1 zeros placed between neighbours of dimension i; a negative step
// also reverses that dimension (Flint's fextend_step).
Tensor extend(const Tensor& a, Shape shape, std::vector<std::int64_t> insert_at,
              std::vector<std::int64_t> step);
// `before[i]` and `after[i]` elements of `value` around dimension i (NumPy's pad).
Tensor pad(const Tensor& a, std::vector<std::int64_t> before, std::vector<std::int64_t> after,
           Scalar value = 0);
// Joins tensors along `axis`; the other dimensions must agree; the type is the promoted one.
Tensor concat(const std::vector<Tensor>& parts, int axis);
Tensor concat(const Tensor& a, const Tensor& b, int axis);
// Inserts a new dimension of `size` before dimension `axis` (0..rank) by repetition (fexpand).
Tensor expand(const Tensor& a, int axis, std::int64_t size);
// Broadcasts to `shape` normally (aligned at the right) or, with inverse, at the left.
Tensor broadcast_to(const Tensor& a, Shape shape, bool inverse = false);
// Repeats the whole tensor reps[i] times along dimension i: [[0,1],[2,3]] with {2,3} -> [4,6].
Tensor repeat(const Tensor& a, std::vector<std::int64_t> reps);
Tensor squeeze(const Tensor& a);            // drops all dimensions of size 1
Tensor squeeze(const Tensor& a, int axis);  // that dimension must have size 1
Tensor unsqueeze(const Tensor& a, int axis);  // axis in [-rank-1, rank]
// A materialised copy in row-major order (reads through all views once).
Tensor contiguous(const Tensor& a);

}  // namespace kiln

#include "kiln/detail/nested_init.hpp"
