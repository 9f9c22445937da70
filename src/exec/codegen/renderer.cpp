// The Renderer (renderer.hpp): what every kernel family shares, spelled through the dialect.
#include "exec/codegen/renderer.hpp"

#include <cinttypes>
#include <cmath>
#include <complex>
#include <cstdio>

#include "kiln/error.hpp"

namespace kiln::detail::codegen {

std::string numbered(const char* prefix, std::int64_t n) {
  std::string name(prefix);
  name += std::to_string(n);
  return name;
}

std::string fill_template(std::string_view tmpl, const std::string* args) {
  std::string out;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '{' && i + 2 < tmpl.size() && tmpl[i + 2] == '}') {
      out += args[tmpl[i + 1] - '0'];
      i += 2;
    } else {
      out += tmpl[i];
    }
  }
  return out;
}

std::string literal(const Scalar& s, DType t, const Dialect& d) {
  char text[64];
  switch (t) {
    case DType::boolean: return s.as<bool>() ? "(int)1" : "(int)0";
    case DType::u8: return "(" + std::string(d.i32) + ")" + std::to_string(s.as<std::uint8_t>());
    case DType::i8: return "(" + std::string(d.i32) + ")" + std::to_string(s.as<std::int8_t>());
    case DType::i16: return "(" + std::string(d.i32) + ")" + std::to_string(s.as<std::int16_t>());
    case DType::i32: {
      const auto v = s.as<std::int32_t>();
      if (v == INT32_MIN) return "(-2147483647 - 1)";
      return "(" + std::string(d.i32) + ")" + std::to_string(v);
    }
    case DType::i64: {
      const auto v = s.as<std::int64_t>();
      if (v == INT64_MIN) return "(-9223372036854775807" + std::string(d.i64_suffix) + " - 1)";
      return "(" + std::string(d.i64) + ")" + std::to_string(v) + std::string(d.i64_suffix);
    }
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16: {
      const double v = t == DType::f64 ? s.as<double>() : s.cast(t).as<double>();
      const std::string type(d.type(t));
      if (std::isnan(v)) return "(" + type + ")" + std::string(d.nan);
      if (std::isinf(v))
        return std::string(v < 0 ? "-" : "") + "(" + type + ")" + std::string(d.infinity);
      std::snprintf(text, sizeof text, "%a", v);
      return "(" + type + ")" + text;
    }
    case DType::c64:
    case DType::c128: {
      const auto z = s.as<std::complex<double>>();
      const DType part = real_type(t);
      const std::string args[] = {std::string(d.type(t)), literal(Scalar(z.real()), part, d),
                                  literal(Scalar(z.imag()), part, d)};
      return fill_template(d.make_complex, args);
    }
  }
  throw Error(ErrorCode::internal_error,
              std::string("a ") + dtype_name(t) + " literal in a generated kernel");
}

std::string cast(const std::string& expr, DType from, DType to, const Dialect& d) {
  if (from == to) return expr;
  // Complex values (convert_value's rules): a real value is the real part, and a complex value
  // as a real type is its real part, nonzero when either part is.
  if (is_complex(to)) {
    const DType part = real_type(to);
    const std::string args[] = {
        std::string(d.type(to)),
        is_complex(from) ? cast("(" + expr + ").x", real_type(from), part, d)
                         : cast(expr, from, part, d),
        is_complex(from) ? cast("(" + expr + ").y", real_type(from), part, d)
                         : literal(Scalar(0.0), part, d)};
    return fill_template(d.make_complex, args);
  }
  if (is_complex(from)) {
    if (to == DType::boolean) return "(int)((" + expr + ").x != 0 || (" + expr + ").y != 0)";
    return cast("(" + expr + ").x", real_type(from), to, d);
  }
  if (is_float(from) && !is_float(to))
    return std::string(to == DType::i32 ? "kiln_to_i32(" : "kiln_to_i64(") + expr + ")";
  // Between float and double, a NaN keeps its sign and payload (semantics/nan_rules.hpp).
  if (d.nan_rule && is_float(from) && is_float(to) && d.type(from) != d.type(to))
    return std::string(to == DType::f64 ? "kiln_f64_of(" : "kiln_f32_of(") + expr + ")";
  return "((" + std::string(d.type(to)) + ")(" + expr + "))";
}

std::string arithmetic(const Dialect& d, const std::string& a, char op, const std::string& b) {
  if (!d.nan_rule) return "(" + a + " " + op + " " + b + ")";
  const char* helper = op == '+' ? "kiln_add(" : op == '-' ? "kiln_sub(" : op == '*' ? "kiln_mul(" : "kiln_div(";
  return helper + a + ", " + b + ")";
}

std::string math(const Dialect& d, const char* function, const std::string& x) {
  const std::string call = std::string(function) + "(" + x + ")";
  if (!d.nan_rule) return call;
  return "kiln_nan1(" + call + ", " + x + ")";
}

void one_item_each(RenderedKernel& out, std::int64_t n, const DeviceTraits& device,
                   int positions_each) {
  const auto group = static_cast<std::int64_t>(std::min<std::size_t>(64, device.max_group));
  const std::int64_t per_group = group * positions_each;
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>((n + per_group - 1) / per_group * group);
}

std::string per_item(const Dialect& d, const char* var, std::int64_t n) {
  const std::string v(var), i64(d.i64);
  return "  " + i64 + " " + v + " = (" + i64 + ")" + std::string(d.global_id) + ";\n  if (" + v +
         " >= " + std::to_string(n) + ") return;\n";
}

namespace {

// `qualifier` and a space, or nothing where the dialect has no such qualifier.
std::string qualified(std::string_view qualifier) {
  return qualifier.empty() ? std::string() : std::string(qualifier) + " ";
}

}  // namespace

const std::string& Renderer::argument(int slot) {
  auto it = args_.find(slot);
  if (it != args_.end()) return it->second;
  const std::string name = "in" + std::to_string(r_.inputs.size());
  r_.inputs.push_back(slot);
  note_type(structure_.nodes()[static_cast<std::size_t>(slot)]->dtype);
  return args_.emplace(slot, name).first->second;
}

std::string Renderer::storage_type(DType t) const {
  if (t == DType::f16) return std::string(d_.f16_storage);
  if (t == DType::bf16) return std::string(d_.u16);
  if (t == DType::boolean || t == DType::u8) return std::string(d_.u8);
  if (t == DType::i8) return std::string(d_.i8);
  if (t == DType::i16) return std::string(d_.i16);
  return std::string(d_.type(t));
}

std::string Renderer::read(const std::string& buffer, const std::string& index, DType t) const {
  if (t == DType::f16) {
    const std::string args[] = {buffer, index};
    return fill_template(d_.load_f16, args);
  }
  if (t == DType::bf16)
    return fill(d_.as_f32, "(" + std::string(d_.u32) + ")" + buffer + "[" + index + "] << 16");
  if (t == DType::boolean) return "(int)(" + buffer + "[" + index + "] != 0)";
  if (is_narrow_integer(t)) return "(" + std::string(d_.i32) + ")" + buffer + "[" + index + "]";
  return buffer + "[" + index + "]";
}

std::string Renderer::write(const std::string& buffer, const std::string& index,
                            const std::string& value, DType t) const {
  if (t == DType::f16) {
    const std::string args[] = {buffer, index, value};
    return fill_template(d_.store_f16, args);
  }
  if (t == DType::bf16)
    return buffer + "[" + index + "] = (" + std::string(d_.u16) + ")(" +
           fill(d_.as_u32, "kiln_round_bf16(" + value + ")") + " >> 16);";
  if (t == DType::boolean)
    return buffer + "[" + index + "] = (" + std::string(d_.u8) + ")(" + value + " != 0);";
  if (is_narrow_integer(t))  // the low bits of the i32 value
    return buffer + "[" + index + "] = (" + storage_type(t) + ")(" + value + ");";
  return buffer + "[" + index + "] = " + value + ";";
}

void Renderer::load(std::string& body, const std::string& name, int slot, const ViewMap* view,
                    const std::string& index) {
  const Node& data = *structure_.nodes()[static_cast<std::size_t>(slot)];
  const std::string& buffer = argument(slot);
  const std::string type(d_.type(data.dtype)), L = i64();
  if (view == nullptr || view->is_identity()) {
    body += "  " + type + " " + name + " = " + read(buffer, index, data.dtype) + ";\n";
    return;
  }
  const std::string opening = "  {\n    " + L + " kp = ";
  body += "  " + type + " " + name + ";\n" + opening + index + ";\n";
  // Layers are walked from the top: the first layer whose valid range a position misses
  // gives the value (its fill), as ViewMap::locate does.
  std::vector<std::string> fills;
  const auto& layers = view->layers();
  for (std::size_t k = layers.size(); k-- > 0;) {
    const ViewLayer& l = layers[k];
    const std::size_t rank = l.shape.size();
    body += "    {\n      " + L + " kq = kp;\n";
    std::string next = number(l.offset);
    std::string misses;  // the condition under which a position lies outside the valid range
    for (std::size_t dim = rank; dim-- > 0;) {
      const std::string c = numbered("c", dim);
      const std::int64_t size = l.shape[dim];
      // A view without elements is never read: no index arithmetic (a division by zero
      // would only make the device compiler warn).
      if (size == 0) continue;
      if (size == 1) {
        if (!l.valid.empty() && (l.valid[dim].first > 0 || l.valid[dim].second <= 0))
          misses = "1";
        continue;
      }
      if (dim > 0)
        body += "      " + L + " " + c + " = kq % " + number(size) + "; kq /= " + number(size) +
                ";\n";
      else
        body += "      " + L + " " + c + " = kq;\n";
      if (l.strides[dim] != 0) next += " + " + c + " * " + number(l.strides[dim]);
      if (!l.valid.empty() && (l.valid[dim].first > 0 || l.valid[dim].second < size) &&
          misses != "1")
        misses += std::string(misses.empty() ? "" : " || ") + c + " < " +
                  number(l.valid[dim].first) + " || " + c + " >= " + number(l.valid[dim].second);
    }
    if (!misses.empty()) {
      fills.push_back(literal(l.fill, data.dtype, d_));
      body += "      if (miss == 0 && (" + misses + ")) miss = " + std::to_string(fills.size()) +
              ";\n";
    }
    body += "      kp = " + next + ";\n    }\n";
  }
  if (!fills.empty()) {
    // Declared first, so that every layer can set it.
    const auto at = body.rfind(opening);
    body.insert(at + 4, "    int miss = 0;\n");
    std::string value = read(buffer, "kp", data.dtype);
    for (std::size_t f = fills.size(); f-- > 0;)
      value = "miss == " + std::to_string(f + 1) + " ? " + fills[f] + " : " + value;
    body += "    " + name + " = " + value + ";\n  }\n";
  } else {
    body += "    " + name + " = " + read(buffer, "kp", data.dtype) + ";\n  }\n";
  }
}

std::string Renderer::code(std::string& body, const KernelIr& ir, const std::string& index,
                           std::vector<std::string>* stores) {
  std::vector<std::string> reg(static_cast<std::size_t>(ir.registers));
  std::vector<DType> reg_type(static_cast<std::size_t>(ir.registers));
  int next = 0;
  for (const IrInstruction& ins : ir.code) {
    const std::string name = numbered("v", next++);
    const auto out = static_cast<std::size_t>(ins.out);
    if (ins.load >= 0) {
      const IrLoad& l = ir.loads[static_cast<std::size_t>(ins.load)];
      const ViewMap* view = l.through >= 0
                                ? &structure_.nodes()[static_cast<std::size_t>(l.through)]->view
                                : nullptr;
      load(body, name, l.node, view, index);
      reg[out] = name;
      reg_type[out] = l.type;
      continue;
    }
    const IrStep& s = ins.step;
    const OpInfo& info = op_info(s.op);
    std::string args[3];
    for (int a = 0; a < s.arity; ++a) {
      const auto r = static_cast<std::size_t>(s.args[a]);
      // where's condition keeps its type: a nonzero i64 must not become 0 as an i32.
      args[a] = info.kind == OpKind::ternary && a == 0 ? reg[r]
                                                       : cast(reg[r], reg_type[r], s.compute, d_);
    }
    note_type(s.compute);
    note_type(s.dtype);
    std::string expr;
    DType from = s.compute;
    if (info.kind == OpKind::ternary) {
      expr = "(" + args[0] + " != 0 ? " + args[1] + " : " + args[2] + ")";
    } else if (is_complex(s.compute)) {
      expr = fill_template(complex_form(s.op), args);
      if (s.compute == DType::c64 && d_.double_arithmetic && complex_form_needs_f64(s.op))
        note_type(DType::f64);
      if (info.type_rule == TypeRule::to_bool) from = DType::i32;
    } else if (!info.c_template.empty()) {
      expr = fill_template(info.c_template, args);
      if (info.type_rule == TypeRule::to_i32 || info.type_rule == TypeRule::to_bool)
        from = DType::i32;  // 0/1 or -1/1 as an int
    } else {
      throw Error(ErrorCode::internal_error,
                  std::string(info.name) + " has no C template for " + std::string(d_.name));
    }
    std::string value = cast(expr, from, s.dtype, d_);
    // A NaN result is the reference's NaN (semantics/nan_rules.hpp): the first NaN operand, or
    // the host's NaN.
    if (d_.nan_rule && is_float(s.compute) && d_.type(s.compute) == d_.type(s.dtype) &&
        s.op != Op::convert &&
        (info.kind == OpKind::unary || info.kind == OpKind::binary))
      value = info.kind == OpKind::unary
                  ? "kiln_nan1(" + value + ", " + args[0] + ")"
                  : "kiln_nan2(" + value + ", " + args[0] + ", " + args[1] + ")";
    if (is_bool(s.rounds_to)) {
      // A bool node: true where its value is non-zero; a conversion tests the operand itself
      // (0.5 is true), not its value converted to int first.
      const auto operand = static_cast<std::size_t>(s.args[0]);
      value = s.op != Op::convert           ? "(int)(" + value + " != 0)"
              : is_complex(reg_type[operand]) ? cast(reg[operand], reg_type[operand], DType::boolean, d_)
                                              : "(int)(" + reg[operand] + " != 0)";
    } else if (is_narrow_integer(s.rounds_to)) {
      // A narrow integer node: its i32 value wrapped to its width, through the unsigned type of
      // that width (an exact conversion) and back to a signed one.
      const std::string i32(d_.i32);
      value = s.rounds_to == DType::u8
                  ? "(" + i32 + ")(" + std::string(d_.u8) + ")(" + value + ")"
                  : "(" + i32 + ")(" + storage_type(s.rounds_to) + ")(" +
                        (s.rounds_to == DType::i8 ? std::string(d_.u8) : std::string(d_.u16)) +
                        ")(" + value + ")";
    } else if (is_narrow_float(s.rounds_to)) {
      // A 16-bit float node: its float value rounded to its type. A conversion from f64 or an
      // integer rounds once, from the operand's value rounded to odd.
      const auto operand = static_cast<std::size_t>(s.args[0]);
      // (From a complex value: its real part.)
      const bool complex = is_complex(reg_type[operand]);
      const DType from_type = complex ? real_type(reg_type[operand]) : reg_type[operand];
      if (s.op == Op::convert && from_type != DType::f32) {
        note_type(DType::f64);
        value = "kiln_odd_f32((double)" + (complex ? "(" + reg[operand] + ").x" : reg[operand]) +
                ")";
      }
      value = std::string(s.rounds_to == DType::f16 ? "kiln_round_f16(" : "kiln_round_bf16(") +
              value + ")";
    }
    body += "  " + std::string(d_.type(s.dtype)) + " " + name + " = " + value + ";\n";
    reg[out] = name;
    reg_type[out] = s.dtype;
    if (ins.store >= 0 && stores != nullptr) (*stores)[static_cast<std::size_t>(ins.store)] = name;
  }
  return reg[static_cast<std::size_t>(ir.result)];
}

void Renderer::finish(const std::string& head, const std::vector<std::string>& outputs,
                      const std::string& body, const std::string& extra,
                      const std::string& after) {
  std::string params;
  for (const std::string& o : outputs) params += (params.empty() ? "" : ", ") + o;
  for (std::size_t i = 0; i < r_.inputs.size(); ++i) {
    const Node& n = *structure_.nodes()[static_cast<std::size_t>(r_.inputs[i])];
    params += (params.empty() ? "" : ", ") + qualified(d_.global) + "const " +
              storage_type(n.dtype) + "* in" + std::to_string(i);
  }
  if (r_.seed_of >= 0) params += ", " + std::string(d_.u64) + " seed";
  if (r_.index_check) params += ", " + qualified(d_.global) + "int* bad";
  params += extra;
  std::string src(d_.preamble);
  if (r_.uses_f64) src += d_.fp64_preamble;
  src += helpers_for(body + after, d_, r_.uses_f64);
  src += head + " " + r_.entry + "(" + params + ") {\n" + body + "}\n" + after;
  r_.source = std::move(src);
}

RenderedKernel Renderer::per_item_kernel(std::int64_t n, const DeviceTraits& device,
                                         const std::vector<std::string>& outputs,
                                         const std::string& body, const std::string& before,
                                         const std::string& extra, const std::string& after) {
  one_item_each(r_, n, device);
  finish(before + std::string(d_.kernel), outputs, body, extra, after);
  return std::move(r_);
}

std::vector<std::string> Renderer::begin(const char* entry, DType t) {
  r_.entry = entry;
  r_.outputs = 1;
  return {output(t, 0)};
}

std::string Renderer::output(DType t, int i) {
  note_type(t);
  return qualified(d_.global) + storage_type(t) + "* out" + std::to_string(i);
}

}  // namespace kiln::detail::codegen
