#include "exec/codegen/render.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "exec/reduction_geometry.hpp"
#include "exec/schedule_cache.hpp"
#include "exec/window2d.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

// "<prefix><n>", built in place: g++ 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
std::string numbered(const char* prefix, std::int64_t n) {
  std::string name(prefix);
  name += std::to_string(n);
  return name;
}


// Helpers the registry's C templates name (kiln_add, kiln_pow, ...), with the integer rules of
// semantics/integer.hpp (wrapping through unsigned types, division by zero giving 0) and the NaN
// rules of semantics/nan_rules.hpp, plus conversions to integers as convert_value does them (NaN
// gives 0, out-of-range values saturate, the rest truncate). A kernel gets only the helpers it
// names, for the types it uses: compilers such as PoCL's take time for every function in the
// source. In the definitions $T is the type, $U its unsigned type, $F a float literal's suffix.
struct Helper {
  std::string_view name;
  std::string_view integer;   // for int and long
  std::string_view floating;  // for float and double
};
constexpr Helper kHelpers[] = {
    {"kiln_add", "$T kiln_add($T a, $T b) { return ($T)(($U)a + ($U)b); }",
     "$T kiln_add($T a, $T b) { return a + b; }"},
    {"kiln_sub", "$T kiln_sub($T a, $T b) { return ($T)(($U)a - ($U)b); }",
     "$T kiln_sub($T a, $T b) { return a - b; }"},
    {"kiln_mul", "$T kiln_mul($T a, $T b) { return ($T)(($U)a * ($U)b); }",
     "$T kiln_mul($T a, $T b) { return a * b; }"},
    {"kiln_div",
     "$T kiln_div($T a, $T b) { return b == 0 ? ($T)0 : b == -1 ? ($T)(($U)0 - ($U)a) : a / b; }",
     "$T kiln_div($T a, $T b) { return a / b; }"},
    {"kiln_abs", "$T kiln_abs($T x) { return x < 0 ? ($T)(($U)0 - ($U)x) : x; }",
     "$T kiln_abs($T x) { return fabs(x); }"},
    {"kiln_angle", "",
     "$T kiln_angle($T x) { return x != x ? x : x < 0 ? 3.14159265358979323846$F : 0; }"},
    {"kiln_min", "$T kiln_min($T a, $T b) { return a < b ? a : b; }",
     "$T kiln_min($T a, $T b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }"},
    {"kiln_max", "$T kiln_max($T a, $T b) { return a > b ? a : b; }",
     "$T kiln_max($T a, $T b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }"},
    {"kiln_pow",
     "$T kiln_pow($T b, $T e) {\n"
     "  if (e < 0) return b == 1 ? ($T)1 : b == -1 ? (e % 2 == 0 ? ($T)1 : ($T)-1) : ($T)0;\n"
     "  $U r = 1, x = ($U)b;\n"
     "  while (e > 0) { if (e & 1) r *= x; x *= x; e >>= 1; }\n"
     "  return ($T)r;\n}",
     "$T kiln_pow($T a, $T b) { return pow(a, b); }"},
    {"kiln_replaces",
     "int kiln_replaces($T c, $T b, int maximum) { return maximum ? c > b : c < b; }",
     "int kiln_replaces($T c, $T b, int maximum) {\n"
     "  if (b != b) return 0;\n  if (c != c) return 1;\n  return maximum ? c > b : c < b;\n}"},
    {"kiln_before",
     "int kiln_before($T a, $T b, int descending) { return descending ? b < a : a < b; }",
     "int kiln_before($T a, $T b, int descending) {\n"
     "  int na = a != a, nb = b != b;\n"
     "  if (na || nb) return descending ? (na && !nb) : (nb && !na);\n"
     "  return descending ? b < a : a < b;\n}"},
    {"kiln_to_i32", "",
     "int kiln_to_i32($T v) {\n"
     "  return v != v ? 0 : v <= -2147483648.0$F ? (-2147483647 - 1)\n"
     "       : v >= 2147483647.0$F ? 2147483647 : (int)v;\n}"},
    {"kiln_to_i64", "",
     "long kiln_to_i64($T v) {\n"
     "  return v != v ? 0 : v <= -9223372036854775808.0$F ? (-9223372036854775807L - 1)\n"
     "       : v >= 9223372036854775807.0$F ? 9223372036854775807L : (long)v;\n}"},
};

// Helpers of the 16-bit floats (graph/narrow_floats.hpp's rules), one definition each: rounding a
// float to the nearest f16 or bf16 (kept as a float), and rounding a double to float by rounding to
// odd, so that a second rounding to a 16-bit type gives the double's nearest value.
struct NarrowHelper {
  std::string_view name;
  std::string_view definition;
};
constexpr NarrowHelper kNarrowHelpers[] = {
    {"kiln_round_f16",
     "float kiln_round_f16(float x) {\n"
     "  ushort h;\n  vstore_half_rte(x, 0, (half*)&h);\n  return vload_half(0, (const half*)&h);\n}"},
    {"kiln_round_bf16",
     "float kiln_round_bf16(float x) {\n"
     "  uint u = as_uint(x);\n"
     "  if ((u & 0x7fffffffu) > 0x7f800000u) return as_float((u & 0x80000000u) | 0x7fc00000u);\n"
     "  return as_float((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);\n}"},
    {"kiln_odd_f32",
     "float kiln_odd_f32(double x) {\n"
     "  float t = (float)x;\n"
     "  if ((double)t == x || x != x) return t;\n"
     "  if (fabs((double)t) > fabs(x)) t = nextafter(t, 0.0f);\n"
     "  return as_float(as_uint(t) | 1u);\n}"},
};

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// The definitions of the helpers `body` names, for each type the kernel uses.
std::string helpers_for(const std::string& body, const Dialect& d, bool f64) {
  struct Type {
    DType t;
    std::string_view unsigned_name, suffix;
  };
  const Type types[] = {{DType::i32, d.u32, ""},
                        {DType::i64, d.u64, ""},
                        {DType::f32, "", "f"},
                        {DType::f64, "", ""}};
  std::string out;
  for (const NarrowHelper& h : kNarrowHelpers)
    if (body.find(std::string(h.name) + "(") != std::string::npos)
      out += std::string(d.function) + " " + std::string(h.definition) + "\n";
  for (const Helper& h : kHelpers) {
    if (body.find(std::string(h.name) + "(") == std::string::npos) continue;
    for (const Type& t : types) {
      if (t.t == DType::f64 && !f64) continue;
      const std::string_view def = is_float(t.t) ? h.floating : h.integer;
      if (def.empty()) continue;
      std::string text = replace_all(std::string(def), "$T", d.type(t.t));
      text = replace_all(std::move(text), "$U", t.unsigned_name);
      text = replace_all(std::move(text), "$F", t.suffix);
      out += std::string(d.function) + " " + text + "\n";
    }
  }
  return out;
}

std::string number(std::int64_t v) { return std::to_string(v); }

// A literal of type `t` with the value of `s` converted as the CPU converts it.
std::string literal(const Scalar& s, DType t, const Dialect& d) {
  char text[64];
  switch (t) {
    case DType::boolean: return s.as<bool>() ? "(int)1" : "(int)0";
    case DType::i32: {
      const auto v = s.as<std::int32_t>();
      if (v == INT32_MIN) return "(-2147483647 - 1)";
      return "(" + std::string(d.i32) + ")" + std::to_string(v);
    }
    case DType::i64: {
      const auto v = s.as<std::int64_t>();
      if (v == INT64_MIN) return "(-9223372036854775807L - 1)";
      return "(" + std::string(d.i64) + ")" + std::to_string(v) + "L";
    }
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16: {
      const double v = t == DType::f64 ? s.as<double>() : s.cast(t).as<double>();
      const std::string type(d.type(t));
      if (std::isnan(v)) return "(" + type + ")NAN";
      if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "(" + type + ")INFINITY";
      std::snprintf(text, sizeof text, "%a", v);
      return "(" + type + ")" + text;
    }
    case DType::c64:
    case DType::c128: break;  // never rendered (FusionPolicy::complex_types)
  }
  throw Error(ErrorCode::internal_error,
              std::string("a ") + dtype_name(t) + " literal in a generated kernel");
}

// `expr`, a value of type `from`, as type `to` (convert_value's rules).
std::string cast(const std::string& expr, DType from, DType to, const Dialect& d) {
  if (from == to) return expr;
  if (is_float(from) && !is_float(to))
    return std::string(to == DType::i32 ? "kiln_to_i32(" : "kiln_to_i64(") + expr + ")";
  return "((" + std::string(d.type(to)) + ")(" + expr + "))";
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

// The opening of a kernel with one work-item per position of `n`: the position in `var`, and
// the work-items past the end (the launch is rounded up to whole work-groups) leaving at once.
std::string per_item(const Dialect& d, const char* var, std::int64_t n) {
  const std::string v(var);
  return "  long " + v + " = (long)" + std::string(d.global_id) + ";\n  if (" + v +
         " >= " + std::to_string(n) + ") return;\n";
}

// The launch of a kernel with one work-item per position of `n` positions.
void one_item_each(RenderedKernel& out, std::int64_t n, const DeviceTraits& device) {
  const auto group = static_cast<std::int64_t>(std::min<std::size_t>(64, device.max_group));
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>((n + group - 1) / group * group);
}

class Renderer {
 public:
  Renderer(const GraphStructure& structure, const Dialect& dialect)
      : structure_(structure), d_(dialect) {}

  RenderedKernel& result() { return r_; }

  // The kernel's argument for the buffer of the node at `slot`.
  const std::string& argument(int slot) {
    auto it = args_.find(slot);
    if (it != args_.end()) return it->second;
    const std::string name = "in" + std::to_string(r_.inputs.size());
    r_.inputs.push_back(slot);
    note_type(structure_.nodes()[static_cast<std::size_t>(slot)]->dtype);
    return args_.emplace(slot, name).first->second;
  }

  void note_type(DType t) {
    if (t == DType::f64) r_.uses_f64 = true;
  }

  // The element type of a buffer of type t: a 16-bit float is half (f16, read and written with
  // vload_half and vstore_half_rte) or its bits (bf16); a bool one byte.
  std::string storage_type(DType t) const {
    if (t == DType::f16) return "half";
    if (t == DType::bf16) return "ushort";
    if (t == DType::boolean) return "uchar";
    return std::string(d_.type(t));
  }

  // Element `index` of `buffer` (of type t), as a value of d_.type(t) (float for 16-bit floats,
  // int 0/1 for bool).
  static std::string read(const std::string& buffer, const std::string& index, DType t) {
    if (t == DType::f16) return "vload_half(" + index + ", " + buffer + ")";
    if (t == DType::bf16) return "as_float((uint)" + buffer + "[" + index + "] << 16)";
    if (t == DType::boolean) return "(int)(" + buffer + "[" + index + "] != 0)";
    return buffer + "[" + index + "]";
  }

  // The statement writing `value` (of d_.type(t)) as element `index` of `buffer` (of type t).
  static std::string write(const std::string& buffer, const std::string& index,
                           const std::string& value, DType t) {
    if (t == DType::f16) return "vstore_half_rte(" + value + ", " + index + ", " + buffer + ");";
    if (t == DType::bf16)
      return buffer + "[" + index + "] = (ushort)(as_uint(kiln_round_bf16(" + value +
             ")) >> 16);";
    if (t == DType::boolean) return buffer + "[" + index + "] = (uchar)(" + value + " != 0);";
    return buffer + "[" + index + "] = " + value + ";";
  }

  // Statements declaring `name` (of the loaded node's type) as element `index` of the buffer of
  // node `slot`, read through the map of `view` (null: row-major).
  void load(std::string& body, const std::string& name, int slot, const ViewMap* view,
            const std::string& index) {
    const Node& data = *structure_.nodes()[static_cast<std::size_t>(slot)];
    const std::string& buffer = argument(slot);
    const std::string type(d_.type(data.dtype));
    if (view == nullptr || view->is_identity()) {
      body += "  " + type + " " + name + " = " + read(buffer, index, data.dtype) + ";\n";
      return;
    }
    body += "  " + type + " " + name + ";\n  {\n    long kp = " + index + ";\n";
    // Layers are walked from the top: the first layer whose valid range a position misses
    // gives the value (its fill), as ViewMap::locate does.
    std::vector<std::string> fills;
    const auto& layers = view->layers();
    for (std::size_t k = layers.size(); k-- > 0;) {
      const ViewLayer& l = layers[k];
      const std::size_t rank = l.shape.size();
      body += "    {\n      long kq = kp;\n";
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
          body += "      long " + c + " = kq % " + number(size) + "; kq /= " + number(size) + ";\n";
        else
          body += "      long " + c + " = kq;\n";
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
      const auto at = body.rfind("  {\n    long kp = ");
      body.insert(at + 4, "    int miss = 0;\n");
      std::string value = read(buffer, "kp", data.dtype);
      for (std::size_t f = fills.size(); f-- > 0;)
        value = "miss == " + std::to_string(f + 1) + " ? " + fills[f] + " : " + value;
      body += "    " + name + " = " + value + ";\n  }\n";
    } else {
      body += "    " + name + " = " + read(buffer, "kp", data.dtype) + ";\n  }\n";
    }
  }

  // The statements of a lowered body computed at element `index`; returns the name of the
  // result, and sets each stored node's value name in `stores`.
  std::string code(std::string& body, const KernelIr& ir, const std::string& index,
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
      } else if (!info.c_template.empty()) {
        expr = fill_template(info.c_template, args);
        if (info.type_rule == TypeRule::to_i32 || info.type_rule == TypeRule::to_bool)
          from = DType::i32;  // 0/1 or -1/1 as an int
      } else {
        throw Error(ErrorCode::internal_error,
                    std::string(info.name) + " has no C template for " + std::string(d_.name));
      }
      std::string value = cast(expr, from, s.dtype, d_);
      if (is_bool(s.rounds_to)) {
        // A bool node: true where its value is non-zero; a conversion tests the operand itself
        // (0.5 is true), not its value converted to int first.
        const auto operand = static_cast<std::size_t>(s.args[0]);
        value = s.op == Op::convert ? "(int)(" + reg[operand] + " != 0)"
                                    : "(int)(" + value + " != 0)";
      } else if (is_narrow_float(s.rounds_to)) {
        // A 16-bit float node: its float value rounded to its type. A conversion from f64 or an
        // integer rounds once, from the operand's value rounded to odd.
        const auto operand = static_cast<std::size_t>(s.args[0]);
        if (s.op == Op::convert && reg_type[operand] != DType::f32) {
          note_type(DType::f64);
          value = "kiln_odd_f32((double)" + reg[operand] + ")";
        }
        value = std::string(s.rounds_to == DType::f16 ? "kiln_round_f16(" : "kiln_round_bf16(") +
                value + ")";
      }
      body += "  " + std::string(d_.type(s.dtype)) + " " + name + " = " + value + ";\n";
      reg[out] = name;
      reg_type[out] = s.dtype;
      if (ins.store >= 0 && stores != nullptr)
        (*stores)[static_cast<std::size_t>(ins.store)] = name;
    }
    return reg[static_cast<std::size_t>(ir.result)];
  }

  // The source: preamble, helpers, then the kernel text `kernel` whose buffer parameters are
  // `outputs` and the inputs the loads named.
  void finish(const std::string& head, const std::vector<std::string>& outputs,
              const std::string& body) {
    std::string params;
    for (const std::string& o : outputs) params += (params.empty() ? "" : ", ") + o;
    for (std::size_t i = 0; i < r_.inputs.size(); ++i) {
      const Node& n = *structure_.nodes()[static_cast<std::size_t>(r_.inputs[i])];
      params += (params.empty() ? "" : ", ") + std::string(d_.global) + " const " +
                storage_type(n.dtype) + "* in" + std::to_string(i);
    }
    if (r_.seed_of >= 0) params += ", " + std::string(d_.u64) + " seed";
    if (r_.index_check) params += ", " + std::string(d_.global) + " int* bad";
    std::string src(d_.preamble);
    if (r_.uses_f64) src += d_.fp64_preamble;
    src += helpers_for(body, d_, r_.uses_f64);
    src += head + " " + r_.entry + "(" + params + ") {\n" + body + "}\n";
    r_.source = std::move(src);
  }

  // Ends a kernel of one work-item per position of `n`; `before` (helper functions) goes in
  // front of the entry point.
  RenderedKernel per_item_kernel(std::int64_t n, const DeviceTraits& device,
                                 const std::vector<std::string>& outputs, const std::string& body,
                                 const std::string& before = {}) {
    one_item_each(r_, n, device);
    finish(before + std::string(d_.kernel), outputs, body);
    return std::move(r_);
  }

  // Names the entry point of a kernel with one output, of type `t`; returns its parameters.
  std::vector<std::string> begin(const char* entry, DType t) {
    r_.entry = entry;
    r_.outputs = 1;
    return {output(t, 0)};
  }

  std::string output(DType t, int i) {
    note_type(t);
    return std::string(d_.global) + " " + storage_type(t) + "* out" + std::to_string(i);
  }

  const GraphStructure& structure_;
  const Dialect& d_;
  RenderedKernel r_;
  std::map<int, std::string> args_;
};

RenderedKernel elementwise(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                           const Dialect& d, const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  out.entry = "kiln_elementwise";
  const std::int64_t n = k.root->numel();
  std::vector<std::string> outputs{r.output(k.root->dtype, 0)};
  for (std::size_t i = 0; i < k.stored.size(); ++i)
    outputs.push_back(r.output(k.stored[i]->dtype, static_cast<int>(i) + 1));
  out.outputs = static_cast<int>(outputs.size());
  std::string body = per_item(d, "i", n);
  std::string value;
  if (k.kind == Kernel::Kind::materialize) {
    const KernelInput& in = k.inputs[0];
    value = "x";
    r.load(body, value, structure.slot(in.node), in.view, "i");
  } else {
    std::vector<std::string> stores(k.stored.size());
    value = r.code(body, ir, "i", &stores);
    for (std::size_t s = 0; s < stores.size(); ++s)
      body += "  " +
              Renderer::write("out" + std::to_string(s + 1), "i", stores[s], k.stored[s]->dtype) +
              "\n";
  }
  body += "  " + Renderer::write("out0", "i", value, k.root->dtype) + "\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// One work-group per output: each work-item accumulates the reduced positions l, l + L, ... in
// order, then the work-group merges the partial results in a fixed tree.
RenderedKernel reduction(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                         const Dialect& d, const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const Node& input = *root.inputs[0];
  std::int64_t outer = 0, reduced = 0, inner = 0;
  as_block(root, input.shape, outer, reduced, inner);
  const Op op = root.op;
  const bool arg = op == Op::argmax || op == Op::argmin;
  const bool extreme = arg || op == Op::min || op == Op::max;
  const bool maximum = op == Op::max || op == Op::argmax;
  // 16-bit floats are reduced as the floats they are, and a 16-bit result rounded when written.
  const DType producer =
      arithmetic_type(k.body.empty() ? k.inputs[0].node->dtype : k.body.back()->dtype);
  const DType value_type = arithmetic_type(arg ? producer : root.dtype);
  const DType out_type = arithmetic_type(root.dtype);
  // Float sums and products accumulate in double, as semantics/reduction.hpp does, where the
  // device has double; integers wrap in their own type.
  const DType acc_type =
      is_float(value_type) && !extreme ? (device.fp64 ? DType::f64 : value_type) : value_type;
  r.note_type(acc_type);
  const std::string T(d.type(value_type)), A(d.type(acc_type));
  int group = 1;
  while (group < 256 && group < reduced && static_cast<std::size_t>(group) * 2 <= device.max_group)
    group *= 2;

  std::vector<std::string> outputs = r.begin("kiln_reduce", root.dtype);
  std::string body;
  body += "  long g = (long)" + std::string(d.group_id) + ";\n";
  body += "  int l = (int)" + std::string(d.local_id) + ";\n";
  body += "  long base = (g / " + number(inner) + ") * " + number(reduced * inner) + " + g % " +
          number(inner) + ";\n";
  if (extreme) {
    body += "  " + T + " best = 0;\n  long at = -1;\n";
  } else {
    body += "  " + A + " acc = " + (op == Op::prod ? "1" : "0") + ";\n";
  }
  body += "  for (long j = l; j < " + number(reduced) + "; j += " + std::to_string(group) + ") {\n";
  body += "  long p = base + j * " + number(inner) + ";\n";
  std::string value;
  if (k.body.empty()) {
    value = "x";
    r.load(body, value, structure.slot(k.inputs[0].node), k.inputs[0].view, "p");
  } else {
    value = r.code(body, ir, "p", nullptr);
  }
  const std::string v = cast(value, producer, value_type, d);
  if (extreme) {
    body += "  " + T + " y = " + v + ";\n";
    body += "  if (at < 0 || kiln_replaces(y, best, " + std::string(maximum ? "1" : "0") +
            ")) { best = y; at = j; }\n";
  } else {
    const std::string y = cast(v, value_type, acc_type, d);
    body +=
        "  acc = " + std::string(op == Op::prod ? "kiln_mul" : "kiln_add") + "(acc, " + y + ");\n";
  }
  body += "  }\n";
  const std::string local(d.local), barrier(d.barrier);
  const std::string g = std::to_string(group);
  if (extreme) {
    body += "  " + local + " " + T + " bests[" + g + "];\n  " + local + " long ats[" + g +
            "];\n  bests[l] = best;\n  ats[l] = at;\n";
  } else {
    body += "  " + local + " " + A + " accs[" + g + "];\n  accs[l] = acc;\n";
  }
  body += "  " + barrier + ";\n";
  body += "  for (int s = " + std::to_string(group / 2) + "; s > 0; s >>= 1) {\n";
  body += "    if (l < s) {\n";
  if (extreme) {
    // The later position wins only when it replaces the other by the rules, or ties with it
    // (neither replaces the other) from an earlier position: the first extreme, the first NaN.
    body += "      " + T + " b = bests[l + s];\n      long a = ats[l + s];\n";
    body += "      " + T + " c = bests[l];\n      long e = ats[l];\n";
    const std::string mx = maximum ? "1" : "0";
    body += "      if (a >= 0 && (e < 0 || kiln_replaces(b, c, " + mx +
            ") || (!kiln_replaces(c, b, " + mx + ") && a < e))) { bests[l] = b; ats[l] = a; }\n";
  } else {
    body += "      accs[l] = " + std::string(op == Op::prod ? "kiln_mul" : "kiln_add") +
            "(accs[l], accs[l + s]);\n";
  }
  body += "    }\n    " + barrier + ";\n  }\n";
  body += "  if (l == 0) {\n";
  std::string result;
  if (arg) {
    result = "ats[0]";
    result = cast(result, DType::i64, out_type, d);
  } else if (extreme) {
    result = cast("bests[0]", value_type, out_type, d);
  } else {
    std::string total = "accs[0]";
    if (op == Op::mean && is_float(acc_type))
      total = "(accs[0] / (" + A + ")" + number(reduced) + ")";
    result = cast(cast(total, acc_type, value_type, d), value_type, out_type, d);
  }
  body += "    " + Renderer::write("out0", "g", result, root.dtype) + "\n";
  body += "  }\n";
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>(outer * inner) * out.local_size;
  char head[160];
  std::snprintf(head, sizeof head, std::string(d.fixed_group).c_str(), group);
  r.finish(std::string(head) + " " + std::string(d.kernel), outputs, body);
  return std::move(out);
}

// One work-item per output element, summing over k in order with the reference's accumulator
// (double for floats where the device has it, wrapping integers), so the values are the
// reference's.
RenderedKernel matrix_product(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                              const DeviceTraits& device) {
  Renderer r(structure, d);
  const Node& root = *k.root;
  const std::size_t rank = root.shape.size();
  const std::int64_t m = root.shape[rank - 2], p = root.shape[rank - 1];
  const std::int64_t inner = root.inputs[0]->shape[rank - 1];
  const std::int64_t n = root.numel();
  const DType t = root.dtype;
  const DType acc = is_float(t) && device.fp64 ? DType::f64 : t;
  r.note_type(acc);
  const std::string A(d.type(acc));
  std::vector<std::string> outputs = r.begin("kiln_matmul", t);
  std::string body = per_item(d, "i", n);
  body += "  long j = i % " + number(p) + ";\n  long row = (i / " + number(p) + ") % " + number(m) +
          ";\n  long batch = i / " + number(m * p) + ";\n";
  body += "  " + A + " acc = 0;\n";
  body += "  for (long l = 0; l < " + number(inner) + "; ++l) {\n";
  const KernelInput& a = k.inputs[0];
  const KernelInput& b = k.inputs[1];
  r.load(body, "x", structure.slot(a.node), a.view,
         "(batch * " + number(m) + " + row) * " + number(inner) + " + l");
  r.load(body, "y", structure.slot(b.node), b.view,
         "(batch * " + number(inner) + " + l) * " + number(p) + " + j");
  const std::string x = cast("x", a.node->dtype, acc, d), y = cast("y", b.node->dtype, acc, d);
  if (is_float(acc))
    body += "  acc = acc + " + x + " * " + y + ";\n";
  else
    body += "  acc = kiln_add(acc, kiln_mul(" + x + ", " + y + "));\n";
  body += "  }\n  out0[i] = " + cast("acc", acc, t, d) + ";\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// random_uniform: the reference's counter-based generator (splitmix64's finaliser of the seed
// and the position), so that the device draws the CPU's values for the same seed. The seed is an
// argument: it is a value, not part of the structure a prepared kernel is cached by.
RenderedKernel uniform(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const std::int64_t n = root.numel();
  out.seed_of = structure.slot(&root);
  std::vector<std::string> outputs = r.begin("kiln_uniform", root.dtype);
  const std::string u64(d.u64);
  std::string body = per_item(d, "i", n);
  const auto mix = [&](const std::string& z) { return "kiln_mix64(" + z + ")"; };
  body += "  " + u64 + " bits = " + mix(mix("seed + 0x9e3779b97f4a7c15UL") + " ^ (" + u64 + ")i") +
          ";\n";
  if (root.dtype == DType::f32)
    body += "  out0[i] = (float)(bits >> 40) * 0x1.0p-24f;\n";
  else
    body += "  out0[i] = (double)(bits >> 11) * 0x1.0p-53;\n";
  const std::string helper = std::string(d.function) + " " + u64 + " kiln_mix64(" + u64 +
                             " z) {\n  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;\n"
                             "  z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;\n"
                             "  return z ^ (z >> 31);\n}\n";
  return r.per_item_kernel(n, device, outputs, body, helper);
}

// contiguous: a copy through its input's view, as a materialize kernel.
RenderedKernel copy(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                    const DeviceTraits& device) {
  Renderer r(structure, d);
  const std::int64_t n = k.root->numel();
  std::vector<std::string> outputs = r.begin("kiln_copy", k.root->dtype);
  std::string body = per_item(d, "i", n);
  const KernelInput& in = k.inputs[0];
  r.load(body, "x", structure.slot(in.node), in.view, "i");
  body += "  out0[i] = " + cast("x", in.node->dtype, k.root->dtype, d) + ";\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// concat along attrs.axes[0]: each output position finds the input its coordinate on the axis
// falls in.
RenderedKernel concatenation(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                             const DeviceTraits& device) {
  Renderer r(structure, d);
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  std::int64_t inner = 1;
  for (std::size_t dim = axis + 1; dim < root.shape.size(); ++dim) inner *= root.shape[dim];
  const std::int64_t along = root.shape[axis];
  const std::int64_t n = root.numel();
  const std::string T(d.type(root.dtype));
  std::vector<std::string> outputs = r.begin("kiln_concat", root.dtype);
  std::string body = per_item(d, "i", n);
  body += "  long outer = i / " + number(along * inner) + ";\n  long a = (i / " + number(inner) +
          ") % " + number(along) + ";\n  long rest = i % " + number(inner) + ";\n";
  body += "  " + T + " value = 0;\n";
  std::int64_t first = 0;
  for (std::size_t part = 0; part < k.inputs.size(); ++part) {
    const KernelInput& in = k.inputs[part];
    const std::int64_t size = root.inputs[part]->shape[axis];
    if (size == 0) continue;
    body +=
        std::string(first == 0 ? "  if" : "  else if") + " (a < " + number(first + size) + ") {\n";
    const std::string name = numbered("x", part);
    r.load(body, name, structure.slot(in.node), in.view,
           "(outer * " + number(size) + " + (a - " + number(first) + ")) * " + number(inner) +
               " + rest");
    body += "  value = " + cast(name, in.node->dtype, root.dtype, d) + ";\n  }\n";
    first += size;
  }
  body += "  out0[i] = value;\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// softmax and log_softmax along attrs.axes[0], one work-item per line, as the reference computes
// them: the line's maximum (NaN skipped, a non-finite maximum not subtracted), the sum of
// exponentials in double where the device has it, then each value.
RenderedKernel softmax_lines(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                             const DeviceTraits& device) {
  Renderer r(structure, d);
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t dim = 0; dim < axis; ++dim) outer *= root.shape[dim];
  for (std::size_t dim = axis + 1; dim < root.shape.size(); ++dim) inner *= root.shape[dim];
  const std::int64_t len = root.shape[axis];
  const DType t = root.dtype;
  const DType acc = device.fp64 ? DType::f64 : t;
  r.note_type(acc);
  const std::string T(d.type(t)), A(d.type(acc));
  std::vector<std::string> outputs = r.begin("kiln_softmax", t);
  const KernelInput& in = k.inputs[0];
  const int slot = structure.slot(in.node);
  std::string body = per_item(d, "g", outer * inner);
  body += "  long base = (g / " + number(inner) + ") * " + number(len * inner) + " + g % " +
          number(inner) + ";\n";
  const auto value = [&](const std::string& name) {
    r.load(body, name + "_", slot, in.view, "base + j * " + number(inner));
    body += "  " + T + " " + name + " = " + cast(name + "_", in.node->dtype, t, d) + ";\n";
  };
  body += "  " + T + " m = -INFINITY;\n  for (long j = 0; j < " + number(len) + "; ++j) {\n";
  value("x");
  body += "  m = m < x ? x : m;\n  }\n  m = isfinite(m) ? m : (" + T + ")0;\n";
  body += "  " + A + " total = 0;\n  for (long j = 0; j < " + number(len) + "; ++j) {\n";
  value("x");
  body += "  total += exp((" + A + ")(x - m));\n  }\n";
  body += "  for (long j = 0; j < " + number(len) + "; ++j) {\n";
  value("x");
  body += "  " + T + " shifted = x - m;\n";
  if (root.op == Op::softmax)
    body += "  out0[base + j * " + number(inner) + "] = (" + T + ")(exp((" + A +
            ")shifted) / total);\n  }\n";
  else
    body += "  out0[base + j * " + number(inner) + "] = (" + T + ")(shifted - log(total));\n  }\n";
  return r.per_item_kernel(outer * inner, device, outputs, body);
}

// 2-D convolution, its gradients and max pooling over NCHW values, one work-item per output
// element. conv2d, conv2d_grad_weight and max_pool2d sum (or compare) their terms in the
// reference's order and type, so their values are the reference's; conv2d_grad_input gathers the
// terms of each input position by window offset instead of the reference's scatter order.
RenderedKernel window2d(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                        const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const Window2d g = window2d_of(root);
  const std::int64_t n = root.numel();
  const DType t = root.dtype;
  const std::string T(d.type(t));
  std::vector<std::string> outputs{r.output(t, 0)};
  out.outputs = 1;
  const auto N = [](std::int64_t v) { return number(v); };
  // Loads element `index` of kernel input `which` as `name`, converted to type `as`.
  const auto value = [&](std::string& body, const std::string& name, std::size_t which,
                         const std::string& index, DType as) {
    const KernelInput& in = k.inputs[which];
    r.load(body, name + "_", structure.slot(in.node), in.view, index);
    body += "  " + std::string(d.type(as)) + " " + name + " = " +
            cast(name + "_", in.node->dtype, as, d) + ";\n";
  };
  const std::string xi = "((nn * " + N(g.c) + " + c) * " + N(g.h) + " + y) * " + N(g.w) + " + x";
  const std::string wi =
      "((oc * " + N(g.c) + " + c) * " + N(g.kh) + " + ki) * " + N(g.kw) + " + kj";
  const std::string gi = "((nn * " + N(g.o) + " + oc) * " + N(g.oh) + " + i) * " + N(g.ow) + " + j";
  const std::string row = "i * " + N(g.sh) + " - " + N(g.ph) + " + ki * " + N(g.dh);
  const std::string col = "j * " + N(g.sw) + " - " + N(g.pw) + " + kj * " + N(g.dw);
  std::string body = per_item(d, "e", n);
  // Unpacks e into the named coordinates of a row-major shape.
  const auto unpack = [&](std::initializer_list<std::pair<const char*, std::int64_t>> dims) {
    std::vector<std::pair<const char*, std::int64_t>> v(dims);
    body += "  long q = e;\n";
    for (std::size_t a = v.size(); a-- > 0;) {
      if (a == 0)
        body += "  long " + std::string(v[a].first) + " = q;\n";
      else
        body += "  long " + std::string(v[a].first) + " = q % " + N(v[a].second) +
                "; q /= " + N(v[a].second) + ";\n";
    }
  };
  switch (root.op) {
    case Op::conv2d:
      out.entry = "kiln_conv2d";
      unpack({{"nn", g.n}, {"oc", g.o}, {"i", g.oh}, {"j", g.ow}});
      body += "  " + T + " acc = 0;\n";
      body += "  for (long c = 0; c < " + N(g.c) + "; ++c)\n  for (long ki = 0; ki < " + N(g.kh) +
              "; ++ki) {\n  long y = " + row + ";\n  if (y < 0 || y >= " + N(g.h) +
              ") continue;\n  for (long kj = 0; kj < " + N(g.kw) + "; ++kj) {\n  long x = " + col +
              ";\n  if (x < 0 || x >= " + N(g.w) + ") continue;\n";
      value(body, "a", 0, xi, t);
      value(body, "b", 1, wi, t);
      body += "  acc = acc + a * b;\n  }\n  }\n  out0[e] = acc;\n";
      break;
    case Op::conv2d_grad_weight:
      out.entry = "kiln_conv2d_grad_weight";
      unpack({{"oc", g.o}, {"c", g.c}, {"ki", g.kh}, {"kj", g.kw}});
      body += "  " + T + " acc = 0;\n";
      body += "  for (long nn = 0; nn < " + N(g.n) + "; ++nn)\n  for (long i = 0; i < " + N(g.oh) +
              "; ++i) {\n  long y = " + row + ";\n  if (y < 0 || y >= " + N(g.h) +
              ") continue;\n  for (long j = 0; j < " + N(g.ow) + "; ++j) {\n  long x = " + col +
              ";\n  if (x < 0 || x >= " + N(g.w) + ") continue;\n";
      value(body, "a", 1, gi, t);
      value(body, "b", 0, xi, t);
      body += "  acc = acc + a * b;\n  }\n  }\n  out0[e] = acc;\n";
      break;
    case Op::conv2d_grad_input:
      out.entry = "kiln_conv2d_grad_input";
      unpack({{"nn", g.n}, {"c", g.c}, {"y", g.h}, {"x", g.w}});
      body += "  " + T + " acc = 0;\n";
      body += "  for (long oc = 0; oc < " + N(g.o) + "; ++oc)\n  for (long ki = 0; ki < " +
              N(g.kh) + "; ++ki) {\n  long ti = y + " + N(g.ph) + " - ki * " + N(g.dh) +
              ";\n  if (ti < 0 || ti % " + N(g.sh) + " != 0) continue;\n  long i = ti / " +
              N(g.sh) + ";\n  if (i >= " + N(g.oh) + ") continue;\n  for (long kj = 0; kj < " +
              N(g.kw) + "; ++kj) {\n  long tj = x + " + N(g.pw) + " - kj * " + N(g.dw) +
              ";\n  if (tj < 0 || tj % " + N(g.sw) + " != 0) continue;\n  long j = tj / " +
              N(g.sw) + ";\n  if (j >= " + N(g.ow) + ") continue;\n";
      value(body, "a", 0, gi, t);
      value(body, "b", 1, wi, t);
      body += "  acc = acc + a * b;\n  }\n  }\n  out0[e] = acc;\n";
      break;
    case Op::max_pool2d: {
      out.entry = "kiln_max_pool2d";
      const DType in = root.inputs[0]->dtype;
      const std::string I(d.type(in));
      unpack({{"p", g.n * g.c}, {"i", g.oh}, {"j", g.ow}});
      body += "  " + I + " best = 0;\n  int any = 0;\n";
      body += "  for (long ki = 0; ki < " + N(g.kh) + "; ++ki)\n  for (long kj = 0; kj < " +
              N(g.kw) + "; ++kj) {\n  long y = " + row + ", x = " + col +
              ";\n  if (y < 0 || y >= " + N(g.h) + " || x < 0 || x >= " + N(g.w) + ") continue;\n";
      value(body, "v", 0, "p * " + N(g.h * g.w) + " + y * " + N(g.w) + " + x", in);
      body += "  if (!any || kiln_replaces(v, best, 1)) best = v;\n  any = 1;\n  }\n";
      body += "  out0[e] = " + cast("best", in, t, d) + ";\n";
      break;
    }
    default: {  // max_pool2d_grad: each input position collects its share of every window
      out.entry = "kiln_max_pool2d_grad";
      const DType in = root.inputs[0]->dtype;
      const std::string I(d.type(in));
      unpack({{"p", g.n * g.c}, {"y", g.h}, {"x", g.w}});
      value(body, "mine", 0, "e", in);
      body += "  " + T + " acc = 0;\n";
      body += "  for (long i = 0; i < " + N(g.oh) + "; ++i)\n  for (long j = 0; j < " + N(g.ow) +
              "; ++j) {\n  " + I + " best = 0;\n  int any = 0, hit = 0, ties = 0;\n";
      body += "  for (long ki = 0; ki < " + N(g.kh) + "; ++ki)\n  for (long kj = 0; kj < " +
              N(g.kw) + "; ++kj) {\n  long wy = " + row + ", wx = " + col +
              ";\n  if (wy < 0 || wy >= " + N(g.h) + " || wx < 0 || wx >= " + N(g.w) +
              ") continue;\n  if (wy == y && wx == x) hit = 1;\n";
      value(body, "v", 0, "p * " + N(g.h * g.w) + " + wy * " + N(g.w) + " + wx", in);
      body += "  if (!any || kiln_replaces(v, best, 1)) best = v;\n  any = 1;\n  }\n";
      body += "  if (!hit || !(mine == best)) continue;\n";
      body += "  for (long ki = 0; ki < " + N(g.kh) + "; ++ki)\n  for (long kj = 0; kj < " +
              N(g.kw) + "; ++kj) {\n  long wy = " + row + ", wx = " + col +
              ";\n  if (wy < 0 || wy >= " + N(g.h) + " || wx < 0 || wx >= " + N(g.w) +
              ") continue;\n";
      value(body, "u", 0, "p * " + N(g.h * g.w) + " + wy * " + N(g.w) + " + wx", in);
      body += "  if (u == best) ++ties;\n  }\n";
      value(body, "gr", 1, "(p * " + N(g.oh) + " + i) * " + N(g.ow) + " + j", t);
      body += "  acc = acc + (ties > 0 ? gr / (" + T + ")ties : (" + T + ")0);\n  }\n";
      body += "  out0[e] = acc;\n";
      break;
    }
  }
  return r.per_item_kernel(n, device, outputs, body);
}

// Statements declaring the coordinates `prefix`0.. of the row-major position `position` in
// `shape`.
std::string unravel(const std::string& prefix, const std::string& position, const Shape& shape) {
  std::string body = "  long " + prefix + "q = " + position + ";\n";
  for (std::size_t dim = shape.size(); dim-- > 0;) {
    const std::string c = prefix + std::to_string(dim);
    if (shape[dim] == 0) {  // no positions: never run, and no division by zero to warn about
      body += "  long " + c + " = 0;\n";
    } else if (dim == 0) {
      body += "  long " + c + " = " + prefix + "q;\n";
    } else {
      body += "  long " + c + " = " + prefix + "q % " + number(shape[dim]) + "; " + prefix +
              "q /= " + number(shape[dim]) + ";\n";
    }
  }
  return body;
}

// The row-major position in `shape` of the coordinates `prefix`0.., coordinate `axis` replaced
// by `along`.
std::string ravel(const std::string& prefix, const Shape& shape, std::size_t axis,
                  const std::string& along) {
  std::string position = "0";
  for (std::size_t dim = 0; dim < shape.size(); ++dim)
    position = "(" + position + ") * " + number(shape[dim]) + " + " +
               (dim == axis ? along : prefix + std::to_string(dim));
  return position;
}

// gather along attrs.axes[0]: one work-item per result position (the indices' shape). An index
// outside the data's dimension sets the check flag; the backend then reports it.
RenderedKernel gather(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                      const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  const Shape& data = root.inputs[0]->shape;
  const std::int64_t n = root.numel();
  out.index_check = true;
  std::vector<std::string> outputs = r.begin("kiln_gather", root.dtype);
  std::string body = per_item(d, "i", n);
  r.load(body, "k_", structure.slot(k.inputs[1].node), k.inputs[1].view, "i");
  body += "  long k = (long)k_;\n  if (k < 0 || k >= " + number(data[axis]) +
          ") { bad[0] = 1; out0[i] = 0; return; }\n";
  body += unravel("u", "i", root.shape);
  r.load(body, "x", structure.slot(k.inputs[0].node), k.inputs[0].view,
         ravel("u", data, axis, "k"));
  body += "  out0[i] = " + cast("x", k.inputs[0].node->dtype, root.dtype, d) + ";\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// scatter_add along attrs.axes[0]: one work-item per result position, adding the sources whose
// index names it in the order of the indices (the reference's order, so the same bits). The
// work-items at position 0 of the axis check their line's indices.
RenderedKernel scatter_add(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                           const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  const Shape& index = root.inputs[1]->shape;
  const Shape& source = root.inputs[2]->shape;
  const std::int64_t n = root.numel();
  const DType t = root.dtype;
  const std::string T(d.type(t)), a(std::to_string(axis));
  out.index_check = true;
  std::vector<std::string> outputs = r.begin("kiln_scatter_add", t);
  std::string body = per_item(d, "i", n);
  r.load(body, "x_", structure.slot(k.inputs[0].node), k.inputs[0].view, "i");
  body += "  " + T + " acc = " + cast("x_", k.inputs[0].node->dtype, t, d) + ";\n";
  body += unravel("u", "i", root.shape);
  // Positions outside the indices' extent (in the other dimensions) receive nothing. No
  // constant operands in the conditions: the device compiler warns about them.
  std::string inside;
  for (std::size_t dim = 0; dim < index.size(); ++dim)
    if (dim != axis && index[dim] < root.shape[dim])
      inside += std::string(inside.empty() ? "" : " && ") + "u" + std::to_string(dim) + " < " +
                number(index[dim]);
  body += "  " + std::string(inside.empty() ? "{" : "if (" + inside + ") {") +
          "\n  for (long j = 0; j < " + number(index[axis]) + "; ++j) {\n";
  r.load(body, "k_", structure.slot(k.inputs[1].node), k.inputs[1].view,
         ravel("u", index, axis, "j"));
  body += "  long k = (long)k_;\n";
  const std::string kept = root.attrs.drop_negative ? " && k >= 0" : "";
  body += "  if (u" + a + " == 0" + kept + " && (k < 0 || k >= " + number(root.shape[axis]) +
          ")) bad[0] = 1;\n";
  body += "  if (k != u" + a + ") continue;\n";
  r.load(body, "y_", structure.slot(k.inputs[2].node), k.inputs[2].view,
         ravel("u", source, axis, "j"));
  body += "  acc = kiln_add(acc, " + cast("y_", k.inputs[2].node->dtype, t, d) + ");\n  }\n  }\n";
  body += "  out0[i] = acc;\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// unwindow (the adjoint of the windows view): one work-item per result position, adding the
// window elements that read it. For each window position at most one element does, so visiting
// the window positions in row-major order adds the terms in the reference's order.
RenderedKernel unwindow(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                        const DeviceTraits& device) {
  Renderer r(structure, d);
  const Node& root = *k.root;
  const std::size_t rank = root.shape.size();
  const Shape& windows = root.inputs[0]->shape;  // [counts..., window...]
  const std::int64_t n = root.numel();
  const DType t = root.dtype;
  std::vector<std::string> outputs = r.begin("kiln_unwindow", t);
  std::string body = per_item(d, "i", n);
  body += unravel("p", "i", root.shape);
  body += "  " + std::string(d.type(t)) + " acc = 0;\n";
  std::string position = "0";
  for (std::size_t dim = 0; dim < rank; ++dim) {
    const std::string s = "s" + std::to_string(dim), p = "p" + std::to_string(dim);
    const std::string step = number(root.attrs.step[dim]), dil = number(root.attrs.dilation[dim]);
    const std::int64_t count = windows[dim], width = windows[rank + dim];
    body += "  long lo" + std::to_string(dim) + " = " + p + " - " + number((width - 1)) + " * " +
            dil + ";\n  lo" + std::to_string(dim) + " = lo" + std::to_string(dim) + " > 0 ? (lo" +
            std::to_string(dim) + " + " + step + " - 1) / " + step + " : 0;\n";
    body += "  for (long " + s + " = lo" + std::to_string(dim) + "; " + s + " <= " + p + " / " +
            step + " && " + s + " < " + number(count) + "; ++" + s + ") {\n";
    body += "  long t" + std::to_string(dim) + " = " + p + " - " + s + " * " + step + ";\n  if (t" +
            std::to_string(dim) + " % " + dil + " != 0 || t" + std::to_string(dim) + " / " + dil +
            " >= " + number(width) + ") continue;\n";
    position = "(" + position + ") * " + number(count) + " + " + s;
  }
  for (std::size_t dim = 0; dim < rank; ++dim)
    position = "(" + position + ") * " + number(windows[rank + dim]) + " + t" +
               std::to_string(dim) + " / " + number(root.attrs.dilation[dim]);
  r.load(body, "x_", structure.slot(k.inputs[0].node), k.inputs[0].view, position);
  body += "  acc = kiln_add(acc, " + cast("x_", k.inputs[0].node->dtype, t, d) + ");\n";
  for (std::size_t dim = 0; dim < rank; ++dim) body += "  }\n";
  body += "  out0[i] = acc;\n";
  return r.per_item_kernel(n, device, outputs, body);
}

// cumsum and cumprod along attrs.axes[0]: one work-item per line, in order (semantics/sorting.hpp:
// floats in their own type, integers wrapping), so the values are the reference's.
RenderedKernel scan(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                    const DeviceTraits& device) {
  Renderer r(structure, d);
  const Node& root = *k.root;
  const AxisLines l(root);
  const DType t = root.dtype;
  std::vector<std::string> outputs = r.begin("kiln_scan", t);
  std::string body = per_item(d, "g", l.outer * l.inner);
  body += "  long base = (g / " + number(l.inner) + ") * " + number(l.len * l.inner) + " + g % " +
          number(l.inner) + ";\n";
  body += "  " + std::string(d.type(t)) + " running = 0;\n";
  body += "  for (long j = 0; j < " + number(l.len) + "; ++j) {\n";
  body += "  long at = base + j * " + number(l.inner) + ";\n";
  r.load(body, "x_", structure.slot(k.inputs[0].node), k.inputs[0].view, "at");
  const std::string x = cast("x_", k.inputs[0].node->dtype, t, d);
  body += "  running = j == 0 ? " + x + " : " + (root.op == Op::cumsum ? "kiln_add" : "kiln_mul") +
          "(running, " + x + ");\n  out0[at] = running;\n  }\n";
  return r.per_item_kernel(l.outer * l.inner, device, outputs, body);
}

// argsort along attrs.axes[0]: one work-item per element, which counts the elements of its line
// that a stable sort puts before it (semantics/sorting.hpp's order) and writes its own position
// there.
RenderedKernel argsort(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device) {
  Renderer r(structure, d);
  const Node& root = *k.root;
  const AxisLines l(root);
  const std::int64_t n = root.numel();
  const std::string desc = root.attrs.descending ? "1" : "0";
  const KernelInput& in = k.inputs[0];
  const int slot = structure.slot(in.node);
  std::vector<std::string> outputs = r.begin("kiln_argsort", root.dtype);
  std::string body = per_item(d, "e", n);
  body += "  long j = (e / " + number(l.inner) + ") % " + number(l.len) + ";\n";
  body += "  long base = e - j * " + number(l.inner) + ";\n";
  r.load(body, "mine", slot, in.view, "e");
  body += "  long rank = 0;\n  for (long m = 0; m < " + number(l.len) + "; ++m) {\n";
  body += "  if (m == j) continue;\n";
  r.load(body, "other", slot, in.view, "base + m * " + number(l.inner));
  body += "  if (kiln_before(other, mine, " + desc + ") || (m < j && !kiln_before(mine, other, " +
          desc + "))) ++rank;\n  }\n";
  body += "  out0[base + rank * " + number(l.inner) +
          "] = " + cast("j", DType::i64, root.dtype, d) + ";\n";
  return r.per_item_kernel(n, device, outputs, body);
}

}  // namespace

bool can_render(const Kernel& k) {
  for (const Node* n : k.body)
    if (n->info().kind == OpKind::custom) return false;
  // Narrow types (f16, bf16, bool): elementwise kernels, copies through views and reductions.
  bool narrow = touches_narrow_types(*k.root);
  for (const Node* n : k.body) narrow = narrow || touches_narrow_types(*n);
  for (const KernelInput& in : k.inputs) narrow = narrow || is_narrow(in.node->dtype);
  if (narrow && k.kind != Kernel::Kind::elementwise && k.kind != Kernel::Kind::materialize &&
      k.kind != Kernel::Kind::reduce)
    return false;
  switch (k.kind) {
    case Kernel::Kind::elementwise:
    case Kernel::Kind::materialize:
    case Kernel::Kind::matmul: return true;
    case Kernel::Kind::single:
      switch (k.root->info().kind) {
        case OpKind::source: return k.root->op == Op::random_uniform && is_float(k.root->dtype);
        case OpKind::copy:
        case OpKind::concat: return true;
        case OpKind::softmax: return is_float(k.root->dtype);
        case OpKind::window2d:
        case OpKind::indexing:
        case OpKind::scan:
        case OpKind::sort: return true;
        default: return false;
      }
    case Kernel::Kind::reduce: {
      std::int64_t outer, reduced, inner;
      return as_block(*k.root, k.root->inputs[0]->shape, outer, reduced, inner);
    }
    default: return false;
  }
}

RenderedKernel render_kernel(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                             const Dialect& dialect, const DeviceTraits& device) {
  if (k.kind == Kernel::Kind::reduce) return reduction(k, ir, structure, dialect, device);
  if (k.kind == Kernel::Kind::matmul) return matrix_product(k, structure, dialect, device);
  if (k.kind == Kernel::Kind::single) {
    switch (k.root->info().kind) {
      case OpKind::copy: return copy(k, structure, dialect, device);
      case OpKind::concat: return concatenation(k, structure, dialect, device);
      case OpKind::softmax: return softmax_lines(k, structure, dialect, device);
      case OpKind::window2d: return window2d(k, structure, dialect, device);
      case OpKind::indexing:
        return k.root->op == Op::gather        ? gather(k, structure, dialect, device)
               : k.root->op == Op::scatter_add ? scatter_add(k, structure, dialect, device)
                                               : unwindow(k, structure, dialect, device);
      case OpKind::scan: return scan(k, structure, dialect, device);
      case OpKind::sort: return argsort(k, structure, dialect, device);
      default: return uniform(k, structure, dialect, device);
    }
  }
  return elementwise(k, ir, structure, dialect, device);
}

}  // namespace kiln::detail
