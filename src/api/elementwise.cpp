// Elementwise ops: unary math, binary arithmetic and comparisons with broadcasting, where.
#include <optional>

#include "api/builder.hpp"
#include "api/flint_rules.hpp"
#include "api/shared_constants.hpp"
#include "kiln/ops.hpp"

namespace kiln {

using detail::Op;

namespace {

// The shape two shapes broadcast to when aligned at the right (normal) or at the left (inverse):
// missing dimensions and dimensions of size 1 repeat.
std::optional<Shape> broadcast_shape(const Shape& a, const Shape& b, bool inverse) {
  const std::size_t rank = std::max(a.size(), b.size());
  auto dim = [&](const Shape& s, std::size_t d) -> std::int64_t {
    const std::size_t missing = rank - s.size();
    if (inverse) return d < s.size() ? s[d] : 1;
    return d < missing ? 1 : s[d - missing];
  };
  Shape out(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t x = dim(a, d), y = dim(b, d);
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[d] = x == 1 ? y : x;
  }
  return out;
}

struct BroadcastPlan {
  Shape shape;
  bool inverse;
};

// How shapes that differ are aligned. The C++ API aligns at the left only an operand marked with
// inverse_broadcast(), so that a shape bug is an error as in NumPy and libtorch; Flint's rule,
// which the C API keeps, falls back to the left where the right does not fit.
enum class Alignment { marked_only, flint_fallback };

BroadcastPlan plan(std::string_view op, const Shape& a, bool a_marked, const Shape& b,
                   bool b_marked, Alignment alignment = Alignment::marked_only) {
  const bool marked = a_marked || b_marked;
  if (!marked)
    if (auto s = broadcast_shape(a, b, false)) return {*s, false};
  if (marked || alignment == Alignment::flint_fallback)
    if (auto s = broadcast_shape(a, b, true)) return {*s, true};
  detail::fail(ErrorCode::incompatible_shapes, op,
               "incompatible shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
                   (marked ? " (aligned at the left: an operand is marked inverse_broadcast())"
                           : " (aligned at the right; mark an operand with inverse_broadcast() "
                             "to align them at the left)"));
}

// The node an operand contributes at `shape`: its own, a shared broadcast of a shared constant,
// or a new broadcast view (kept alive by `made`). The reference is valid until the next call.
const detail::NodePtr& broadcast_operand(const Tensor& t, const Shape& shape, bool inverse,
                                         Tensor& made) {
  if (t.shape() == shape) return t.node();
  if (const Tensor* shared = detail::shared_broadcast(t, shape, inverse)) return shared->node();
  made = broadcast_to(t, shape, inverse);
  return made.node();
}

// The inputs of a binary node, each handle copied once (a braced list would copy it twice).
std::vector<detail::NodePtr> operands(const detail::NodePtr& a, const detail::NodePtr& b) {
  std::vector<detail::NodePtr> inputs;
  inputs.reserve(2);
  inputs.push_back(a);
  inputs.push_back(b);
  return inputs;
}

// A binary node; attributes are made only for the C API's minimum and maximum, keeping them off
// the path of every other op.
Tensor binary_node(Op op, DType dtype, Shape shape, std::vector<detail::NodePtr> inputs,
                   bool flint_ties) {
  if (!flint_ties) return detail::make_node(op, dtype, std::move(shape), std::move(inputs));
  detail::Attrs attrs;
  attrs.flint_ties = true;
  return detail::make_node(op, dtype, std::move(shape), std::move(inputs), std::move(attrs));
}

Tensor binary(Op op, const Tensor& a, const Tensor& b,
              Alignment alignment = Alignment::marked_only, bool flint_ties = false) {
  const std::string_view name = detail::op_info(op).name;
  detail::node_of(a, name);
  detail::node_of(b, name);
  const DType dtype = detail::result_type(op, promote(a.dtype(), b.dtype()));
  // A float-valued op of integers (atan2) computes in default_dtype(), as the unary ones do
  // (libtorch's rule).
  if (dtype != promote(a.dtype(), b.dtype()) &&
      detail::op_info(op).type_rule == detail::TypeRule::float_valued) [[unlikely]]
    return binary(op, convert(a, default_dtype()), convert(b, default_dtype()), alignment,
                  flint_ties);
  if (a.shape() == b.shape())  // the common case: nothing to broadcast
    return binary_node(op, dtype, a.shape(), operands(a.node(), b.node()), flint_ties);
  BroadcastPlan p = plan(name, a.shape(), a.is_inverse_broadcast(), b.shape(),
                         b.is_inverse_broadcast(), alignment);
  // Each operand's node is copied into the inputs before the other's is looked up, which may
  // change the cache it came from.
  Tensor made;
  std::vector<detail::NodePtr> inputs;
  inputs.reserve(2);
  inputs.push_back(broadcast_operand(a, p.shape, p.inverse, made));
  inputs.push_back(broadcast_operand(b, p.shape, p.inverse, made));
  return binary_node(op, dtype, std::move(p.shape), std::move(inputs), flint_ties);
}

// A scalar beside a tensor of type `t` in the C++ API: weak, it takes the tensor's type, except
// where its kind is higher (bool < integer < float, libtorch's rule): a floating value beside an
// integer or bool tensor takes the default float type, an integer beside a bool tensor its own.
// A complex value beside a real tensor takes the complex type of the tensor's precision
// (c128 beside f64, c64 beside the other floats, c64 or c128 by default_dtype() beside integers).
const Tensor& weak_constant(Scalar value, DType t) {
  const DType as = is_complex(value.dtype()) && !is_complex(t)
                       ? complex_type(is_float(t) ? t : default_dtype())
                   : is_float(value.dtype()) && !is_inexact(t) ? default_dtype()
                   : is_integer(value.dtype()) && is_bool(t)   ? value.dtype()
                                                               : t;
  return detail::shared_constant(value.cast(as));
}

// Flint's unary node: integer operands of float-valued ops are computed in f64.
Tensor flint_unary_node(Op op, const Tensor& a) {
  detail::node_of(a, detail::op_info(op).name);
  return detail::make_node(op, detail::result_type(op, a.dtype()), a.shape(), {a.node()});
}

Tensor unary(Op op, const Tensor& a) {
  detail::node_of(a, detail::op_info(op).name);
  return flint_unary_node(op, detail::float_operand(op, a));
}

}  // namespace

// The public functions of the elementwise ops whose signature is the plain one (a tensor per
// operand, and a Scalar in place of either operand of a binary op), one per registry row.
#define KILN_NO_PUBLIC_FUNCTION_(...)
#define KILN_PUBLIC_UNARY_(fn, ...) KILN_IF_WRITTEN_OUT_(fn)(KILN_PLAIN_UNARY_, fn)
#define KILN_PLAIN_UNARY_(fn) \
  Tensor fn(const Tensor& a) { return unary(Op::fn, a); }
#define KILN_PUBLIC_BINARY_(fn, ...) KILN_IF_WRITTEN_OUT_(fn)(KILN_PLAIN_BINARY_, fn)
#define KILN_PLAIN_BINARY_(fn)                                                  \
  Tensor fn(const Tensor& a, const Tensor& b) { return binary(Op::fn, a, b); }  \
  Tensor fn(const Tensor& a, Scalar b) {                                        \
    return binary(Op::fn, a, weak_constant(b, detail::node_of(a, #fn)->dtype)); \
  }                                                                             \
  Tensor fn(Scalar a, const Tensor& b) {                                        \
    return binary(Op::fn, weak_constant(a, detail::node_of(b, #fn)->dtype), b); \
  }
// Unary ops with a signature of their own are written out below (KILN_WRITTEN_OUT_<name>
// defined as `~, 1`); KILN_IF_WRITTEN_OUT_(fn) is then a macro that drops its arguments.
#define KILN_WRITTEN_OUT_convert ~, 1
#define KILN_WRITTEN_OUT_sign ~, 1
#define KILN_WRITTEN_OUT_div ~, 1
#define KILN_SECOND_(a, b, ...) b
#define KILN_SECOND_OF_(...) KILN_SECOND_(__VA_ARGS__)
#define KILN_IS_WRITTEN_OUT_(fn) KILN_SECOND_OF_(KILN_WRITTEN_OUT_##fn, 0, ~)
#define KILN_IF_WRITTEN_OUT_(fn) KILN_CHOOSE_(KILN_IS_WRITTEN_OUT_(fn))
#define KILN_CHOOSE_(flag) KILN_CHOOSE_AGAIN_(flag)
#define KILN_CHOOSE_AGAIN_(flag) KILN_CHOOSE_##flag##_
#define KILN_CHOOSE_0_(make, fn) make(fn)
#define KILN_CHOOSE_1_(make, fn)
KILN_OP_REGISTRY(KILN_NO_PUBLIC_FUNCTION_, KILN_PUBLIC_UNARY_, KILN_PUBLIC_BINARY_)
#undef KILN_NO_PUBLIC_FUNCTION_
#undef KILN_PUBLIC_UNARY_
#undef KILN_PUBLIC_BINARY_
#undef KILN_PLAIN_UNARY_
#undef KILN_PLAIN_BINARY_

namespace {

// `a` of type `as`, keeping its broadcasting mark.
Tensor as_type(const Tensor& a, DType as) {
  if (a.dtype() == as) return a;
  const Tensor c = convert(a, as);
  return a.is_inverse_broadcast() ? c.inverse_broadcast() : c;
}

// libtorch's true division: operands that are both integers or bools divide in default_dtype().
Tensor true_div(const Tensor& a, const Tensor& b) {
  if (is_inexact(promote(a.dtype(), b.dtype()))) return binary(Op::div, a, b);
  return binary(Op::div, as_type(a, default_dtype()), as_type(b, default_dtype()));
}

// The quotient rounded toward zero or down; integers stay integers.
Tensor rounded_div(const Tensor& a, const Tensor& b, std::string_view mode) {
  const bool floor_mode = mode == "floor";
  if (!floor_mode && mode != "trunc")
    detail::fail(ErrorCode::invalid_select, "div",
                 "rounding_mode must be \"trunc\" or \"floor\", got \"" + std::string(mode) +
                     "\"");
  const DType t = promote(a.dtype(), b.dtype());
  if (is_complex(t))
    detail::fail(ErrorCode::wrong_type, "div",
                 "a rounding mode needs real operands, got " + std::string(dtype_name(t)));
  if (is_float(t)) {
    const Tensor q = binary(Op::div, a, b);
    return floor_mode ? floor(q) : trunc(q);
  }
  const DType as = is_bool(t) ? DType::i64 : t;  // libtorch divides bools as integers
  const Tensor x = as_type(a, as), y = as_type(b, as);
  const Tensor q = binary(Op::div, x, y);  // truncates
  if (!floor_mode) return q;
  // One less where the division was inexact and the quotient negative: there the remainders of
  // truncated and of floor division differ (by the divisor).
  return q - convert(not_equal(fmod(x, y), remainder(x, y)), as);
}

}  // namespace

Tensor div(const Tensor& a, const Tensor& b) {
  detail::node_of(a, "div");
  detail::node_of(b, "div");
  return true_div(a, b);
}
Tensor div(const Tensor& a, Scalar b) {
  return true_div(a, weak_constant(b, detail::node_of(a, "div")->dtype));
}
Tensor div(Scalar a, const Tensor& b) {
  return true_div(weak_constant(a, detail::node_of(b, "div")->dtype), b);
}
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  detail::node_of(a, "div");
  detail::node_of(b, "div");
  return rounded_div(a, b, rounding_mode);
}
Tensor div(const Tensor& a, Scalar b, std::string_view rounding_mode) {
  return rounded_div(a, weak_constant(b, detail::node_of(a, "div")->dtype), rounding_mode);
}
Tensor div(Scalar a, const Tensor& b, std::string_view rounding_mode) {
  return rounded_div(weak_constant(a, detail::node_of(b, "div")->dtype), b, rounding_mode);
}
Tensor floor_divide(const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }
Tensor floor_divide(const Tensor& a, Scalar b) { return div(a, b, "floor"); }
Tensor floor_divide(Scalar a, const Tensor& b) { return div(a, b, "floor"); }

// libtorch's sign: the operand's type, 0 at 0 and NaN. Built from selections, so that its
// gradient is zero (a variable reached only through where's condition), as libtorch's.
Tensor sign(const Tensor& a) {
  const DType t = detail::node_of(a, "sign")->dtype;
  if (is_bool(t)) return a;
  if (is_complex(t))
    detail::fail(ErrorCode::wrong_type, "sign",
                 "needs a real tensor, got " + std::string(dtype_name(t)));
  const Tensor zero = zeros({}, t);
  return where(greater(a, zero), full({}, 1, t), where(less(a, zero), full({}, -1, t), zero));
}

Tensor detail::flint_unary(Op op, const Tensor& a) { return flint_unary_node(op, a); }

namespace {

// Flint's gradient on ties (decision 19) for the C API's minimum and maximum.
bool flint_ties(Op op) { return op == Op::minimum || op == Op::maximum; }

}  // namespace

Tensor detail::flint_binary(Op op, const Tensor& a, const Tensor& b) {
  return binary(op, a, b, Alignment::flint_fallback, flint_ties(op));
}
Tensor detail::flint_binary(Op op, const Tensor& a, Scalar b) {
  return binary(op, a, detail::shared_constant(b), Alignment::flint_fallback, flint_ties(op));
}
Tensor detail::flint_binary(Op op, Scalar a, const Tensor& b) {
  return binary(op, detail::shared_constant(a), b, Alignment::flint_fallback, flint_ties(op));
}

Tensor convert(const Tensor& a, DType to) {
  detail::node_of(a, "convert");
  return detail::make_node(Op::convert, to, a.shape(), {a.node()});
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  for (const Tensor* t : {&cond, &a, &b}) detail::node_of(*t, "where");
  const BroadcastPlan values =
      plan("where", a.shape(), a.is_inverse_broadcast(), b.shape(), b.is_inverse_broadcast());
  const Shape shape =
      plan("where", cond.shape(), cond.is_inverse_broadcast(), values.shape, false).shape;
  // Each operand aligns on its own: inversely when marked, else normally where that fits.
  auto align = [&](const Tensor& t) {
    if (t.shape() == shape) return t.normal_broadcast();
    const bool normal_fits =
        !t.is_inverse_broadcast() && broadcast_shape(t.shape(), shape, false) == shape;
    return broadcast_to(t, shape, !normal_fits);
  };
  const Tensor c = align(cond), x = align(a), y = align(b);
  return detail::make_node(Op::where, promote(a.dtype(), b.dtype()), shape,
                           {c.node(), x.node(), y.node()});
}

Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  return where(cond, a, weak_constant(b, detail::node_of(a, "where")->dtype));
}
Tensor where(const Tensor& cond, Scalar a, const Tensor& b) {
  return where(cond, weak_constant(a, detail::node_of(b, "where")->dtype), b);
}

Tensor compare(const Tensor& a, const Tensor& b, Comparison op, Scalar true_value,
               Scalar false_value) {
  Tensor test;
  switch (op) {
    case Comparison::less: test = less(a, b); break;
    case Comparison::greater: test = greater(a, b); break;
    case Comparison::equal: test = equal(a, b); break;
    case Comparison::less_equal: test = less_equal(a, b); break;
    case Comparison::greater_equal: test = greater_equal(a, b); break;
    case Comparison::not_equal: test = not_equal(a, b); break;
  }
  // The values are the result, not operands beside a tensor: each keeps its own type.
  return where(test, scalar(true_value, true_value.dtype()),
               scalar(false_value, false_value.dtype()));
}

}  // namespace kiln
