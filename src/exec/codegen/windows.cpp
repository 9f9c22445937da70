// The 2-D window ops over NCHW values (window2d.hpp): conv2d, its gradients with respect to the
// input and the weights, max_pool2d and its gradient.
#include "exec/codegen/renderer.hpp"
#include "exec/window2d.hpp"

namespace kiln::detail::codegen {

// 2-D convolution, its gradients and max pooling over NCHW values, one work-item per output
// element (conv2d and conv2d_grad_input: per tile of 4 channels by 4 columns; conv2d_grad_weight
// of few weights: several per weight, merged in order). conv2d, max_pool2d and
// conv2d_grad_weight of one work-item per weight sum (or compare) their terms in the reference's
// order and type, so their values are the reference's; conv2d_grad_input gathers the terms of
// each input position by window offset instead of the reference's scatter order.
RenderedKernel window2d(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                        const DeviceTraits& device) {
  Renderer r(structure, d);
  RenderedKernel& out = r.result();
  const Node& root = *k.root;
  const Window2d g = window2d_of(root);
  const std::int64_t n = root.numel();
  const DType t = root.dtype;
  const std::string T(d.type(t)), L = r.i64();
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
    body += "  " + L + " q = e;\n";
    for (std::size_t a = v.size(); a-- > 0;) {
      if (a == 0)
        body += "  " + L + " " + std::string(v[a].first) + " = q;\n";
      else
        body += "  " + L + " " + std::string(v[a].first) + " = q % " + N(v[a].second) +
                "; q /= " + N(v[a].second) + ";\n";
    }
  };
  // The tiled kernels' accumulators acc<q><u> (channel q, column u of the tile), and their terms:
  // acc<q><u> += a<u> * b<q> where inside<u> (the column's term exists).
  const auto declare_tile = [&](int size) {
    for (int q = 0; q < size; ++q)
      for (int u = 0; u < size; ++u)
        body += "  " + T + " acc" + std::to_string(q) + std::to_string(u) + " = 0;\n";
  };
  // Column u's term a<u>, loaded where inside<u> after `position` (a declaration) from input
  // `which` at `index`, else 0.
  const auto load_column = [&](const std::string& U, const std::string& position,
                               std::size_t which, const std::string& index) {
    body += "  " + T + " a" + U + " = 0;\n  if (inside" + U + ") {\n  " + position + ";\n";
    value(body, "a" + U + "_v", which, index, t);
    body += "  a" + U + " = a" + U + "_v;\n  }\n";
  };
  // Then the products, closing the two innermost loops.
  const auto accumulate_tile = [&](int size) {
    for (int q = 0; q < size; ++q)
      for (int u = 0; u < size; ++u) {
        const std::string Q = std::to_string(q), U = std::to_string(u), acc = "acc" + Q + U;
        const std::string a = std::string("a") + U, b = std::string("b") + Q;
        body += "  if (inside" + U + ") " + acc + " = " +
                arithmetic(d, acc, '+', arithmetic(d, a, '*', b)) + ";\n";
      }
    body += "  }\n  }\n";
  };
  // Stores the accumulators into the NCHW output: channel tile `ct` of `channels`, row `row` of
  // `rows`, column tile `xt` of `columns`, where inside.
  const auto store_tile = [&](int size, const std::string& ct, std::int64_t channels,
                              const std::string& row, std::int64_t rows, const std::string& xt,
                              std::int64_t columns) {
    const std::string S = std::to_string(size);
    for (int q = 0; q < size; ++q)
      for (int u = 0; u < size; ++u) {
        const std::string Q = std::to_string(q), U = std::to_string(u);
        body += "  if (" + ct + " * " + S + " + " + Q + " < " + N(channels) + " && " + xt + " * " +
                S + " + " + U + " < " + N(columns) + ") out0[((nn * " + N(channels) + " + " + ct +
                " * " + S + " + " + Q + ") * " + N(rows) + " + " + row + ") * " + N(columns) +
                " + " + xt + " * " + S + " + " + U + "] = acc" + Q + U + ";\n";
      }
  };
  switch (root.op) {
    case Op::conv2d: {
      // A work-item computes kTile output channels by kTile adjacent output columns: each term's
      // kTile weights and kTile input values serve kTile^2 products (a work-item per output
      // loads two values per product). Each output still sums its terms in the reference's
      // order, skipping the same padding positions, so its value is the reference's.
      constexpr int kTile = 4;
      const std::int64_t channel_tiles = (g.o + kTile - 1) / kTile;
      const std::int64_t column_tiles = (g.ow + kTile - 1) / kTile;
      const std::int64_t items = g.n * channel_tiles * g.oh * column_tiles;
      out.entry = "kiln_conv2d";
      body = per_item(d, "e", items);
      unpack({{"nn", g.n}, {"ot", channel_tiles}, {"i", g.oh}, {"jt", column_tiles}});
      const auto tile = [](int v) { return std::to_string(v); };
      declare_tile(kTile);
      body += "  for (" + L + " c = 0; c < " + N(g.c) + "; ++c)\n  for (" + L + " ki = 0; ki < " +
              N(g.kh) + "; ++ki) {\n  " + L + " y = " + row + ";\n  if (y < 0 || y >= " + N(g.h) +
              ") continue;\n  for (" + L + " kj = 0; kj < " + N(g.kw) + "; ++kj) {\n";
      // The weights of the tile's channels (a channel past the last reads the last: unused).
      for (int q = 0; q < kTile; ++q) {
        const std::string oc = "(ot * " + tile(kTile) + " + " + tile(q) + " < " + N(g.o) +
                               " ? ot * " + tile(kTile) + " + " + tile(q) + " : " + N(g.o - 1) + ")";
        body += "  " + T + " b" + tile(q) + ";\n  {\n  " + L + " oc = " + oc + ";\n";
        value(body, "b" + tile(q) + "_v", 1, wi, t);
        body += "  b" + tile(q) + " = b" + tile(q) + "_v;\n  }\n";
      }
      // The input values of the tile's columns, where inside the image (and the output).
      for (int u = 0; u < kTile; ++u) {
        const std::string U = tile(u);
        body += "  " + L + " x" + U + " = (jt * " + tile(kTile) + " + " + U + ") * " + N(g.sw) +
                " - " + N(g.pw) + " + kj * " + N(g.dw) + ";\n";
        body += "  int inside" + U + " = jt * " + tile(kTile) + " + " + U + " < " + N(g.ow) + " && x" +
                U + " >= 0 && x" + U + " < " + N(g.w) + ";\n";
        load_column(U, L + " x = x" + U, 0, xi);
      }
      accumulate_tile(kTile);
      store_tile(kTile, "ot", g.o, "i", g.oh, "jt", g.ow);
      return r.per_item_kernel(items, device, outputs, body);
    }
    case Op::conv2d_grad_weight: {
      // Few weights of many terms each (a first layer: 800 weights, each a sum over the batch
      // of 50,000 terms) would leave the device idle: `parts` work-items share each weight, each
      // summing a contiguous run of the batch in the reference's order, and a second launch
      // adds each weight's partial sums in order (the same bits on every run; with parts > 1 not
      // the reference's, whose sum runs over the whole batch in one).
      const std::int64_t weights = g.o * g.c * g.kh * g.kw, terms = g.oh * g.ow;
      std::int64_t parts = 1;
      while (parts * 2 <= g.n && weights * parts < 16384 && g.n / (parts * 2) * terms >= 256)
        parts *= 2;
      const std::int64_t chunk = (g.n + parts - 1) / parts;
      out.entry = "kiln_conv2d_grad_weight";
      body = per_item(d, "e", weights * parts);
      body += "  " + L + " w_at = e / " + N(parts) + ", part = e % " + N(parts) + ";\n";
      body += "  " + L + " q = w_at;\n  " + L + " kj = q % " + N(g.kw) + "; q /= " + N(g.kw) +
              ";\n  " + L + " ki = q % " + N(g.kh) + "; q /= " + N(g.kh) + ";\n  " + L +
              " c = q % " + N(g.c) + "; q /= " + N(g.c) + ";\n  " + L + " oc = q;\n";
      body += "  " + T + " acc = 0;\n";
      body += "  " + L + " last = part * " + N(chunk) + " + " + N(chunk) + ";\n  if (last > " +
              N(g.n) + ") last = " + N(g.n) + ";\n";
      body += "  for (" + L + " nn = part * " + N(chunk) + "; nn < last; ++nn)\n  for (" + L +
              " i = 0; i < " + N(g.oh) + "; ++i) {\n  " + L + " y = " + row + ";\n  if (y < 0 || y >= " +
              N(g.h) + ") continue;\n  for (" + L + " j = 0; j < " + N(g.ow) + "; ++j) {\n  " + L +
              " x = " + col + ";\n  if (x < 0 || x >= " + N(g.w) + ") continue;\n";
      value(body, "a", 1, gi, t);
      value(body, "b", 0, xi, t);
      body += "  acc = " + arithmetic(d, "acc", '+', arithmetic(d, "a", '*', "b")) +
              ";\n  }\n  }\n";
      if (parts == 1) {
        body += "  out0[e] = acc;\n";
        return r.per_item_kernel(weights, device, outputs, body);
      }
      body += "  partials[e] = acc;\n";
      const std::string global = d.global.empty() ? "" : std::string(d.global) + " ";
      std::string merge = per_item(d, "e", weights);
      merge += "  " + T + " acc = partials[e * " + N(parts) + "];\n";
      merge += "  for (" + L + " p = 1; p < " + N(parts) + "; ++p) acc = " +
               arithmetic(d, "acc", '+', "partials[e * " + N(parts) + " + p]") + ";\n";
      merge += "  out0[e] = acc;\n";
      out.merge_entry = "kiln_conv2d_grad_weight_merge";
      const std::string after = std::string(d.kernel) + " " + out.merge_entry + "(" + outputs[0] +
                                ", " + global + "const " + T + "* partials) {\n" + merge + "}\n";
      out.scratch_bytes = static_cast<std::size_t>(weights * parts) * size_of(t);
      RenderedKernel launches = r.per_item_kernel(weights * parts, device, outputs, body,
                                                  std::string(), ", " + global + T + "* partials",
                                                  after);
      launches.merge_local_size = launches.local_size;
      launches.merge_global_size = static_cast<std::size_t>(
          (weights + static_cast<std::int64_t>(launches.local_size) - 1) /
          static_cast<std::int64_t>(launches.local_size) *
          static_cast<std::int64_t>(launches.local_size));
      return launches;
    }
    case Op::conv2d_grad_input: {
      // A work-item per tile of kTile input channels by kTile adjacent input columns, as conv2d's
      // tiles: each term's kTile weights and kTile gradient values serve kTile^2 products, every
      // input position summing its terms in the order of one work-item per position.
      constexpr int kTile = 4;
      const std::int64_t channel_tiles = (g.c + kTile - 1) / kTile;
      const std::int64_t column_tiles = (g.w + kTile - 1) / kTile;
      const std::int64_t items = g.n * channel_tiles * g.h * column_tiles;
      out.entry = "kiln_conv2d_grad_input";
      body = per_item(d, "e", items);
      unpack({{"nn", g.n}, {"ct", channel_tiles}, {"y", g.h}, {"xt", column_tiles}});
      const auto tile = [](int v) { return std::to_string(v); };
      const std::string K = tile(kTile);
      declare_tile(kTile);
      body += "  for (" + L + " oc = 0; oc < " + N(g.o) + "; ++oc)\n  for (" + L + " ki = 0; ki < " +
              N(g.kh) + "; ++ki) {\n  " + L + " ti = y + " + N(g.ph) + " - ki * " + N(g.dh) +
              ";\n  if (ti < 0 || ti % " + N(g.sh) + " != 0) continue;\n  " + L + " i = ti / " +
              N(g.sh) + ";\n  if (i >= " + N(g.oh) + ") continue;\n  for (" + L + " kj = 0; kj < " +
              N(g.kw) + "; ++kj) {\n";
      // The weights of the tile's channels (a channel past the last reads the last: unused).
      for (int q = 0; q < kTile; ++q) {
        const std::string Q = tile(q);
        body += "  " + T + " b" + Q + ";\n  {\n  " + L + " c = ct * " + K + " + " + Q + " < " +
                N(g.c) + " ? ct * " + K + " + " + Q + " : " + N(g.c - 1) + ";\n";
        value(body, "b" + Q + "_v", 1, wi, t);
        body += "  b" + Q + " = b" + Q + "_v;\n  }\n";
      }
      // The gradient values that reach the tile's columns through this offset.
      for (int u = 0; u < kTile; ++u) {
        const std::string U = tile(u);
        body += "  " + L + " tj" + U + " = xt * " + K + " + " + U + " + " + N(g.pw) + " - kj * " +
                N(g.dw) + ";\n";
        body += "  int inside" + U + " = xt * " + K + " + " + U + " < " + N(g.w) + " && tj" + U +
                " >= 0 && tj" + U + " % " + N(g.sw) + " == 0 && tj" + U + " / " + N(g.sw) +
                " < " + N(g.ow) + ";\n";
        load_column(U, L + " j = tj" + U + " / " + N(g.sw), 0, gi);
      }
      accumulate_tile(kTile);
      store_tile(kTile, "ct", g.c, "y", g.h, "xt", g.w);
      return r.per_item_kernel(items, device, outputs, body);
    }
    case Op::max_pool2d: {
      out.entry = "kiln_max_pool2d";
      const DType in = root.inputs[0]->dtype;
      const std::string I(d.type(in));
      unpack({{"p", g.n * g.c}, {"i", g.oh}, {"j", g.ow}});
      body += "  " + I + " best = 0;\n  int any = 0;\n";
      body += "  for (" + L + " ki = 0; ki < " + N(g.kh) + "; ++ki)\n  for (" + L + " kj = 0; kj < " +
              N(g.kw) + "; ++kj) {\n  " + L + " y = " + row + ", x = " + col +
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
      body += "  for (" + L + " i = 0; i < " + N(g.oh) + "; ++i)\n  for (" + L + " j = 0; j < " + N(g.ow) +
              "; ++j) {\n  " + I + " best = 0;\n  int any = 0, hit = 0, ties = 0;\n";
      body += "  for (" + L + " ki = 0; ki < " + N(g.kh) + "; ++ki)\n  for (" + L + " kj = 0; kj < " +
              N(g.kw) + "; ++kj) {\n  " + L + " wy = " + row + ", wx = " + col +
              ";\n  if (wy < 0 || wy >= " + N(g.h) + " || wx < 0 || wx >= " + N(g.w) +
              ") continue;\n  if (wy == y && wx == x) hit = 1;\n";
      value(body, "v", 0, "p * " + N(g.h * g.w) + " + wy * " + N(g.w) + " + wx", in);
      body += "  if (!any || kiln_replaces(v, best, 1)) best = v;\n  any = 1;\n  }\n";
      body += "  if (!hit || !(mine == best)) continue;\n";
      body += "  for (" + L + " ki = 0; ki < " + N(g.kh) + "; ++ki)\n  for (" + L + " kj = 0; kj < " +
              N(g.kw) + "; ++kj) {\n  " + L + " wy = " + row + ", wx = " + col +
              ";\n  if (wy < 0 || wy >= " + N(g.h) + " || wx < 0 || wx >= " + N(g.w) +
              ") continue;\n";
      value(body, "u", 0, "p * " + N(g.h * g.w) + " + wy * " + N(g.w) + " + wx", in);
      body += "  if (u == best) ++ties;\n  }\n";
      value(body, "gr", 1, "(p * " + N(g.oh) + " + i) * " + N(g.ow) + " + j", t);
      body += "  acc = " +
              arithmetic(d, "acc", '+',
                         "(ties > 0 ? " + arithmetic(d, "gr", '/', "(" + T + ")ties") + " : (" + T +
                             ")0)") +
              ";\n  }\n";
      body += "  out0[e] = acc;\n";
      break;
    }
  }
  return r.per_item_kernel(n, device, outputs, body);
}

}  // namespace kiln::detail::codegen
