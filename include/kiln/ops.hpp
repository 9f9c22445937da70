/// @file
/// The op set of kiln as free functions. Every function only builds a graph node: shape, type and
/// argument errors are thrown here as kiln::Error; nothing runs until a result is read.
///
/// Conventions:
/// - Axes may be negative (counted from the end).
/// - Binary ops broadcast as NumPy and libtorch do: shapes aligned at the right, dimensions of
///   size 1 and missing leading dimensions repeat; shapes that do not fit are an
///   incompatible_shapes error. An operand marked with inverse_broadcast() is aligned at the left
///   instead (Flint's inverse broadcasting, e.g. [2,3] + [2] adds along dimension 0). Nothing is
///   copied to broadcast. (The C API keeps Flint's rule: the left where the right does not fit.)
/// - Tensor types promote to the larger operand type (i32 < i64 < f32 < f64). A Scalar is weak:
///   it takes the tensor's type (`x_f32 * 2.0` is f32, `x_i32 + 1L` is i32), except that a floating
///   scalar with an integer tensor gives default_dtype() (`x_i32 * 0.5` is f32).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

/// ---- creation ---------------------------------------------------------------------------------
/// Without a dtype, a floating value gives default_dtype() and an integer value its own type.
Tensor full(Shape shape, Scalar value);
Tensor full(Shape shape, Scalar value, DType dtype);
Tensor zeros(Shape shape);  ///< default_dtype()
Tensor zeros(Shape shape, DType dtype);
Tensor ones(Shape shape);  ///< default_dtype()
Tensor ones(Shape shape, DType dtype);
/// A 0-d tensor: a floating value gives default_dtype(), an integer value its own type.
Tensor scalar(Scalar value);
Tensor scalar(Scalar value, DType dtype);
/// i64 tensor whose every element is its own index along `axis` (Flint's farange).
Tensor arange(Shape shape, int axis);
Tensor arange(std::int64_t n);  ///< [0, 1, ..., n-1]
/// Uniform values in [0, 1). With a seed the values depend only on (seed, shape, dtype); without
/// one, a seed is drawn from the global generator (see manual_seed).
/// Without a dtype, default_dtype().
Tensor uniform(Shape shape, std::uint64_t seed);
Tensor uniform(Shape shape, std::uint64_t seed, DType dtype);
Tensor uniform(Shape shape);
Tensor uniform(Shape shape, DType dtype);
/// A symbolic input (Theano's variable without owner): graphs can be built over it, with shape and
/// type errors at build time, and printed or inspected; evaluating a graph that reads it is an
/// error naming it (invalid_select). Its nodes are never evaluated as they are built.
Tensor placeholder(Shape shape, DType dtype = DType::f32, std::string name = {});
/// A leaf holding the values of `values` (evaluated now), marked as a constant in the graph and in
/// its prints: values the graph's optimisation may take as known.
Tensor constant(const Tensor& values);
/// Of the shape of `like`, in its dtype unless one is named (libtorch's *_like).
Tensor zeros_like(const Tensor& like);
Tensor zeros_like(const Tensor& like, DType dtype);
Tensor ones_like(const Tensor& like);
Tensor ones_like(const Tensor& like, DType dtype);
Tensor full_like(const Tensor& like, Scalar value);  ///< the value converted to like's dtype
Tensor full_like(const Tensor& like, Scalar value, DType dtype);
/// Uniform values in [0, 1) (libtorch's rand_like); `like` must be a float tensor.
Tensor uniform_like(const Tensor& like);
/// Resets the one global generator that every unseeded random op, kiln::nn's initialisations and
/// its dropout masks draw their seeds from (nn::manual_seed is the same function).
void manual_seed(std::uint64_t seed);
/// The generator's whole state (libtorch's get_rng_state): manual_seed(random_state()) later
/// makes the same draws again. nn::save_checkpoint keeps it.
std::uint64_t random_state();
/// The next seed of that generator (never 0).
std::uint64_t next_seed();

namespace detail {
// A leaf of doubles in default_dtype(), and a leaf converted to `dtype` (no graph behind either).
Tensor in_default_dtype(const std::vector<double>& values, Shape shape);
Tensor converted_leaf(const Tensor& t, DType dtype);
}  // namespace detail

/// Nested initializer lists: tensor({{1.f, 2.f}, {3.f, 4.f}}) is f32 [2,2]. As in libtorch, a list
/// of doubles gives default_dtype() (f32 unless changed): tensor({1.0, 2.0}) is f32; other element
/// types are the tensor's (float -> f32, int -> i32, bool -> bool), as with Tensor::from. With a
/// dtype, the values are converted to it: tensor({1.0, 2.0}, DType::f64).
template <class T> Tensor tensor(std::initializer_list<T> v) {
  if constexpr (std::is_same_v<T, double>)
    return detail::in_default_dtype(std::vector<double>(v), {static_cast<std::int64_t>(v.size())});
  else
    return Tensor::from(std::vector<T>(v));
}
template <class T> Tensor tensor(std::initializer_list<T> v, DType dtype) {
  return detail::converted_leaf(Tensor::from(std::vector<T>(v)), dtype);
}
template <class T> Tensor tensor(std::initializer_list<std::initializer_list<T>> v);
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v);
template <class T>
Tensor tensor(
    std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>>
        v);

/// ---- binary elementwise -------------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
/// True division, as libtorch's: integer and bool operands are divided in default_dtype()
/// (7 / 2 is 3.5). With a rounding mode, libtorch's div(a, b, rounding_mode): "trunc" rounds the
/// quotient toward zero, "floor" down (floor_divide, Python's //); integers then stay integers
/// (an integer division by zero gives 0). The C API's fdiv keeps Flint's truncating division.
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode);
Tensor div(const Tensor& a, Scalar b, std::string_view rounding_mode);
Tensor div(Scalar a, const Tensor& b, std::string_view rounding_mode);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, Scalar b);
Tensor floor_divide(Scalar a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
/// libtorch's atan2 (float-valued, like the unary functions), fmod (the remainder of division
/// truncated toward zero: the dividend's sign) and remainder (of floor division: the divisor's
/// sign, Python's %). Integer fmod and remainder by 0 give 0.
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);  ///< NaN propagates
Tensor maximum(const Tensor& a, const Tensor& b);  ///< NaN propagates
/// Comparisons in the promoted type, returning bool (as libtorch's; the C API's give F_INT32 0/1).
Tensor less(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
/// The values of `value` (broadcast and promoted with `target`, like every binary op), which
/// evaluation may write into the memory of `target` instead of new memory: an in-place update
/// that keeps value semantics. It does so only where no one can see the difference: no handle
/// refers to `target`, no node outside the evaluation reads it, it is not requested, and its
/// memory is its own (not from_blob) and of the result's type and size. Otherwise the result gets
/// new memory. `w = assign(w, w - lr * g)` updates a weight in place (the old handle is given up);
/// optimisers update parameters and their state this way. The target gives no gradient. A graph
/// kept for gradients that needs an overwritten target again fails (illegal_derive) rather than
/// read the new values.
Tensor assign(const Tensor& target, const Tensor& value);
/// `cond` of any type (non-zero is true); the result has the promoted type of a and b. A Scalar
/// is weak (it takes the tensor's type).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Scalar b);
Tensor where(const Tensor& cond, Scalar a, const Tensor& b);

enum class Comparison { less, greater, equal, less_equal, greater_equal, not_equal };
/// cl-waffe2's compare: `true_value` where `a <op> b` holds, else `false_value`, in the promoted
/// type of the two values (the values are the result, so each keeps its literal's type).
Tensor compare(const Tensor& a, const Tensor& b, Comparison op, Scalar true_value = 1,
               Scalar false_value = 0);

/// Scalar forms, the scalar on either side (a 0-d constant of the scalar's type).
#define KILN_SCALAR_FORMS(fn)             \
  Tensor fn(const Tensor& a, Scalar b); \
  Tensor fn(Scalar a, const Tensor& b);
KILN_SCALAR_FORMS(add)
KILN_SCALAR_FORMS(sub)
KILN_SCALAR_FORMS(mul)
KILN_SCALAR_FORMS(div)
KILN_SCALAR_FORMS(pow)
KILN_SCALAR_FORMS(atan2)
KILN_SCALAR_FORMS(fmod)
KILN_SCALAR_FORMS(remainder)
KILN_SCALAR_FORMS(minimum)
KILN_SCALAR_FORMS(maximum)
KILN_SCALAR_FORMS(less)
KILN_SCALAR_FORMS(greater)
KILN_SCALAR_FORMS(equal)
KILN_SCALAR_FORMS(less_equal)
KILN_SCALAR_FORMS(greater_equal)
KILN_SCALAR_FORMS(not_equal)
KILN_SCALAR_FORMS(assign)
#undef KILN_SCALAR_FORMS

/// Comparison operators build comparison nodes (bool), as libtorch's do; they do not compare
/// handles (see Tensor::same_node for that).
#define KILN_COMPARISON_OPERATOR(op, fn)                                           \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  inline Tensor operator op(const Tensor& a, Scalar b) { return fn(a, b); }        \
  inline Tensor operator op(Scalar a, const Tensor& b) { return fn(a, b); }
KILN_COMPARISON_OPERATOR(<, less)
KILN_COMPARISON_OPERATOR(<=, less_equal)
KILN_COMPARISON_OPERATOR(>, greater)
KILN_COMPARISON_OPERATOR(>=, greater_equal)
KILN_COMPARISON_OPERATOR(==, equal)
KILN_COMPARISON_OPERATOR(!=, not_equal)
#undef KILN_COMPARISON_OPERATOR

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

/// ---- unary elementwise --------------------------------------------------------------------------
/// neg, abs, square and relu keep the type. sign keeps it too and gives -1, 0 or 1 (0 at 0 and at
/// NaN, as libtorch's; a bool tensor is its own sign; the C API's fsign keeps Flint's i32, 1 at
/// 0). even needs an integer tensor and returns i32 (1 where a is even). The other functions are float-valued:
/// f32 stays f32, f64 stays f64, integer tensors give default_dtype() (libtorch's rule; the C
/// API keeps Flint's f64).
Tensor neg(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor sign(const Tensor& a);
Tensor even(const Tensor& a);
/// Rounding keeps the type (an integer tensor is returned as it is); round takes halves to even,
/// as libtorch's does.
Tensor floor(const Tensor& a);
Tensor ceil(const Tensor& a);
Tensor round(const Tensor& a);
Tensor trunc(const Tensor& a);
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
/// log(1 + exp(a)), computed as max(a, 0) + log1p(exp(-|a|)) so that it neither overflows nor
/// loses the small values.
Tensor softplus(const Tensor& a);
/// Cast; float to integer truncates toward zero and saturates, NaN becomes 0; complex to a real
/// type keeps the real part, a real value becomes complex with imaginary part 0.
Tensor convert(const Tensor& a, DType to);

/// ---- complex numbers ----------------------------------------------------------------------------
/// c64 and c128 hold complex numbers with f32 and f64 parts. A binary op with a complex operand is
/// complex, of the wider precision of the two (f64 with c64 gives c128). The functions of
/// <complex> keep their principal branches (log, sqrt, pow, the inverse trig and hyperbolic
/// functions); orderings (<, max, argmax, sort, relu, ...) of complex tensors are wrong_type
/// errors. abs, real, imag and angle of a complex tensor are real (f32 for c64, f64 for c128).
/// Gradients follow PyTorch's convention: for a real loss L of z = x + iy, z's gradient is
/// dL/dx + i dL/dy.
///
/// The real and imaginary parts; of a real tensor, the tensor itself and zeros.
Tensor real(const Tensor& a);
Tensor imag(const Tensor& a);
/// The complex conjugate (of a real tensor, the tensor itself).
Tensor conj(const Tensor& a);
/// The argument in (-pi, pi] (std::arg); of a real tensor: pi where negative, 0 elsewhere, NaN for
/// NaN. Integer tensors compute in default_dtype().
Tensor angle(const Tensor& a);
/// re + i im, of two real float tensors (broadcast): c64 from f32 (and the 16-bit floats), c128
/// from f64.
Tensor complex(const Tensor& re, const Tensor& im);
Tensor complex(const Tensor& re, Scalar im);
Tensor complex(Scalar re, const Tensor& im);
/// abs * (cos(angle) + i sin(angle)), as libtorch's polar.
Tensor polar(const Tensor& abs, const Tensor& angle);

/// ---- the discrete Fourier transform ---------------------------------------------------------
/// Along dimension `dim`, as torch::fft: X[k] = sum_j x[j] exp(-2 pi i jk / n). `n` cuts or
/// zero-pads the input along `dim` first (default: its length). `norm` is "backward" (ifft scales
/// by 1/n), "forward" (fft does) or "ortho" (both by 1/sqrt(n)). Computed with KISS FFT in the
/// precision of the parts (float for c64, as libtorch); any length works (mixed radix). Real
/// inputs give c64 (c128 from f64), and their gradients are real.
Tensor fft(const Tensor& x, std::optional<std::int64_t> n = std::nullopt, int dim = -1,
           std::string_view norm = "backward");
Tensor ifft(const Tensor& x, std::optional<std::int64_t> n = std::nullopt, int dim = -1,
            std::string_view norm = "backward");
/// The fft of a real tensor's n/2 + 1 non-negative frequencies (the others are their conjugates).
Tensor rfft(const Tensor& x, std::optional<std::int64_t> n = std::nullopt, int dim = -1,
            std::string_view norm = "backward");
/// rfft's inverse: the real signal of length n (default 2 (m - 1) for m given frequencies).
Tensor irfft(const Tensor& x, std::optional<std::int64_t> n = std::nullopt, int dim = -1,
             std::string_view norm = "backward");
inline Tensor operator-(const Tensor& a) { return neg(a); }

/// ---- reductions ---------------------------------------------------------------------------------
/// With no axes, all axes are reduced (a 0-d result). Reducing an empty dimension gives 0 for sum,
/// 1 for prod, NaN for mean, and is an error for min, max, argmin and argmax.
/// sum, prod, min and max keep the type; mean is float-valued (integers give
/// default_dtype()).
Tensor sum(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
Tensor prod(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
Tensor min(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
Tensor max(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
/// Braced axes (`max(x, {1})`, `max(x, {})`) reduce as the vector forms do.
Tensor min(const Tensor& a, std::initializer_list<int> axes, bool keepdims = false);
Tensor max(const Tensor& a, std::initializer_list<int> axes, bool keepdims = false);
/// One dimension given as an integer: the extreme values with the i64 index of the first of each
/// (NaN counts as the maximum and minimum), as libtorch's tuple:
/// `auto [values, indices] = kiln::max(x, 1);`. Only the values are differentiable.
ValuesIndices min(const Tensor& a, int dim, bool keepdim = false);
ValuesIndices max(const Tensor& a, int dim, bool keepdim = false);
Tensor mean(const Tensor& a, std::vector<int> axes = {}, bool keepdims = false);
/// i64 index of the first maximum/minimum along `axis` (NaN counts as the maximum and minimum).
Tensor argmax(const Tensor& a, int axis, bool keepdims = false);
Tensor argmin(const Tensor& a, int axis, bool keepdims = false);
/// Index into the flattened tensor.
Tensor argmax(const Tensor& a);
Tensor argmin(const Tensor& a);

/// ---- scans and sorting --------------------------------------------------------------------------
/// A 0-d tensor counts as one element along dim 0 or -1 (as in libtorch).
///
/// Inclusive scans along `dim`: out[..j..] = x[..0..] (+ or *) ... x[..j..]. The type is kept
/// (integers wrap as kiln's integer arithmetic does; libtorch would give i64 for integer inputs).
Tensor cumsum(const Tensor& x, int dim);
Tensor cumprod(const Tensor& x, int dim);

/// Stable sorts along `dim`: equal values keep their order; NaN sorts as the largest value (last
/// ascending, first descending), as in libtorch and NumPy. The values are differentiable (the
/// gradient goes back to the indices they came from); the indices are not.
ValuesIndices sort(const Tensor& x, int dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int dim = -1, bool descending = false);
/// The k largest (largest = false: smallest) values along `dim` and their indices, in sorted
/// order (also when `sorted` is false, where libtorch leaves the order open); ties keep their
/// order. k outside [0, size of dim] is an invalid_select error.
ValuesIndices topk(const Tensor& x, std::int64_t k, int dim = -1, bool largest = true,
                   bool sorted = true);

/// ---- linear algebra -------------------------------------------------------------------------
/// Matrix product of the last two dimensions; the leading (batch) dimensions broadcast.
/// Both operands need at least 2 dimensions.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor dot(const Tensor& a, const Tensor& b);  ///< two vectors of equal length -> 0-d

/// ---- shape ops ----------------------------------------------------------------------------------
/// All of these are views (index maps over their input, no copy) except concat and contiguous.
Tensor reshape(const Tensor& a, Shape shape);  ///< one entry may be -1 (inferred)
Tensor flatten(const Tensor& a);               ///< to 1-D
/// Merges dimensions start_dim..end_dim (inclusive) into one, as libtorch's flatten.
Tensor flatten(const Tensor& a, int start_dim, int end_dim = -1);
/// Merges dimension `axis` into dimension `axis - 1` (Flint's fflatten_dimension; axis >= 1).
Tensor flatten_dimension(const Tensor& a, int axis);
/// Result dimension i is input dimension perm[i].
Tensor permute(const Tensor& a, std::vector<int> perm);
/// Swaps two dimensions.
Tensor transpose(const Tensor& a, int axis_a, int axis_b);
/// A matrix transposed; a tensor of fewer than 2 dimensions is returned as it is (libtorch's t).
Tensor t(const Tensor& a);
/// All dimensions in reverse order (NumPy's a.T, Flint's ftranspose without a permutation).
Tensor reverse_dims(const Tensor& a);
/// Per dimension start (inclusive), stop (exclusive) and step. Negative start/stop count from the
/// end; out-of-range values are clamped as in Python; a negative step walks backwards from start
/// (start > stop); a step of 0 is an invalid_select error. Crossed bounds give an empty dimension.
Tensor slice(const Tensor& a, std::vector<std::int64_t> start, std::vector<std::int64_t> stop);
Tensor slice(const Tensor& a, std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
             std::vector<std::int64_t> step);
/// The same along a single axis.
Tensor slice_axis(const Tensor& a, int axis, std::int64_t start, std::int64_t stop,
                  std::int64_t step = 1);
/// Zeros of `shape` with `a` embedded at `insert_at` (Flint's fextend).
Tensor extend(const Tensor& a, Shape shape, std::vector<std::int64_t> insert_at);
/// As extend, with |step[i]| - 1 zeros placed between neighbours of dimension i; a negative step
/// also reverses that dimension (Flint's fextend_step).
Tensor extend(const Tensor& a, Shape shape, std::vector<std::int64_t> insert_at,
              std::vector<std::int64_t> step);
/// `before[i]` and `after[i]` elements of `value` around dimension i (NumPy's pad).
Tensor pad(const Tensor& a, std::vector<std::int64_t> before, std::vector<std::int64_t> after,
           Scalar value = 0);
/// Joins tensors along `axis`; the other dimensions must agree; the type is the promoted one.
Tensor concat(const std::vector<Tensor>& parts, int axis);
/// libtorch's name for concat.
inline Tensor cat(const std::vector<Tensor>& parts, int dim = 0) { return concat(parts, dim); }
Tensor concat(const Tensor& a, const Tensor& b, int axis);
/// libtorch's expand: a view of `a` broadcast to `shape` (aligned at the right; size-1 dimensions
/// repeat; -1 keeps the size of an existing dimension).
Tensor expand(const Tensor& a, Shape shape);
/// Inserts a new dimension of `size` before dimension `axis` (0..rank) by repetition (Flint's
/// fexpand: unsqueeze(a, axis) expanded to `size` along it).
Tensor unsqueeze_expand(const Tensor& a, int axis, std::int64_t size);
/// Broadcasts to `shape` normally (aligned at the right) or, with inverse, at the left.
Tensor broadcast_to(const Tensor& a, Shape shape, bool inverse = false);
/// Repeats the whole tensor reps[i] times along dimension i: [[0,1],[2,3]] with {2,3} -> [4,6].
Tensor repeat(const Tensor& a, std::vector<std::int64_t> reps);
/// libtorch's repeat_interleave: each element repeated `repeats` times in place along `dim`
/// ([1, 2] -> [1, 1, 2, 2]); without a dim, of the flattened tensor. A view.
Tensor repeat_interleave(const Tensor& a, std::int64_t repeats, std::optional<int> dim = {});
Tensor squeeze(const Tensor& a);            ///< drops all dimensions of size 1
Tensor squeeze(const Tensor& a, int axis);  ///< that dimension must have size 1
Tensor unsqueeze(const Tensor& a, int axis);  ///< axis in [-rank-1, rank]
/// A materialised copy in row-major order (reads through all views once).
Tensor contiguous(const Tensor& a);

}  // namespace kiln

#include "kiln/detail/nested_init.hpp"
