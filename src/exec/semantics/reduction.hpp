// The accumulator of a reduction (sum, mean, prod, min, max, argmax, argmin): how it starts, takes
// values, merges the accumulator of a later part of the same reduction, and finishes. Float sums
// and products accumulate in double, integers wrap in their own type; min and max follow the NaN
// rules of nan_rules.hpp, argmax/argmin keep the first index. The reference executor feeds it one
// value at a time; faster executors feed it runs they reduced with vectorised loops
// (add_partial, add_extreme) and merge parts computed by different threads.
#pragma once

#include <complex>
#include <cstdint>
#include <type_traits>

#include "exec/semantics/integer.hpp"
#include "exec/semantics/nan_rules.hpp"
#include "graph/op_registry.hpp"
#include "graph/buffer.hpp"

namespace kiln::detail {

// The accumulator type of sums and products of T: double for the real floats, std::complex<double>
// for the complex types, T itself for integers (which wrap).
template <class T> struct accumulator_of {
  using type = std::conditional_t<std::is_floating_point_v<T>, double, T>;
};
template <class R> struct accumulator_of<std::complex<R>> {
  using type = std::complex<double>;
};

template <class T> struct Reduction {
  using Acc = typename accumulator_of<T>::type;
  Op op;
  Acc acc{};
  T best{};
  std::int64_t index = -1;
  std::int64_t seen = 0;

  bool is_extreme() const { return op == Op::min || op == Op::max; }
  bool is_arg() const { return op == Op::argmax || op == Op::argmin; }
  bool takes_maximum() const { return op == Op::max || op == Op::argmax; }

  void start() {
    acc = op == Op::prod ? Acc{1} : Acc{0};
    index = -1;
    seen = 0;
  }

  // The value at position `at` of the reduced run.
  void add(T v, std::int64_t at) {
    switch (op) {
      case Op::sum:
      case Op::mean: acc = sum(acc, static_cast<Acc>(v)); break;
      case Op::prod: acc = product(acc, static_cast<Acc>(v)); break;
      case Op::min:
      case Op::max:
        if constexpr (!is_complex_v<T>)  // complex values are not ordered (the builder refuses)
          if (seen == 0 || replaces(v, best, takes_maximum())) best = v;
        break;
      case Op::argmax:
      case Op::argmin:
        if constexpr (!is_complex_v<T>)
          if (index < 0 || replaces(v, best, takes_maximum())) {
            best = v;
            index = at;
          }
        break;
      default: break;
    }
    ++seen;
  }

  // The sum (sum, mean) or product (prod) of `count` further values.
  void add_partial(Acc partial, std::int64_t count) {
    acc = op == Op::prod ? product(acc, partial) : sum(acc, partial);
    seen += count;
  }

  // The extreme (min, max) of `count` further values, reduced by the same rules.
  void add_extreme(T extreme, std::int64_t count) {
    if (count == 0) return;
    if constexpr (!is_complex_v<T>)
      if (seen == 0 || replaces(extreme, best, takes_maximum())) best = extreme;
    seen += count;
  }

  // Combines the accumulator of a later part of the same reduction.
  void merge(const Reduction& later) {
    if (is_extreme()) return add_extreme(later.best, later.seen);
    if (is_arg()) {
      if constexpr (!is_complex_v<T>)
        if (later.index >= 0 && (index < 0 || replaces(later.best, best, takes_maximum()))) {
          best = later.best;
          index = later.index;
        }
      seen += later.seen;
      return;
    }
    add_partial(later.acc, later.seen);
  }

  // The result over `count` values (mean divides by it; integer means stay sums).
  template <class O> O finish(std::int64_t count) const {
    switch (op) {
      case Op::sum:
      case Op::prod: return convert_value<O>(static_cast<T>(acc));
      case Op::mean:
        // A complex sum's parts are divided each (not a complex quotient, whose special values
        // would depend on how the compiler lowers a division by (count, 0)).
        if constexpr (is_complex_v<Acc>)
          return convert_value<O>(static_cast<T>(Acc(acc.real() / static_cast<double>(count),
                                                     acc.imag() / static_cast<double>(count))));
        else if constexpr (std::is_floating_point_v<Acc>)
          return convert_value<O>(static_cast<T>(acc / static_cast<Acc>(count)));
        return convert_value<O>(acc);
      case Op::min:
      case Op::max: return convert_value<O>(best);
      default: return static_cast<O>(index);
    }
  }

  static Acc sum(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>) return wrap_add(a, b);
    else return a + b;
  }
  static Acc product(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>) return wrap_mul(a, b);
    else return a * b;
  }
};

}  // namespace kiln::detail
