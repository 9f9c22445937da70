// Kernels that reduce: reductions over adjacent axes (one work-group per output, merged in a fixed
// tree), and softmax along an axis (one work-group per line).
#include <algorithm>
#include <cstdio>

#include "exec/codegen/renderer.hpp"
#include "exec/reduction_geometry.hpp"

namespace kiln::detail::codegen {

// One work-group per output: each work-item accumulates the reduced positions l, l + L, ... in
// order, then the work-group merges the partial results in a fixed tree, so the same input always
// gives the same bits. Where the outputs are adjacent in memory (a reduction over an outer axis,
// such as the rows of a matrix), a work-group takes 32 adjacent outputs instead, in `lanes` rows
// of 32 work-items: a row reads 32 adjacent values at a time (coalesced, where a work-group per
// output reads values a row apart), and the rows merge in the same kind of fixed tree.
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
  // Float sums and products accumulate in double (complex ones in c128), as
  // semantics/reduction.hpp does, where the device has double; integers wrap in their own type.
  const bool complex = is_complex(value_type);
  const DType wide = complex ? DType::c128 : DType::f64;
  const DType acc_type = (is_float(value_type) || complex) && !extreme
                             ? (device.fp64 ? wide : value_type)
                             : value_type;
  r.note_type(acc_type);
  const std::string combine = std::string(complex ? "kiln_c" : "kiln_") +
                              (op == Op::prod ? "mul" : "add");
  const std::string start = complex ? literal(Scalar(op == Op::prod ? 1.0 : 0.0), acc_type, d)
                                    : std::string(op == Op::prod ? "1" : "0");
  const std::string T(d.type(value_type)), A(d.type(acc_type)), L = r.i64();
  // A complex product runs in the reference's order, one work-item per output: which of
  // infinity and NaN a product of infinities gives depends on the order.
  const bool in_order = complex && op == Op::prod;
  // Adjacent outputs: `columns` (32) of them per work-group, each reduced by `lanes` work-items
  // (a work-item per output and lane); else one output per work-group of `lanes` work-items.
  const int columns = !in_order && inner >= 32 && device.max_group >= 64 ? 32 : 1;
  int lanes = 1;
  while (!in_order && lanes < (columns > 1 ? 8 : 256) && lanes < reduced &&
         static_cast<std::size_t>(lanes * columns) * 2 <= device.max_group)
    lanes *= 2;
  const int group = lanes * columns;
  const std::int64_t tiles = (inner + columns - 1) / columns;  // work-groups per outer index
  const std::int64_t groups = outer * tiles;

  // Few work-groups of many terms each: `parts` work-groups share each output (each tile of
  // outputs), every one summing a contiguous chunk of the terms, and a second launch merges the
  // partial results in order, so the whole device works and the bits stay the same on every run.
  const std::int64_t outputs_n = outer * inner;
  std::int64_t parts = 1;
  if (!extreme && !in_order && columns == 1 && outputs_n < 64 && reduced >= 8192) {
    parts = std::min<std::int64_t>(reduced / (group * 32), 1024);
    while (parts > 1 && outputs_n * parts > 4096) parts /= 2;
  }
  if (!extreme && columns > 1)
    while (groups * parts < 512 && reduced >= parts * 2 * lanes * 64 && parts < 1024) parts *= 2;
  const bool split = parts > 1;
  const std::int64_t chunk = (reduced + parts - 1) / parts;

  std::vector<std::string> outputs = r.begin("kiln_reduce", root.dtype);
  std::string body;
  body += "  " + L + " g = (" + L + ")" + std::string(d.group_id) + ";\n";
  body += "  int l = (int)" + std::string(d.local_id) + ";\n";
  body += "  " + L + " gt = g" + (split ? " / " + number(parts) : std::string()) + ";\n";
  if (split) body += "  " + L + " part = g % " + number(parts) + ";\n";
  // The output (go), and this work-item's lane and column in the work-group.
  if (columns > 1) {
    const std::string C = std::to_string(columns);
    body += "  int lane = l / " + C + ", tc = l % " + C + ";\n";
    body += "  " + L + " column = (gt % " + number(tiles) + ") * " + C + " + tc;\n";
    body += "  " + L + " go = (gt / " + number(tiles) + ") * " + number(inner) + " + column;\n";
  } else {
    body += "  int lane = l, tc = 0;\n  " + L + " go = gt;\n";
  }
  body += "  " + L + " base = (go / " + number(inner) + ") * " + number(reduced * inner) +
          " + go % " + number(inner) + ";\n";
  if (extreme) {
    body += "  " + T + " best = 0;\n  " + L + " at = -1;\n";
  } else {
    body += "  " + A + " acc = " + start + ";\n";
  }
  // The last tile's columns past the end read nothing.
  const std::string in_range = columns > 1 ? "column < " + number(inner) : "1";
  if (split) {
    body += "  " + L + " end = part * " + number(chunk) + " + " + number(chunk) + ";\n  if (end > " +
            number(reduced) + ") end = " + number(reduced) + ";\n";
    body += "  for (" + L + " j = part * " + number(chunk) + " + lane; " +
            (columns > 1 ? in_range + " && " : "") + "j < end; j += " + std::to_string(lanes) +
            ") {\n";
  } else {
    body += "  for (" + L + " j = lane; " + (columns > 1 ? in_range + " && " : "") + "j < " +
            number(reduced) + "; j += " + std::to_string(lanes) + ") {\n";
  }
  body += "  " + L + " p = base + j * " + number(inner) + ";\n";
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
    body += "  acc = " + combine + "(acc, " + y + ");\n";
  }
  body += "  }\n";
  const std::string local(d.local), barrier(d.barrier);
  const std::string g = std::to_string(group);
  if (extreme) {
    body += "  " + local + " " + T + " bests[" + g + "];\n  " + local + " " + L + " ats[" + g +
            "];\n  bests[l] = best;\n  ats[l] = at;\n";
  } else {
    body += "  " + local + " " + A + " accs[" + g + "];\n  accs[l] = acc;\n";
  }
  body += "  " + barrier + ";\n";
  const std::string other = columns > 1 ? "l + s * " + std::to_string(columns) : "l + s";
  body += "  for (int s = " + std::to_string(lanes / 2) + "; s > 0; s >>= 1) {\n";
  body += "    if (lane < s) {\n";
  if (extreme) {
    // The later position wins only when it replaces the other by the rules, or ties with it
    // (neither replaces the other) from an earlier position: the first extreme, the first NaN.
    body += "      " + T + " b = bests[" + other + "];\n      " + L + " a = ats[" + other + "];\n";
    body += "      " + T + " c = bests[l];\n      " + L + " e = ats[l];\n";
    const std::string mx = maximum ? "1" : "0";
    body += "      if (a >= 0 && (e < 0 || kiln_replaces(b, c, " + mx +
            ") || (!kiln_replaces(c, b, " + mx + ") && a < e))) { bests[l] = b; ats[l] = a; }\n";
  } else {
    body += "      accs[l] = " + combine + "(accs[l], accs[" + other + "]);\n";
  }
  body += "    }\n    " + barrier + ";\n  }\n";
  // The output's value from the merged slot `at` of the tree.
  const auto result_at = [&](const std::string& at) {
    if (arg) return cast("ats[" + at + "]", DType::i64, out_type, d);
    if (extreme) return cast("bests[" + at + "]", value_type, out_type, d);
    const std::string merged = "accs[" + at + "]";
    std::string total = merged;
    if (op == Op::mean && is_float(acc_type))
      total = arithmetic(d, merged, '/', "(" + A + ")" + number(reduced));
    if (op == Op::mean && complex) {  // each part divided by the count, as the reference does
      const std::string count = literal(Scalar(static_cast<double>(reduced)), real_type(acc_type), d);
      const std::string args[] = {A, merged + ".x / " + count, merged + ".y / " + count};
      total = fill_template(d.make_complex, args);
    }
    return cast(cast(total, acc_type, value_type, d), value_type, out_type, d);
  };
  // Lane 0 of each column holds its output's value.
  const std::string writer = "  if (lane == 0" + (columns > 1 ? " && " + in_range : "") + ")";
  char head[160];
  std::snprintf(head, sizeof head, std::string(d.fixed_group).c_str(), group);
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>(groups * parts) * out.local_size;
  if (!split) {
    body += writer + " {\n    " + r.write("out0", "go", result_at("tc"), root.dtype) + "\n  }\n";
    r.finish(head, outputs, body);
    return std::move(out);
  }
  // The first launch leaves each work-group's partial results in the scratch buffer, the parts of
  // an output side by side; the merge kernel, one work-group per output, adds an output's
  // partials in order in the same tree.
  const std::string global = d.global.empty() ? std::string() : std::string(d.global) + " ";
  body += writer + " partials[go * " + number(parts) + " + part] = accs[l];\n";
  int merge_group = 1;
  while (merge_group < 256 && merge_group < parts &&
         static_cast<std::size_t>(merge_group) * 2 <= device.max_group)
    merge_group *= 2;
  const std::string mg = std::to_string(merge_group);
  std::string merge = "  " + L + " g = (" + L + ")" + std::string(d.group_id) + ";\n";
  merge += "  int l = (int)" + std::string(d.local_id) + ";\n";
  merge += "  " + A + " acc = " + start + ";\n";
  merge += "  for (" + L + " q = l; q < " + number(parts) + "; q += " + mg + ") acc = " +
           combine + "(acc, partials[g * " + number(parts) + " + q]);\n";
  merge += "  " + local + " " + A + " accs[" + mg + "];\n  accs[l] = acc;\n  " + barrier + ";\n";
  merge += "  for (int s = " + std::to_string(merge_group / 2) + "; s > 0; s >>= 1) {\n";
  merge += "    if (l < s) accs[l] = " + combine + "(accs[l], accs[l + s]);\n    " + barrier +
           ";\n  }\n";
  merge += "  if (l == 0) {\n    " + r.write("out0", "g", result_at("0"), root.dtype) + "\n  }\n";
  char merge_head[160];
  std::snprintf(merge_head, sizeof merge_head, std::string(d.fixed_group).c_str(), merge_group);
  out.merge_entry = "kiln_reduce_merge";
  const std::string after = std::string(merge_head) + " " + out.merge_entry + "(" + outputs[0] +
                            ", " + global + "const " + A + "* partials) {\n" + merge + "}\n";
  out.scratch_bytes = static_cast<std::size_t>(outputs_n * parts) * size_of(acc_type);
  out.merge_local_size = static_cast<std::size_t>(merge_group);
  out.merge_global_size = static_cast<std::size_t>(outputs_n) * out.merge_local_size;
  r.finish(head, outputs, body, ", " + global + A + "* partials", after);
  return std::move(out);
}

// softmax and log_softmax along attrs.axes[0], as the reference computes them: the line's maximum
// (NaN skipped, a non-finite maximum not subtracted), the sum of exponentials in double where the
// device has it, then each value. The work-items of a line read it together (adjacent items,
// adjacent values) and merge their maxima and sums in a fixed tree. A line of up to
// kLineValuesEach values per work-item (of up to 512 work-items: 16384 values) is read from
// memory once, each work-item keeping its values in registers, and a work-group takes several
// short lines; a longer line is read three times by a work-group of its own. (A work-group of
// 1024 would leave each work-item 64 registers on NVIDIA's devices, fewer than 32 doubles need.)
constexpr std::int64_t kLineValuesEach = 32;

RenderedKernel softmax_lines(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                             const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t dim = 0; dim < axis; ++dim) outer *= root.shape[dim];
  for (std::size_t dim = axis + 1; dim < root.shape.size(); ++dim) inner *= root.shape[dim];
  const std::int64_t len = root.shape[axis], lines = outer * inner;
  const DType t = root.dtype;
  const DType acc = device.fp64 ? DType::f64 : t;
  r.note_type(acc);
  const std::string T(d.type(t)), A(d.type(acc)), L = r.i64();
  // The widest work-group (a power of two) for a line held in registers, and for one read
  // three times.
  const auto widest_up_to = [&](std::int64_t most) {
    std::int64_t w = 1;
    while (w < most && static_cast<std::size_t>(w) * 2 <= device.max_group) w *= 2;
    return w;
  };
  const std::int64_t widest = widest_up_to(512);
  // Work-items per line (a power of two): 32 where each then holds at most kLineValuesEach
  // values, fewer for shorter lines, more for longer ones up to `widest`.
  std::int64_t lanes = 1;
  while (lanes < std::min<std::int64_t>(len, 32) ||
         (lanes < widest && lanes * kLineValuesEach < len))
    lanes *= 2;
  lanes = std::min(lanes, widest);
  const std::int64_t each = (len + lanes - 1) / lanes;  // values per work-item
  const bool in_registers = each <= kLineValuesEach;
  if (!in_registers) lanes = widest_up_to(256);
  // Lines per work-group: as many as fill 128 work-items, where a line takes fewer; one line per
  // work-group where it is read three times (its loop runs over the line's work-items only).
  const std::int64_t rows =
      in_registers ? std::max<std::int64_t>(1, std::min<std::int64_t>(128, widest) / lanes) : 1;
  const std::int64_t group = lanes * rows;
  const std::string G = number(group), W = number(lanes), local(d.local), barrier(d.barrier);
  std::vector<std::string> outputs = r.begin("kiln_softmax", t);
  const KernelInput& in = k.inputs[0];
  const int slot = structure.slot(in.node);
  std::string body;
  body += "  " + L + " g = (" + L + ")" + std::string(d.group_id) + ";\n";
  body += "  int l = (int)" + std::string(d.local_id) + ";\n";
  body += "  int lane = l % " + W + ", row = l / " + W + ";\n";
  body += "  " + L + " line = g * " + number(rows) + " + row;\n";
  body += "  int live = line < " + number(lines) + ";\n";
  body += "  " + L + " base = (line / " + number(inner) + ") * " + number(len * inner) +
          " + line % " + number(inner) + ";\n";
  const auto value = [&](const std::string& name) {
    r.load(body, name + "_", slot, in.view, "base + j * " + number(inner));
    body += "  " + T + " " + name + " = " + cast(name + "_", in.node->dtype, t, d) + ";\n";
  };
  // The tree over each line's work-items' values in `array`, `merge` combining [l] and [l + s];
  // the line's result then in [row * lanes].
  const auto tree = [&](const std::string& array, const std::string& merge) {
    body += "  " + barrier + ";\n  for (int s = " + number(lanes / 2) +
            "; s > 0; s >>= 1) {\n    if (lane < s) " + array + "[l] = " + merge + ";\n    " +
            barrier + ";\n  }\n";
  };
  // The loop over the work-item's values of the line: in registers, or read each time.
  const std::string each_j =
      in_registers ? "#pragma unroll\n  for (int k = 0; k < " + number(each) + "; ++k) {\n  " +
                         L + " j = lane + k * " + W + ";\n  if (live && j < " + number(len) +
                         ") {\n"
                   : "  for (" + L + " j = lane; j < " + number(len) + "; j += " + W + ") {\n";
  const std::string end_j = in_registers ? "  }\n  }\n" : "  }\n";
  const auto next = [&] {
    if (in_registers) body += "  " + T + " x = xs[k];\n";
    else value("x");
  };
  body += "  " + T + " m = -" + std::string(d.infinity) + ";\n";
  if (in_registers) body += "  " + T + " xs[" + number(each) + "];\n";
  body += each_j;
  value("x");
  if (in_registers) body += "  xs[k] = x;\n";
  body += "  m = m < x ? x : m;\n" + end_j;
  body += "  " + local + " " + T + " maxima[" + G + "];\n  maxima[l] = m;\n";
  tree("maxima", "maxima[l] < maxima[l + s] ? maxima[l + s] : maxima[l]");
  body += "  m = maxima[row * " + W + "];\n  m = " + std::string(d.isfinite) + "(m) ? m : (" + T +
          ")0;\n";
  body += "  " + A + " total = 0;\n" + each_j;
  next();
  body += "  total = " +
          arithmetic(d, "total", '+', math(d, "exp", cast(arithmetic(d, "x", '-', "m"), t, acc, d))) +
          ";\n" + end_j;
  body += "  " + local + " " + A + " totals[" + G + "];\n  totals[l] = total;\n";
  tree("totals", arithmetic(d, "totals[l]", '+', "totals[l + s]"));
  body += "  total = totals[row * " + W + "];\n" + each_j;
  next();
  body += "  " + T + " shifted = " + arithmetic(d, "x", '-', "m") + ";\n";
  const std::string wide = cast("shifted", t, acc, d);
  const std::string result =
      root.op == Op::softmax ? arithmetic(d, math(d, "exp", wide), '/', "total")
                             : arithmetic(d, wide, '-', math(d, "log", "total"));
  body += "  out0[base + j * " + number(inner) + "] = " + cast(result, acc, t, d) + ";\n" + end_j;
  out.local_size = static_cast<std::size_t>(group);
  out.global_size = static_cast<std::size_t>((lines + rows - 1) / rows) * out.local_size;
  char head[160];
  std::snprintf(head, sizeof head, std::string(d.fixed_group).c_str(), static_cast<int>(group));
  r.finish(head, outputs, body);
  return std::move(out);
}

}  // namespace kiln::detail::codegen
