// C API: the operations. Each builds one kiln node through the C++ API and wraps it; the
// operand nodes become the predecessors of the new node.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "api/flint_rules.hpp"
#include "capi/capi.hpp"
#include "kiln/indexing.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"
#include "kiln/windows.hpp"

namespace kiln::capi {
namespace {

// `n` entries of an argument array as int64 (NULL is fine only for n == 0).
template <class T> std::vector<std::int64_t> entries(Call& call, const T* p, std::int64_t n,
                                                     const char* what) {
  std::vector<std::int64_t> out;
  if (n <= 0) return out;
  call.array(p, what);
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_unsigned_v<T>) {
      if (p[i] > static_cast<T>(INT64_MAX))
        throw CError(ILLEGAL_DIMENSION, std::string(what) + "[" + std::to_string(i) + "] = " +
                                            std::to_string(p[i]) + " is too large");
    }
    out.push_back(static_cast<std::int64_t>(p[i]));
  }
  return out;
}

// Flint's record of a call's arguments (FSlice, FExtend, FSlidingWindow), one entry a dimension.
template <class T> std::vector<T> as(const std::vector<std::int64_t>& values) {
  return std::vector<T>(values.begin(), values.end());
}

std::unique_ptr<CallArguments> slice_arguments(const std::vector<std::int64_t>& start,
                                               const std::vector<std::int64_t>& end,
                                               const std::vector<std::int64_t>& step) {
  auto a = std::make_unique<CallArguments>();
  a->first = as<long>(start);
  a->second = as<long>(end);
  a->third = as<long>(step);
  return a;
}

std::unique_ptr<CallArguments> extend_arguments(const std::vector<std::int64_t>& insert_at,
                                                const std::vector<std::int64_t>& step) {
  auto a = std::make_unique<CallArguments>();
  a->sizes = as<std::size_t>(insert_at);
  a->third = as<long>(step);
  return a;
}

using NodeP = FGraphNode*;
constexpr NodeP kNull = nullptr;

}  // namespace
}  // namespace kiln::capi

using namespace kiln;
using namespace kiln::capi;

extern "C" {

// ---- elementwise binary ops, with the scalar forms ----------------------------------------------

#define KILN_BINARY(cname, kop, OPT)                                  \
  FGraphNode* cname##_g(FGraphNode* a, FGraphNode* b) {               \
    Call call(#cname "_g");                                           \
    return guarded(call, kNull, [&] {                                 \
      const Tensor x = call.operand(a, "a");                          \
      const Tensor y = call.operand(b, "b");                          \
      return make_node(detail::flint_binary(kop, x, y), OPT, {a, b}); \
    });                                                               \
  }
#define KILN_SCALAR_RIGHT(cname, suffix, T, CT, kop, OPT)                             \
  FGraphNode* cname##suffix(FGraphNode* a, const T b) {                               \
    Call call(#cname #suffix);                                                        \
    return guarded(call, kNull, [&] {                                                 \
      const Scalar s(static_cast<CT>(b));                                             \
      return make_scalar_node(detail::flint_binary(kop, call.operand(a, "a"), s), OPT, a, s, \
                              ScalarSide::right);                                     \
    });                                                                               \
  }
#define KILN_SCALAR_LEFT(cname, suffix, T, CT, kop, OPT)                              \
  FGraphNode* cname##suffix(const T a, FGraphNode* b) {                               \
    Call call(#cname #suffix);                                                        \
    return guarded(call, kNull, [&] {                                                 \
      const Scalar s(static_cast<CT>(a));                                             \
      return make_scalar_node(detail::flint_binary(kop, s, call.operand(b, "b")), OPT, b, s, \
                              ScalarSide::left);                                      \
    });                                                                               \
  }
#define KILN_ALL_RIGHT(cname, kop, OPT)                      \
  KILN_BINARY(cname, kop, OPT)                               \
  KILN_SCALAR_RIGHT(cname, _ci, int, std::int32_t, kop, OPT) \
  KILN_SCALAR_RIGHT(cname, _cl, long, long, kop, OPT)        \
  KILN_SCALAR_RIGHT(cname, _cf, float, float, kop, OPT)      \
  KILN_SCALAR_RIGHT(cname, _cd, double, double, kop, OPT)
#define KILN_ALL_LEFT(cname, kop, OPT)                       \
  KILN_SCALAR_LEFT(cname, _ici, int, std::int32_t, kop, OPT) \
  KILN_SCALAR_LEFT(cname, _icl, long, long, kop, OPT)        \
  KILN_SCALAR_LEFT(cname, _icf, float, float, kop, OPT)      \
  KILN_SCALAR_LEFT(cname, _icd, double, double, kop, OPT)

KILN_ALL_RIGHT(fadd, detail::Op::add, FADD)
KILN_ALL_RIGHT(fsub, detail::Op::sub, FSUB)
KILN_ALL_LEFT(fsub, detail::Op::sub, FSUB)
KILN_ALL_RIGHT(fmul, detail::Op::mul, FMUL)
KILN_ALL_RIGHT(fdiv, detail::Op::div, FDIV)
KILN_ALL_LEFT(fdiv, detail::Op::div, FDIV)
KILN_ALL_RIGHT(fpow, detail::Op::pow, FPOW)
KILN_ALL_RIGHT(fmin, detail::Op::minimum, FMIN)
KILN_ALL_RIGHT(fmax, detail::Op::maximum, FMAX)
KILN_ALL_RIGHT(fless, detail::Op::less, FLESS)
KILN_ALL_RIGHT(fgreater, detail::Op::greater, FGREATER)
KILN_ALL_RIGHT(fequal, detail::Op::equal, FEQUAL)

#undef KILN_ALL_LEFT
#undef KILN_ALL_RIGHT
#undef KILN_SCALAR_LEFT
#undef KILN_SCALAR_RIGHT
#undef KILN_BINARY

// ---- elementwise unary ops -----------------------------------------------------------------------

#define KILN_UNARY(cname, kfn, OPT)                                                           \
  FGraphNode* cname(FGraphNode* a) {                                                        \
    Call call(#cname);                                                                      \
    return guarded(call, kNull,                                                             \
                   [&] { return make_node(kfn(call.node(a, "a").tensor), OPT, {a}); });     \
  }
// Ops whose values are floats: Flint computes them of integer tensors in f64.
#define KILN_FLINT_UNARY(cname, op, OPT)                                                         \
  KILN_UNARY(                                                                                    \
      cname, [](const Tensor& x) { return kiln::detail::flint_unary(kiln::detail::Op::op, x); }, \
      OPT)
KILN_FLINT_UNARY(flog, log, FLOG)
KILN_FLINT_UNARY(flog2, log2, FLOG2)
KILN_FLINT_UNARY(flog10, log10, FLOG10)
KILN_FLINT_UNARY(fsin, sin, FSIN)
KILN_FLINT_UNARY(fsqrt_g, sqrt, FSQRT)
KILN_FLINT_UNARY(fexp, exp, FEXP)
KILN_FLINT_UNARY(fcos, cos, FCOS)
KILN_FLINT_UNARY(ftan, tan, FTAN)
KILN_FLINT_UNARY(fasin, asin, FASIN)
KILN_FLINT_UNARY(facos, acos, FACOS)
KILN_FLINT_UNARY(fatan, atan, FATAN)
KILN_UNARY(fneg, kiln::neg, FNEG)
KILN_FLINT_UNARY(fsign, sign, FSIGN)
KILN_UNARY(feven, kiln::even, FEVEN)
KILN_UNARY(fabs_g, kiln::abs, FABS)
KILN_UNARY(fflatten, kiln::flatten, FLATTEN)
#undef KILN_FLINT_UNARY
#undef KILN_UNARY

// ---- matrix multiplication and reductions --------------------------------------------------------

FGraphNode* fmatmul(FGraphNode* a, FGraphNode* b) {
  Call call("fmatmul");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const Tensor y = call.node(b, "b").tensor;
    return make_node(kiln::matmul(x, y), FMATMUL, {a, b});
  });
}

#define KILN_REDUCE(cname, kop, OPT)                                                          \
  FGraphNode* cname(FGraphNode* a, const int dimension) {                                   \
    Call call(#cname);                                                                      \
    return guarded(call, kNull, [&] {                                                       \
      return make_node(detail::flint_reduce(detail::Op::kop, call.node(a, "a").tensor,    \
                                            dimension),                                 \
                       OPT, {a});                                                           \
    });                                                                                     \
  }
KILN_REDUCE(freduce_sum, sum, FREDUCE_SUM)
KILN_REDUCE(freduce_mul, prod, FREDUCE_MUL)
KILN_REDUCE(freduce_min, min, FREDUCE_MIN)
KILN_REDUCE(freduce_max, max, FREDUCE_MAX)
#undef KILN_REDUCE

// ---- shape ops -----------------------------------------------------------------------------------

FGraphNode* fflatten_dimension(FGraphNode* a, int dimension) {
  Call call("fflatten_dimension");
  return guarded(call, kNull, [&] {
    return make_node(kiln::flatten_dimension(call.node(a, "a").tensor, dimension), FLATTEN, {a});
  });
}

FGraphNode* fconvert(FGraphNode* a, enum FType newtype) {
  Call call("fconvert");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    return make_node(kiln::convert(x, to_dtype(newtype)), FCONVERSION, {a});
  });
}

FGraphNode* freshape(FGraphNode* a, const size_t* newshape, const int dimensions) {
  Call call("freshape");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    return make_node(kiln::reshape(x, to_shape(newshape, dimensions, "newshape")), FRESHAPE, {a});
  });
}

FGraphNode* fslice_step(FGraphNode* a, const long* start, const long* end, const long* step) {
  Call call("fslice_step");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const int r = x.rank();
    const auto first = entries(call, start, r, "start"), last = entries(call, end, r, "end"),
               steps = entries(call, step, r, "step");
    return make_node(kiln::slice(x, first, last, steps), FSLICE, {a},
                     slice_arguments(first, last, steps));
  });
}

FGraphNode* fslice(FGraphNode* a, const long* start, const long* end) {
  Call call("fslice");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const int r = x.rank();
    const auto first = entries(call, start, r, "start"), last = entries(call, end, r, "end");
    return make_node(kiln::slice(x, first, last), FSLICE, {a},
                     slice_arguments(first, last, std::vector<std::int64_t>(first.size(), 1)));
  });
}

FGraphNode* fextend_step(FGraphNode* a, const size_t* new_shape, const size_t* insert_at,
                         const long* step_size) {
  Call call("fextend_step");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const int r = x.rank();
    const auto at = entries(call, insert_at, r, "insert_at"),
               steps = entries(call, step_size, r, "step_size");
    return make_node(kiln::extend(x, entries(call, new_shape, r, "new_shape"), at, steps),
                     FEXTEND, {a}, extend_arguments(at, steps));
  });
}

FGraphNode* fextend(FGraphNode* a, const size_t* new_shape, const size_t* insert_at) {
  Call call("fextend");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const int r = x.rank();
    const auto at = entries(call, insert_at, r, "insert_at");
    return make_node(kiln::extend(x, entries(call, new_shape, r, "new_shape"), at), FEXTEND, {a},
                     extend_arguments(at, std::vector<std::int64_t>(at.size(), 1)));
  });
}

FGraphNode* fconcat(FGraphNode* a, FGraphNode* b, const unsigned int axis) {
  Call call("fconcat");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const Tensor y = call.node(b, "b").tensor;
    return make_node(kiln::concat(x, y, to_axis(axis, "axis")), FCONCAT, {a, b});
  });
}

FGraphNode* fexpand(FGraphNode* a, const unsigned int axis, const unsigned int size) {
  Call call("fexpand");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    return make_node(kiln::unsqueeze_expand(x, to_axis(axis, "axis"), size), FEXPAND, {a});
  });
}

// Flint counts the copies added to each dimension (decision 6): x makes it x + 1 times as large,
// 0 leaves it unchanged. kiln::repeat counts all copies, as libtorch does.
FGraphNode* frepeat(FGraphNode* a, int* repititions) {
  Call call("frepeat");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    std::vector<std::int64_t> copies = entries(call, repititions, x.rank(), "repititions");
    for (std::size_t d = 0; d < copies.size(); ++d) {
      if (copies[d] < 0)
        throw CError(INVALID_SELECT, "repititions[" + std::to_string(d) + "] = " +
                                         std::to_string(copies[d]) +
                                         " is negative (it counts the copies added: 0 or more)");
      copies[d] += 1;
    }
    return make_node(kiln::repeat(x, copies), FREPEAT, {a});
  });
}

FGraphNode* ftranspose(FGraphNode* a, int* transpositions) {
  Call call("ftranspose");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    call.array(transpositions, "transpositions");
    std::vector<int> perm(transpositions, transpositions + x.rank());
    return make_node(kiln::permute(x, std::move(perm)), FTRANSPOSE, {a});
  });
}

// ---- windows, convolution, indexing, random ------------------------------------------------------

FGraphNode* fconvolve(FGraphNode* a, FGraphNode* kernel, const unsigned int* steps) {
  Call call("fconvolve");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const Tensor k = call.node(kernel, "kernel").tensor;
    return make_node(kiln::convolve(x, k, entries(call, steps, x.rank() - 1, "steps")),
                     FCONVOLVE, {a, kernel});
  });
}

FGraphNode* findex(FGraphNode* a, FGraphNode* indices) {
  Call call("findex");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const Tensor i = call.node(indices, "indices").tensor;
    return make_node(kiln::index(x, i), FINDEX, {a, indices});
  });
}

FGraphNode* findex_set(FGraphNode* a, FGraphNode* b, FGraphNode* indices) {
  Call call("findex_set");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const Tensor y = call.node(b, "b").tensor;
    const Tensor i = call.node(indices, "indices").tensor;
    return make_node(kiln::index_set(x, y, i), FSET_INDEX, {a, b, indices});
  });
}

FGraphNode* fsliding_window(FGraphNode* a, const size_t* size, const unsigned int* steps) {
  Call call("fsliding_window");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const int r = x.rank();
    const std::vector<std::int64_t> window = entries(call, size, r, "size");
    // kiln::sliding_window finds no windows of one element in an empty dimension; in Flint's
    // rule every window must fit into its dimension, and none fits into an empty one.
    for (int d = 0; d < r; ++d)
      if (x.shape()[d] == 0)
        throw CError(INVALID_SELECT, "window " + shape_to_string(window) + " does not fit into " +
                                         shape_to_string(x.shape()) + " in dimension " +
                                         std::to_string(d));
    const auto step = entries(call, steps, r, "steps");
    auto arguments = std::make_unique<CallArguments>();
    arguments->sizes = as<std::size_t>(window);
    arguments->steps = as<unsigned int>(step);
    return make_node(kiln::sliding_window(x, window, step), FSLIDING_WINDOW, {a},
                     std::move(arguments));
  });
}

FGraphNode* funslide_window(FGraphNode* a, const size_t* shape, const unsigned int* steps) {
  Call call("funslide_window");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    const int r = x.rank() - 1;
    return make_node(kiln::unslide_window(x, entries(call, shape, r, "shape"),
                                          entries(call, steps, r, "steps")),
                     FUNSLIDE_WINDOW, {a});
  });
}

FGraphNode* fpermutate(FGraphNode* a, unsigned int ax) {
  Call call("fpermutate");
  return guarded(call, kNull, [&] {
    const Tensor x = call.node(a, "a").tensor;
    return make_node(kiln::permutate(x, to_axis(ax, "ax")), FPERMUTATE, {a});
  });
}

#define KILN_POOLING(cname, kfn, OPT)                                                         \
  FGraphNode* cname(FGraphNode* a, const size_t* window_size, const unsigned int* step_size) { \
    Call call(#cname);                                                                      \
    return guarded(call, kNull, [&] {                                                       \
      const Tensor x = call.node(a, "a").tensor;                                            \
      const int r = x.rank() - 1;                                                           \
      return make_node(kfn(x, entries(call, window_size, r, "window_size"),                 \
                           entries(call, step_size, r, "step_size")),                       \
                       OPT, {a});                                                           \
    });                                                                                     \
  }
KILN_POOLING(fpooling_sum, kiln::pooling_sum, FPOOLING_SUM)
KILN_POOLING(fpooling_max, kiln::pooling_max, FPOOLING_MAX)
#undef KILN_POOLING

FGraphNode* fdropout(FGraphNode* g, const double p) {
  Call call("fdropout");
  return guarded(call, kNull, [&] {
    return make_node(detail::flint_dropout(call.node(g, "g").tensor, p), FDROPOUT, {g});
  });
}

}  // extern "C"
