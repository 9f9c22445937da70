// ONNX export: kiln's graph, node by node, as ONNX operators that compute the same values.
// Views become Reshape, Transpose, Slice, Pad and Expand; windows (which ONNX has no view for)
// become a Gather of their precomputed element positions. Where ONNX's semantics differ from
// kiln's (integer division by zero, float-to-integer conversion, integer powers with negative
// exponents, sign of zero and NaN), the exported nodes spell out kiln's rule.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "api/builder.hpp"
#include "data/onnx_model.hpp"
#include "data/whole_files.hpp"
#include "graph/values.hpp"
#include "graph/view.hpp"
#include "kiln/onnx.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {

using detail::Node;
using detail::onnx_type;
using detail::OnnxAttribute;
using detail::OnnxModel;
using detail::OnnxType;
using detail::Op;
using Names = std::vector<std::string>;

constexpr const char* kOp = "save_onnx";

OnnxAttribute attr(std::string name, std::int64_t v) {
  return OnnxAttribute::integer(std::move(name), v);
}
OnnxAttribute attr(std::string name, std::vector<std::int64_t> v) {
  return OnnxAttribute::integers(std::move(name), std::move(v));
}

std::string describe(const Node& n) {
  return std::string(n.info().name) + " " + dtype_name(n.dtype) + shape_to_string(n.shape);
}

[[noreturn]] void no_onnx_form(const Node& n, const std::string& why) {
  detail::fail(ErrorCode::io_error, kOp, describe(n) + " has no ONNX form: " + why);
}

class Exporter {
 public:
  explicit Exporter(const OnnxExportOptions& options)
      : options_(options), model_(options.graph_name) {}

  std::string run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
  // The same, leaving the model for the caller (OnnxModel::open_batch) to serialise.
  OnnxModel& export_graph(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

 private:
  // Names the graph's inputs and checks that each is a distinct placeholder.
  void add_inputs(const std::vector<Tensor>& inputs);
  // Every node below the outputs in an order where inputs come first, without recursion (graphs
  // may be deep); the walk stops at leaves and at nodes that hold values.
  std::vector<const Node*> nodes_below(const std::vector<Tensor>& outputs) const;
  static bool is_boundary(const Node& n);
  void emit(const Node& n);
  void emit_initializer(const Node& n);
  void emit_view(const Node& n);
  void emit_windows(const Node& n);
  std::string emit_unary(const Node& n);
  std::string emit_binary(const Node& n);
  std::string emit_reduce(const Node& n);
  std::string emit_window2d(const Node& n);

  std::string name_of(const Node& n) const { return names_.at(&n); }
  // Input i of n in type `to`.
  std::string operand(const Node& n, std::size_t i, DType to) {
    const Node& in = *n.inputs[i];
    return cast(name_of(in), in.dtype, to);
  }
  std::string cast(const std::string& value, DType from, DType to);
  std::string to_onnx_type(const std::string& value, OnnxType to) {
    return model_.add_node("Cast", {value}, {attr("to", static_cast<std::int64_t>(to))});
  }
  std::string scalar(DType type, Scalar v) { return model_.scalar_of(onnx_type(type), v); }
  std::string node(std::string op, Names in, std::vector<OnnxAttribute> attrs = {}) {
    return model_.add_node(std::move(op), std::move(in), std::move(attrs));
  }
  // To a shape of kiln's, where a 0 is a size (ONNX's default reads it as "keep that dimension").
  std::string reshape(const std::string& x, const Shape& shape) {
    return node("Reshape", {x, model_.int64s(shape)}, {attr("allowzero", 1)});
  }
  std::string where(const std::string& c, const std::string& a, const std::string& b) {
    return node("Where", {c, a, b});
  }

  const OnnxExportOptions& options_;
  OnnxModel model_;
  std::unordered_map<const Node*, std::string> names_;
  std::unordered_set<std::string> user_names_;
};

void Exporter::add_inputs(const std::vector<Tensor>& inputs) {
  if (!options_.input_names.empty() && options_.input_names.size() != inputs.size())
    detail::fail(ErrorCode::invalid_select, kOp,
                 std::to_string(options_.input_names.size()) + " input names for " +
                     std::to_string(inputs.size()) + " inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Node& n = *detail::node_of(inputs[i], kOp);
    if (n.op != Op::store || n.attrs.store_kind != detail::StoreKind::placeholder)
      detail::fail(ErrorCode::invalid_select, kOp,
                   "input " + std::to_string(i) + " (" + describe(n) +
                       ") is not a placeholder: build the graph from kiln::placeholder");
    if (names_.count(&n))
      detail::fail(ErrorCode::invalid_select, kOp,
                   "input " + std::to_string(i) + " is given twice");
    std::string name = !options_.input_names.empty() ? options_.input_names[i]
                       : !n.name.empty()             ? n.name
                                                     : "input" + std::to_string(i);
    if (name.empty() || !user_names_.insert(name).second)
      detail::fail(ErrorCode::invalid_select, kOp,
                   "input " + std::to_string(i) + " needs a name of its own, not '" + name + "'");
    model_.add_input(name, onnx_type(n.dtype), n.shape);
    names_[&n] = std::move(name);
  }
}

bool Exporter::is_boundary(const Node& n) { return n.op == Op::store || detail::has_values(n); }

std::vector<const Node*> Exporter::nodes_below(const std::vector<Tensor>& outputs) const {
  std::vector<const Node*> order;
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<const Node*, bool>> stack;
  for (const Tensor& t : outputs) stack.push_back({detail::node_of(t, kOp).get(), false});
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      order.push_back(n);
      continue;
    }
    if (!seen.insert(n).second) continue;
    stack.push_back({n, true});
    if (is_boundary(*n)) continue;
    for (const detail::NodePtr& in : n->inputs)
      if (!seen.count(in.get())) stack.push_back({in.get(), false});
  }
  return order;
}

std::string Exporter::cast(const std::string& value, DType from, DType to) {
  if (from == to) return value;
  if (is_float(from) && is_integer(to)) {
    // kiln's conversion: NaN gives 0, values beyond the integer range saturate, the rest
    // truncate toward zero (ONNX leaves the first two undefined).
    const bool narrow = to == DType::i32;
    const Scalar lowest = narrow ? Scalar(std::numeric_limits<std::int32_t>::min())
                                 : Scalar(std::numeric_limits<std::int64_t>::min());
    const Scalar highest = narrow ? Scalar(std::numeric_limits<std::int32_t>::max())
                                  : Scalar(std::numeric_limits<std::int64_t>::max());
    const double lo = lowest.as<double>();  // -2^31 or -2^63, exact in every float type
    const double hi = -lo;                  // the first value above the range
    const std::string in_range = node("And", {node("GreaterOrEqual", {value, scalar(from, lo)}),
                                              node("Less", {value, scalar(from, hi)})});
    const std::string safe = where(in_range, value, scalar(from, 0));
    const std::string converted = to_onnx_type(safe, onnx_type(to));
    const std::string beyond =
        where(node("Less", {value, scalar(from, 0)}), scalar(to, lowest), scalar(to, highest));
    return where(node("IsNaN", {value}), scalar(to, 0), where(in_range, converted, beyond));
  }
  return to_onnx_type(value, onnx_type(to));
}

void Exporter::emit_initializer(const Node& n) {
  if (n.op == Op::store && n.attrs.store_kind == detail::StoreKind::placeholder)
    detail::fail(ErrorCode::invalid_select, kOp,
                 "the outputs read placeholder '" + (n.name.empty() ? describe(n) : n.name) +
                     "', which is not among the inputs");
  if (!detail::has_values(n))
    detail::fail(ErrorCode::internal_error, kOp, describe(n) + " is a leaf without values");
  const detail::Buffer& values = detail::host_values(n);
  std::string raw(values.bytes(), '\0');
  if (!raw.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  std::string name =
      !n.name.empty() && !user_names_.count(n.name) ? n.name : model_.fresh_name("w");
  user_names_.insert(name);
  names_[&n] = model_.add_initializer(onnx_type(n.dtype), n.shape, std::move(raw), std::move(name));
}

void Exporter::emit_windows(const Node& n) {
  // Every element's position in the input, as a constant: Gather from the flattened input.
  const Node& in = *n.inputs[0];
  const std::size_t rank = in.shape.size();
  const Shape counts(n.shape.begin(), n.shape.begin() + static_cast<std::ptrdiff_t>(rank));
  const detail::ViewMap map = detail::ViewMap::identity(in.shape).windows(
      n.attrs.window, n.attrs.step, n.attrs.dilation, counts);
  std::vector<std::int64_t> positions(static_cast<std::size_t>(n.numel()));
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const Scalar* fill = nullptr;
    if (!map.locate(static_cast<std::int64_t>(i), &positions[i], &fill))
      no_onnx_form(n, "a window reads padding");  // windows alone never do
  }
  std::string raw(positions.size() * sizeof(std::int64_t), '\0');
  if (!raw.empty()) std::memcpy(raw.data(), positions.data(), raw.size());
  const std::string index =
      model_.add_initializer(OnnxType::i64, n.shape, std::move(raw), model_.fresh_name("windows"));
  const std::string flat = node("Reshape", {name_of(in), model_.int64s({-1})});
  names_[&n] = node("Gather", {flat, index}, {attr("axis", 0)});
}

void Exporter::emit_view(const Node& n) {
  const Node& in = *n.inputs[0];
  const std::string x = name_of(in);
  const auto& a = n.attrs;
  const auto rank = static_cast<std::int64_t>(n.shape.size());
  switch (n.op) {
    case Op::reshape: names_[&n] = reshape(x, n.shape); return;
    case Op::permute: names_[&n] = node("Transpose", {x}, {attr("perm", a.axes)}); return;
    case Op::slice: {
      std::vector<std::int64_t> ends(n.shape.size()), axes(n.shape.size());
      for (std::int64_t d = 0; d < rank; ++d) {
        const auto i = static_cast<std::size_t>(d);
        axes[i] = d;
        ends[i] = a.start[i] + n.shape[i] * a.step[i];
        // Backwards to the first element: an end of -1 would mean "the last element" to ONNX.
        if (a.step[i] < 0 && ends[i] < 0) ends[i] = std::numeric_limits<std::int64_t>::min();
      }
      names_[&n] = node("Slice", {x, model_.int64s(a.start), model_.int64s(ends),
                                  model_.int64s(axes), model_.int64s(a.step)});
      return;
    }
    case Op::pad: {
      std::vector<std::int64_t> pads = a.before;
      pads.insert(pads.end(), a.after.begin(), a.after.end());
      names_[&n] = node("Pad", {x, model_.int64s(pads), scalar(n.dtype, a.value.as<double>())},
                        {OnnxAttribute::text("mode", "constant")});
      return;
    }
    case Op::broadcast: {
      std::string source = x;
      if (a.inverse && in.shape.size() < n.shape.size()) {
        // Aligned at the left: trailing dimensions of 1 first, then ONNX's (right-aligned) Expand.
        Shape padded = in.shape;
        padded.resize(n.shape.size(), 1);
        source = reshape(x, padded);
      }
      names_[&n] = node("Expand", {source, model_.int64s(n.shape)});
      return;
    }
    case Op::windows: emit_windows(n); return;
    default: break;
  }
  no_onnx_form(n, "an unknown view");
}

std::string Exporter::emit_unary(const Node& n) {
  const DType t = n.dtype;
  const std::string x =
      operand(n, 0, n.op == Op::sign || n.op == Op::even ? n.inputs[0]->dtype : t);
  const DType xt = n.inputs[0]->dtype;
  auto one = [&](const char* op) { return node(op, {x}); };
  // Of a bool, these are the value itself (the other ops with a bool result refuse bool); an
  // integer is its own floor, ceiling, rounding and truncation.
  const bool rounding =
      n.op == Op::floor || n.op == Op::ceil || n.op == Op::round || n.op == Op::trunc;
  if ((is_bool(t) && (n.op == Op::abs || n.op == Op::square || n.op == Op::relu)) ||
      (rounding && !is_float(t)))
    return one("Identity");
  switch (n.op) {
    case Op::neg: return one("Neg");
    case Op::abs: return one("Abs");
    case Op::square: return node("Mul", {x, x});
    case Op::relu: return is_float(t) ? one("Relu") : node("Max", {x, scalar(t, 0)});
    case Op::sign:  // kiln: 1 for x >= 0 (zero included), else -1 (NaN included)
      return where(node("GreaterOrEqual", {x, scalar(xt, 0)}), scalar(t, 1), scalar(t, -1));
    case Op::even:
      return cast(to_onnx_type(node("Equal", {node("Mod", {x, scalar(xt, 2)}), scalar(xt, 0)}),
                               OnnxType::i32),
                  DType::i32, t);
    case Op::convert: return cast(name_of(*n.inputs[0]), xt, t);
    case Op::floor: return one("Floor");
    case Op::ceil: return one("Ceil");
    case Op::round: return one("Round");  // halves to even, as kiln's
    case Op::trunc:  // toward zero: the floor of |x| with x's sign
      return node("Mul", {one("Sign"), node("Floor", {node("Abs", {x})})});
    case Op::sqrt: return one("Sqrt");
    case Op::exp: return one("Exp");
    case Op::expm1: return node("Sub", {one("Exp"), scalar(t, 1)});
    case Op::log: return one("Log");
    case Op::log2: return node("Div", {one("Log"), scalar(t, std::log(2.0))});
    case Op::log10: return node("Div", {one("Log"), scalar(t, std::log(10.0))});
    case Op::log1p: return node("Log", {node("Add", {x, scalar(t, 1)})});
    case Op::sin: return one("Sin");
    case Op::cos: return one("Cos");
    case Op::tan: return one("Tan");
    case Op::asin: return one("Asin");
    case Op::acos: return one("Acos");
    case Op::atan: return one("Atan");
    case Op::sinh: return one("Sinh");
    case Op::cosh: return one("Cosh");
    case Op::tanh: return one("Tanh");
    case Op::asinh: return one("Asinh");
    case Op::acosh: return one("Acosh");
    case Op::atanh: return one("Atanh");
    case Op::reciprocal: return one("Reciprocal");
    case Op::sigmoid: return one("Sigmoid");
    case Op::erf: return one("Erf");
    case Op::softplus: return one("Softplus");
    default: break;
  }
  no_onnx_form(n, "an unknown elementwise op");
}

std::string Exporter::emit_binary(const Node& n) {
  const DType t = n.dtype;
  const bool comparison = n.info().type_rule == detail::TypeRule::to_bool;
  const DType promoted = promote(n.inputs[0]->dtype, n.inputs[1]->dtype);
  // ONNX orders no bools: masks compare as i32 0/1.
  const DType operands = !comparison ? t : is_bool(promoted) ? DType::i32 : promoted;
  const std::string a = operand(n, 0, operands), b = operand(n, 1, operands);
  if (is_bool(t) && !comparison && n.op != Op::assign) {  // kiln's bool arithmetic, as ONNX logic
    switch (n.op) {
      case Op::mul:
      case Op::minimum: return node("And", {a, b});
      case Op::add:
      case Op::maximum: return node("Or", {a, b});
      default: no_onnx_form(n, "bool arithmetic other than and (mul, minimum) and or (add, maximum)");
    }
  }
  auto compared = [&](const std::string& truth) {
    return is_bool(t) ? truth : cast(to_onnx_type(truth, OnnxType::i32), DType::i32, t);
  };
  switch (n.op) {
    case Op::add: return node("Add", {a, b});
    case Op::sub: return node("Sub", {a, b});
    case Op::mul: return node("Mul", {a, b});
    case Op::div: {
      if (is_float(t)) return node("Div", {a, b});
      // kiln: x / 0 = 0 and x / -1 = -x (wrapping); ONNX leaves both undefined.
      const std::string zero = node("Equal", {b, scalar(t, 0)});
      const std::string minus_one = node("Equal", {b, scalar(t, -1)});
      const std::string safe = where(node("Or", {zero, minus_one}), scalar(t, 1), b);
      return where(zero, scalar(t, 0), where(minus_one, node("Neg", {a}), node("Div", {a, safe})));
    }
    case Op::pow: {
      if (is_float(t)) return node("Pow", {a, b});
      // kiln: a negative exponent gives 1 / a^|e| truncated toward zero (1, ±1 or 0).
      const std::string negative = node("Less", {b, scalar(t, 0)});
      const std::string power = node("Pow", {a, node("Max", {b, scalar(t, 0)})});
      const std::string odd = node("Equal", {node("Mod", {b, scalar(t, 2)}), scalar(t, 1)});
      const std::string of_minus_one = where(odd, scalar(t, -1), scalar(t, 1));
      const std::string reciprocal =
          where(node("Equal", {a, scalar(t, 1)}), scalar(t, 1),
                where(node("Equal", {a, scalar(t, -1)}), of_minus_one, scalar(t, 0)));
      return where(negative, reciprocal, power);
    }
    case Op::minimum: return node("Min", {a, b});
    case Op::maximum: return node("Max", {a, b});
    case Op::less: return compared(node("Less", {a, b}));
    case Op::greater: return compared(node("Greater", {a, b}));
    case Op::equal: return compared(node("Equal", {a, b}));
    case Op::less_equal: return compared(node("LessOrEqual", {a, b}));
    case Op::greater_equal: return compared(node("GreaterOrEqual", {a, b}));
    case Op::not_equal: return compared(node("Not", {node("Equal", {a, b})}));
    case Op::assign: no_onnx_form(n, "an in-place update belongs to training, not inference");
    default: break;
  }
  no_onnx_form(n, "an unknown elementwise op");
}

std::string Exporter::emit_reduce(const Node& n) {
  const Node& in = *n.inputs[0];
  const std::vector<std::int64_t>& axes = n.attrs.axes;
  if (n.op == Op::argmax || n.op == Op::argmin) {
    std::string x = is_bool(in.dtype) ? cast(name_of(in), in.dtype, DType::i32) : name_of(in);
    std::int64_t axis = axes.empty() ? 0 : axes.front();
    if (axes.size() > 1) {
      // One block of adjacent axes, indexed row-major within the block: merge it into one axis.
      Shape merged(in.shape.begin(), in.shape.begin() + axes.front());
      std::int64_t block = 1;
      for (const std::int64_t d : axes) block *= in.shape[static_cast<std::size_t>(d)];
      merged.push_back(block);
      merged.insert(merged.end(), in.shape.begin() + axes.back() + 1, in.shape.end());
      x = reshape(x, merged);
    } else if (axes.empty()) {
      x = reshape(x, {1});
    }
    const std::string index =
        node(n.op == Op::argmax ? "ArgMax" : "ArgMin", {x},
             {attr("axis", axis), attr("keepdims", 0), attr("select_last_index", 0)});
    return cast(index, DType::i64, n.dtype);
  }
  const std::string x = operand(n, 0, n.dtype);
  if (axes.empty()) return node("Identity", {x});
  if (is_bool(n.dtype)) {  // any (sum, max) or all (prod, min) of the 0/1 values, as i32
    const bool any = n.op == Op::sum || n.op == Op::max;
    const std::string reduced = node(any ? "ReduceMax" : "ReduceMin", {operand(n, 0, DType::i32)},
                                     {attr("axes", axes), attr("keepdims", 0)});
    return cast(reduced, DType::i32, n.dtype);
  }
  switch (n.op) {
    case Op::sum:
    case Op::prod: {
      // ONNX Runtime saturates 32-bit integer sums; kiln wraps: sum in 64 bits, then wrap.
      const DType accumulate = n.dtype == DType::i32 ? DType::i64 : n.dtype;
      const std::string wide = cast(x, n.dtype, accumulate);
      const std::string total =
          n.op == Op::sum ? node("ReduceSum", {wide, model_.int64s(axes)}, {attr("keepdims", 0)})
                          : node("ReduceProd", {wide}, {attr("axes", axes), attr("keepdims", 0)});
      return cast(total, accumulate, n.dtype);
    }
    case Op::min: return node("ReduceMin", {x}, {attr("axes", axes), attr("keepdims", 0)});
    case Op::max: return node("ReduceMax", {x}, {attr("axes", axes), attr("keepdims", 0)});
    case Op::mean: return node("ReduceMean", {x}, {attr("axes", axes), attr("keepdims", 0)});
    default: break;
  }
  no_onnx_form(n, "an unknown reduction");
}

std::string Exporter::emit_window2d(const Node& n) {
  const auto& a = n.attrs;
  const std::vector<std::int64_t> pads{a.padding[0], a.padding[1], a.padding[0], a.padding[1]};
  switch (n.op) {
    case Op::conv2d:
      return node("Conv", {operand(n, 0, n.dtype), operand(n, 1, n.dtype)},
                  {attr("strides", a.step), attr("pads", pads), attr("dilations", a.dilation)});
    case Op::conv2d_grad_input: {
      // conv_transpose2d: the output size fixes ONNX's output_padding.
      const Shape& x = n.inputs[0]->shape;
      const Shape& w = n.inputs[1]->shape;
      std::vector<std::int64_t> output_padding(2);
      for (std::size_t i = 0; i < 2; ++i)
        output_padding[i] = n.shape[2 + i] - ((x[2 + i] - 1) * a.step[i] - 2 * a.padding[i] +
                                              a.dilation[i] * (w[2 + i] - 1) + 1);
      return node("ConvTranspose", {operand(n, 0, n.dtype), operand(n, 1, n.dtype)},
                  {attr("strides", a.step), attr("pads", pads), attr("dilations", a.dilation),
                   attr("output_padding", output_padding)});
    }
    case Op::max_pool2d: {
      if (n.dtype == DType::i64) no_onnx_form(n, "ONNX's MaxPool takes no 64-bit integers");
      // ONNX Runtime's MaxPool takes no 32-bit integers either: they pool exactly as doubles.
      const DType pooled = n.dtype == DType::i32 ? DType::f64 : n.dtype;
      const std::string out = node("MaxPool", {operand(n, 0, pooled)},
                                   {attr("kernel_shape", a.window), attr("strides", a.step),
                                    attr("pads", pads), attr("dilations", a.dilation)});
      return cast(out, pooled, n.dtype);
    }
    default: break;
  }
  no_onnx_form(n, "a gradient op belongs to training, not inference");
}

void Exporter::emit(const Node& n) {
  if (is_boundary(n)) {
    emit_initializer(n);
    return;
  }
  using detail::OpKind;
  const auto& a = n.attrs;
  const DType t = n.dtype;
  std::string out;
  switch (n.info().kind) {
    case OpKind::source: no_onnx_form(n, "random values (export the model in eval mode)");
    case OpKind::view: emit_view(n); return;
    case OpKind::unary: out = emit_unary(n); break;
    case OpKind::binary: out = emit_binary(n); break;
    case OpKind::ternary:
      out = where(to_onnx_type(name_of(*n.inputs[0]), OnnxType::boolean), operand(n, 1, t),
                  operand(n, 2, t));
      break;
    case OpKind::reduce: out = emit_reduce(n); break;
    case OpKind::matmul: out = node("MatMul", {operand(n, 0, t), operand(n, 1, t)}); break;
    case OpKind::concat: {
      Names parts;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) parts.push_back(operand(n, i, t));
      out = node("Concat", parts, {attr("axis", a.axes.at(0))});
      break;
    }
    case OpKind::copy: out = node("Identity", {name_of(*n.inputs[0])}); break;
    case OpKind::indexing: {
      if (n.op == Op::gather) {
        out = node("GatherElements", {operand(n, 0, t), operand(n, 1, DType::i64)},
                   {attr("axis", a.axes.at(0))});
      } else if (n.op == Op::scatter_add && !a.drop_negative) {
        std::string src = operand(n, 2, t);
        const Shape& index_shape = n.inputs[1]->shape;
        if (n.inputs[2]->shape != index_shape) {  // ONNX wants the updates of the indices' shape
          std::vector<std::int64_t> zeros(index_shape.size(), 0), axes(index_shape.size());
          for (std::size_t d = 0; d < axes.size(); ++d) axes[d] = static_cast<std::int64_t>(d);
          src = node("Slice",
                     {src, model_.int64s(zeros), model_.int64s(index_shape), model_.int64s(axes)});
        }
        out = node("ScatterElements", {operand(n, 0, t), operand(n, 1, DType::i64), src},
                   {attr("axis", a.axes.at(0)), OnnxAttribute::text("reduction", "add")});
      } else if (n.op == Op::scatter_add) {
        no_onnx_form(n, "ScatterElements cannot drop negative indices");
      } else {
        no_onnx_form(n, "a gradient op belongs to training, not inference");
      }
      break;
    }
    case OpKind::custom: no_onnx_form(n, "it runs a C++ callable");
    case OpKind::window2d: out = emit_window2d(n); break;
    case OpKind::softmax:
      out = node(n.op == Op::softmax ? "Softmax" : "LogSoftmax", {operand(n, 0, t)},
                 {attr("axis", a.axes.at(0))});
      break;
    case OpKind::scan:
      if (n.op != Op::cumsum) no_onnx_form(n, "ONNX has no cumulative product");
      out = node("CumSum", {operand(n, 0, t), model_.scalar_of(OnnxType::i64, a.axes.at(0))});
      break;
    case OpKind::sort: {
      // TopK over the whole axis puts equal elements in index order, as kiln's stable argsort.
      const Node& in = *n.inputs[0];
      const std::int64_t axis = a.axes.at(0);
      const std::vector<std::string> sorted{model_.fresh_name("sorted"),
                                            model_.fresh_name("order")};
      model_.add_node_named(
          "TopK", {name_of(in), model_.int64s({in.shape[static_cast<std::size_t>(axis)]})}, sorted,
          {attr("axis", axis), attr("largest", a.descending ? 1 : 0), attr("sorted", 1)});
      out = cast(sorted[1], DType::i64, t);
      break;
    }
    case OpKind::spectral: no_onnx_form(n, "complex values have no ONNX form in kiln's export");
    case OpKind::linalg:
      if (n.op != Op::det) no_onnx_form(n, "ONNX has no such decomposition");
      out = node("Det", {operand(n, 0, t)});
      break;
  }
  names_[&n] = std::move(out);
}

std::string Exporter::run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  return export_graph(inputs, outputs).serialize();
}

OnnxModel& Exporter::export_graph(const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs) {
  if (outputs.empty()) detail::fail(ErrorCode::invalid_select, kOp, "no outputs to export");
  if (!options_.output_names.empty() && options_.output_names.size() != outputs.size())
    detail::fail(ErrorCode::invalid_select, kOp,
                 std::to_string(options_.output_names.size()) + " output names for " +
                     std::to_string(outputs.size()) + " outputs");
  add_inputs(inputs);
  for (const Node* n : nodes_below(outputs))
    if (!names_.count(n)) emit(*n);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Node& n = *outputs[i].node();
    std::string name =
        options_.output_names.empty() ? "output" + std::to_string(i) : options_.output_names[i];
    if (name.empty() || !user_names_.insert(name).second)
      detail::fail(ErrorCode::invalid_select, kOp,
                   "output " + std::to_string(i) + " needs a name of its own, not '" + name + "'");
    model_.add_node_named("Identity", {name_of(n)}, {name}, {});
    model_.add_output(name, onnx_type(n.dtype), n.shape);
  }
  return model_;
}

// The model exported at three batch sizes, with the batch left open (OnnxModel::open_batch).
std::string export_with_open_batch(const std::vector<OnnxInput>& inputs,
                                   const OnnxModelBuilder& build,
                                   const OnnxExportOptions& options) {
  if (!build) detail::fail(ErrorCode::invalid_select, kOp, "no function builds the model");
  if (inputs.empty())
    detail::fail(ErrorCode::invalid_select, kOp, "a model with an open batch needs inputs");
  if (!options.input_names.empty())
    detail::fail(ErrorCode::invalid_select, kOp,
                 "inputs of a model with an open batch are named by their OnnxInput");
  const std::vector<std::int64_t> batches = {2, 3, 5};
  std::vector<std::unique_ptr<Exporter>> exporters;
  std::vector<OnnxModel*> models;
  for (const std::int64_t batch : batches) {
    std::vector<Tensor> placeholders;
    for (const OnnxInput& in : inputs) {
      Shape shape = in.shape;
      shape.insert(shape.begin(), batch);
      placeholders.push_back(kiln::placeholder(shape, in.dtype, in.name));
    }
    const std::vector<Tensor> outputs = build(placeholders);
    exporters.push_back(std::make_unique<Exporter>(options));
    models.push_back(&exporters.back()->export_graph(placeholders, outputs));
  }
  models[0]->open_batch({models[1], models[2]}, batches);
  return models[0]->serialize();
}

}  // namespace

std::vector<std::byte> serialize_onnx(const std::vector<Tensor>& inputs,
                                      const std::vector<Tensor>& outputs,
                                      const OnnxExportOptions& options) {
  const std::string bytes = Exporter(options).run(inputs, outputs);
  std::vector<std::byte> out(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

void save_onnx(const std::string& path, const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& outputs, const OnnxExportOptions& options) {
  const std::string bytes = Exporter(options).run(inputs, outputs);
  detail::write_file_atomically(path, std::span<const char>(bytes.data(), bytes.size()), kOp);
}

std::vector<std::byte> serialize_onnx(const std::vector<OnnxInput>& inputs,
                                      const OnnxModelBuilder& build,
                                      const OnnxExportOptions& options) {
  const std::string bytes = export_with_open_batch(inputs, build, options);
  std::vector<std::byte> out(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

void save_onnx(const std::string& path, const std::vector<OnnxInput>& inputs,
               const OnnxModelBuilder& build, const OnnxExportOptions& options) {
  const std::string bytes = export_with_open_batch(inputs, build, options);
  detail::write_file_atomically(path, std::span<const char>(bytes.data(), bytes.size()), kOp);
}

}  // namespace kiln
