// The reference values of the narrow types (f16, bf16, bool, u8, i8, i16): what every backend's
// kernels of these types must equal. A 16-bit float's arithmetic is f32's: a node reads its 16-bit
// inputs as the f32 values they are (exactly), computes the op as the f32 node would, and rounds
// the result to its type, to nearest, ties to even. A bool's arithmetic is i32's on 0 and 1, a
// result being true where it is non-zero, and a narrow integer's is i32's, each result wrapped to
// its width. An op that only moves values (a conversion, copy, concat or view) is computed in f64
// instead (in i64 to a narrow integer from integers), so that an f64 or a large integer is rounded
// once, not first to f32, and 0.5 becomes true, not an i32 0 first.
//
// The widened node is a private stand-in made here for one kernel, never part of a graph: the
// same op, attributes and view, of the wider type, over stand-ins of its narrow inputs that hold
// their values converted.
#include <memory>
#include <vector>

#include "exec/reference_kernels.hpp"
#include "graph/narrow_floats.hpp"

namespace kiln::detail {

namespace {

// A buffer of the values of `values` (of a narrow type) in its arithmetic type.
std::shared_ptr<Buffer> widened_values(const Buffer& values) {
  auto wide = std::make_shared<Buffer>(arithmetic_type(values.dtype()), values.numel());
  if (is_narrow_integer(values.dtype())) {
    auto* out = wide->as<std::int32_t>();
    for (std::int64_t i = 0; i < values.numel(); ++i) out[i] = values.get<std::int32_t>(i);
    return wide;
  }
  if (is_bool(values.dtype())) {
    const auto* in = values.as<std::uint8_t>();
    auto* out = wide->as<std::int32_t>();
    for (std::int64_t i = 0; i < values.numel(); ++i) out[i] = in[i] != 0 ? 1 : 0;
    return wide;
  }
  const auto* in = values.as<std::uint16_t>();
  float* out = wide->as<float>();
  const bool half = values.dtype() == DType::f16;
  for (std::int64_t i = 0; i < values.numel(); ++i)
    out[i] = half ? f16_to_f32(in[i]) : bf16_to_f32(in[i]);
  return wide;
}

// A stand-in of `input` that reads in its arithmetic type where `input` is of a narrow type: a
// node holding its values widened, or a view of the same map over a widened base. Other inputs are
// themselves.
NodePtr widened(const NodePtr& input) {
  if (input == nullptr || !is_narrow(input->dtype)) return input;
  auto wide = std::make_shared<Node>(input->result ? Op::store : input->op,
                                     arithmetic_type(input->dtype), input->shape,
                                     std::vector<NodePtr>{}, input->attrs);
  if (input->result) {
    wide->result = widened_values(*input->result);
  } else if (input->is_view()) {
    wide->view = input->view;
    wide->view_base = widened(input->view_base);
  }
  // Any other input has no values yet, and its stand-in has none either: the kernel reports it.
  return wide;
}

bool reads_narrow_types(const Node& n) {
  for (const NodePtr& in : n.inputs)
    if (is_narrow(in->dtype)) return true;
  return n.view_base != nullptr && is_narrow(n.view_base->dtype);
}

}  // namespace

void run_reference_kernel(const Node& n, Buffer& out) {
  const bool generated = n.op == Op::random_uniform;
  const bool narrow_out = is_narrow(n.dtype) && (generated || n.info().kind != OpKind::source);
  if (!narrow_out && !reads_narrow_types(n)) return run_typed_reference_kernel(n, out);

  // Ops that move values (conversions, copies, joins, views) round each value once, from f64,
  // which holds every i32 and f64 exactly (and every non-zero value as non-zero); arithmetic is
  // the arithmetic type's.
  const OpKind kind = n.info().kind;
  const bool moves_values = n.op == Op::convert || kind == OpKind::copy ||
                            kind == OpKind::concat || kind == OpKind::view;
  // (A conversion of complex values to bool tests both parts, so those move in c128.)
  bool reads_complex = n.view_base != nullptr && is_complex(n.view_base->dtype);
  for (const NodePtr& in : n.inputs) reads_complex = reads_complex || is_complex(in->dtype);
  // (Integers move to a narrow integer in i64, so that they wrap to its width, not saturate.)
  bool reads_inexact = reads_complex || (n.view_base != nullptr && is_inexact(n.view_base->dtype));
  for (const NodePtr& in : n.inputs) reads_inexact = reads_inexact || is_inexact(in->dtype);
  const DType moved_in = reads_complex                                           ? DType::c128
                         : is_narrow_integer(n.dtype) && !reads_inexact ? DType::i64
                                                                                 : DType::f64;
  const DType wide_type = !narrow_out     ? n.dtype
                          : moves_values ? moved_in
                                         : arithmetic_type(n.dtype);
  std::vector<NodePtr> inputs;
  inputs.reserve(n.inputs.size());
  for (const NodePtr& in : n.inputs) inputs.push_back(widened(in));
  Node wide(n.op, wide_type, n.shape, std::move(inputs), n.attrs);
  wide.name = n.name;
  if (n.is_view()) {
    wide.view = n.view;
    wide.view_base = widened(n.view_base);
  }
  if (!narrow_out) return run_typed_reference_kernel(wide, out);

  Buffer values(wide_type, n.numel());
  run_typed_reference_kernel(wide, values);
  if (is_narrow_integer(n.dtype)) {
    for (std::int64_t i = 0; i < values.numel(); ++i) out.set(i, values.scalar(i));
    return;
  }
  if (is_bool(n.dtype)) {
    auto* o = out.as<std::uint8_t>();
    for (std::int64_t i = 0; i < values.numel(); ++i) o[i] = values.get<bool>(i) ? 1 : 0;
    return;
  }
  auto* o = out.as<std::uint16_t>();
  const bool half = n.dtype == DType::f16;
  for (std::int64_t i = 0; i < values.numel(); ++i) {
    const double v = values.get<double>(i);
    o[i] = half ? f16_nearest(v) : bf16_nearest(v);
  }
}

}  // namespace kiln::detail
