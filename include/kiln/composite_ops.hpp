/// @file
/// Everyday ops with libtorch's names, meaning and argument order, each built from kiln's primitive
/// ops (views, elementwise, reductions, matmul, gather): they add no op of their own, so their
/// gradients are the primitives' gradients and the executors fuse through them as through any
/// other chain of primitives. Like every op, they only build graph nodes and check shapes, types
/// and arguments when called (kiln::Error), except nonzero and masked_select (see there).
///
/// Axes may be negative. Where two or more tensor operands meet they broadcast normally (aligned
/// at the right) only. Scalar arguments take the type of the tensor they apply to.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

/// ---- shape ----------------------------------------------------------------------------------------
/// Joins equally shaped tensors along a new dimension `dim` (in [-rank-1, rank]).
Tensor stack(const std::vector<Tensor>& tensors, int dim = 0);
/// Views of consecutive pieces of `split_size` along `dim` (the last one may be shorter). A
/// split_size of 0 is allowed only for an empty dimension (the result is then `x` alone).
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, int dim = 0);
/// Views of pieces of the given sizes, which must add up to the size of `dim` (split_with_sizes).
std::vector<Tensor> split(const Tensor& x, std::vector<std::int64_t> sizes, int dim = 0);
/// At most `chunks` views of ceil(size / chunks) elements along `dim` (fewer when they run out).
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, int dim = 0);
/// The slices along `dim` with that dimension removed, as views.
std::vector<Tensor> unbind(const Tensor& x, int dim = 0);
/// The lower (tril) or upper (triu) triangle of the last two dimensions, the rest set to 0: element
/// [i, j] is kept where j - i <= diagonal (tril) or j - i >= diagonal (triu).
Tensor tril(const Tensor& x, std::int64_t diagonal = 0);
Tensor triu(const Tensor& x, std::int64_t diagonal = 0);
/// Rolls elements by shifts[i] positions along dims[i] (wrapping around). With no dims the
/// flattened tensor is rolled by shifts[0] and reshaped back.
Tensor roll(const Tensor& x, std::vector<std::int64_t> shifts, std::vector<int> dims = {});
/// Reverses the order along each of `dims` (a view).
Tensor flip(const Tensor& x, std::vector<int> dims);
/// 1-D [n]: a square matrix of n + |diagonal| with the vector on that diagonal (above the main one
/// for positive values). 2-D: the elements of that diagonal as a 1-D view.
Tensor diag(const Tensor& x, std::int64_t diagonal = 0);
/// a [n] and b [m] -> [n, m] with a[i] * b[j].
Tensor outer(const Tensor& a, const Tensor& b);

/// ---- elementwise ---------------------------------------------------------------------------------
/// `value` (in x's type) where `mask` (any type, non-zero is true; broadcast to x's shape) holds.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
/// Limits x to [min, max] (either may be absent, not both). The bounds take x's type. Where min >
/// max every element becomes max. The gradient passes where min <= x <= max.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
/// Tensor bounds (an undefined handle stands for no bound) broadcast with x; the type promotes.
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);
Tensor clip(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clip(const Tensor& x, const Tensor& min, const Tensor& max);
/// bool. Integer and bool tensors hold no NaN or infinity.
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
/// NaN, +inf and -inf replaced by the given values; absent ones are 0, the type's largest and its
/// lowest finite value. Integer tensors are returned unchanged.
Tensor nan_to_num(const Tensor& x, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
/// Non-zero (NaN included) is true; results are bool.
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);
/// The operators are the logical ops, on any type (kiln has no bitwise ops): on the bool masks
/// that comparisons give they mean what libtorch's do. && and || are not overloaded,
/// as C++ cannot keep their short-circuit meaning for tensors.
inline Tensor operator&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
inline Tensor operator|(const Tensor& a, const Tensor& b) { return logical_or(a, b); }
inline Tensor operator^(const Tensor& a, const Tensor& b) { return logical_xor(a, b); }
inline Tensor operator!(const Tensor& x) { return logical_not(x); }
inline Tensor operator~(const Tensor& x) { return logical_not(x); }

/// ---- reductions ----------------------------------------------------------------------------------
/// With no dims every dimension is reduced. Integer tensors are computed in default_dtype().
/// Variance with divisor max(0, N - correction), N the number of reduced elements (1: unbiased).
Tensor var(const Tensor& x, std::vector<int> dims = {}, std::int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& x, std::vector<int> dims = {}, std::int64_t correction = 1,
           bool keepdim = false);
/// Vector norms over dims: p = 1 (sum of |x|), 2 (Euclidean), INFINITY (max |x|), -INFINITY
/// (min |x|), 0 (count of non-zeros) or any other positive p ((sum |x|^p)^(1/p)). Other values of
/// p are an invalid_select error.
Tensor norm(const Tensor& x, double p = 2, std::vector<int> dims = {}, bool keepdim = false);
/// p = "fro" is the Euclidean norm over dims; any other string is an invalid_select error.
Tensor norm(const Tensor& x, std::string_view p, std::vector<int> dims = {}, bool keepdim = false);
/// libtorch's F::normalize: x divided by its p-norm along `dim`, taken no smaller than eps.
Tensor normalize(const Tensor& x, double p = 2, int dim = 1, double eps = 1e-12);
/// libtorch's cosine_similarity: a and b broadcast together, each divided by its Euclidean norm
/// along `dim` (taken no smaller than eps), multiplied and summed along `dim`.
Tensor cosine_similarity(const Tensor& a, const Tensor& b, int dim = 1, double eps = 1e-8);
/// log(sum(exp(x))) over dims, shifted by the maximum so that nothing overflows: rows of -inf give
/// -inf, a +inf gives +inf, and the gradient is the softmax over dims. No dims: every dimension;
/// write std::vector<int>{} for that, as a bare {} picks the single-axis form of activations.hpp.
Tensor logsumexp(const Tensor& x, std::vector<int> dims, bool keepdim = false);
/// bool: whether any / all elements are non-zero (an empty tensor: any false, all true).
Tensor any(const Tensor& x);
Tensor all(const Tensor& x);
Tensor any(const Tensor& x, int dim, bool keepdim = false);
Tensor all(const Tensor& x, int dim, bool keepdim = false);

namespace detail {
Tensor arange_between(std::int64_t start, std::int64_t end, std::int64_t step);
Tensor arange_between(double start, double end, double step);
}  // namespace detail

/// ---- comparing ---------------------------------------------------------------------------------
/// torch.isclose: |a - b| <= atol + rtol * |b| elementwise (bool), or a == b (so equal infinities
/// are close); NaNs are close to each other only with equal_nan.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false);
/// Whether every element is close (evaluates).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);

/// ---- creation ------------------------------------------------------------------------------------
/// Without a dtype, these give default_dtype().
/// `steps` values from start to end, evenly spaced (both ends included; steps == 1 gives start).
Tensor linspace(double start, double end, std::int64_t steps);
Tensor linspace(double start, double end, std::int64_t steps, DType dtype);
/// torch.arange(start, end, step): the values start, start + step, ... before end. Integers
/// give i64, and a float among the arguments gives default_dtype() (the values computed in f64
/// first, as PyTorch does); the count is ceil((end - start) / step), 0 when the range is empty. A
/// step of 0 or a bound that is not finite: invalid_select. `arange(n)` (ops.hpp) is 0..n-1.
template <class A, class B, class S = int>
  requires(std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && std::is_arithmetic_v<S>)
Tensor arange(A start, B end, S step = 1) {
  if constexpr (std::is_floating_point_v<A> || std::is_floating_point_v<B> ||
                std::is_floating_point_v<S>)
    return detail::arange_between(static_cast<double>(start), static_cast<double>(end),
                                  static_cast<double>(step));
  else
    return detail::arange_between(static_cast<std::int64_t>(start),
                                  static_cast<std::int64_t>(end), static_cast<std::int64_t>(step));
}
/// Standard normal values of `shape` (torch.randn), from the global generator.
Tensor randn(Shape shape, DType dtype = default_dtype());
/// Uniform values in [0, 1) (torch.rand_like) and standard normal ones (torch.randn_like) of
/// like's shape and dtype.
Tensor rand_like(const Tensor& like);
Tensor randn_like(const Tensor& like);
/// [n, m] (m defaults to n) with ones on the main diagonal.
Tensor eye(std::int64_t n, std::optional<std::int64_t> m = std::nullopt);
Tensor eye(std::int64_t n, std::optional<std::int64_t> m, DType dtype);
/// Integers drawn uniformly from [low, high). Seeded like kiln::uniform.
Tensor randint(std::int64_t low, std::int64_t high, Shape shape, DType dtype = DType::i64);
Tensor randint(std::int64_t low, std::int64_t high, Shape shape, std::uint64_t seed,
               DType dtype = DType::i64);
/// 1 with probability p[i] (a float tensor), else 0, in p's type.
Tensor bernoulli(const Tensor& p);
Tensor bernoulli(const Tensor& p, std::uint64_t seed);
/// 1 with probability p (in [0, 1]), else 0, of `shape` in default_dtype().
Tensor bernoulli(Shape shape, double p);
Tensor bernoulli(Shape shape, double p, std::uint64_t seed);

/// ---- einsum --------------------------------------------------------------------------------------
/// Einstein summation over one or two operands: "ij,jk->ik", "bij,bjk->bik", "ii->i", "ii",
/// "ij->", "...ij,...jk->...ik" and the implicit form without "->" (the output holds the "..."
/// dimensions, then the indices that appear once, in alphabetical order). Indices are letters; an
/// index repeated within one operand takes its diagonal; indices missing from the output are summed,
/// and so are the "..." dimensions when an explicit output has no "...". Sizes of one index (or of
/// "..." dimensions, aligned at the right) in different operands broadcast: equal, or 1. A
/// malformed equation is an invalid_select error, sizes that do not fit incompatible_shapes.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

/// ---- resampling ----------------------------------------------------------------------------------
enum class InterpolateMode { nearest, bilinear };
/// Resizes the last two dimensions of x [N, C, H, W] to size {H', W'} with libtorch's index
/// conventions. nearest: source index floor(i * H / H'). bilinear (float tensors only): source
/// position (i + 0.5) * H / H' - 0.5 clamped at 0, or i * (H - 1) / (H' - 1) with align_corners
/// (which nearest does not take). Differentiable with respect to x.
Tensor interpolate(const Tensor& x, Shape size, InterpolateMode mode, bool align_corners = false);

/// ---- data-dependent shapes -----------------------------------------------------------------------
/// The size of these results depends on the values, so unlike every other op they EVALUATE their
/// input when called (a graph below it is computed then). The result is built from the evaluated
/// positions.
/// i64 [n, rank] (a leaf): the index of every non-zero element (NaN included), in row-major order.
Tensor nonzero(const Tensor& x);
/// 1-D: the elements of x where mask (broadcast with x) is non-zero, in row-major order. Only the
/// mask is evaluated; the result gathers from x, so a gradient reaches x.
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// torch.unique(x, sorted=true, return_inverse=true, return_counts=true): the distinct values
/// of x in ascending order (1-D, x's dtype; each NaN is a value of its own, sorted last), the
/// index of each element's value among them (i64, x's shape: values.index({inverse}) gives x
/// back), and how often each value occurs (i64). Not differentiable; complex is wrong_type.
struct UniqueResult {
  Tensor values;
  Tensor inverse;
  Tensor counts;
};
UniqueResult unique(const Tensor& x);

}  // namespace kiln
