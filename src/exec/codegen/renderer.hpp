// Inside the C-style renderer (render.hpp): what every kernel family shares. The Renderer builds
// one kernel: its arguments, loads through views, the lowered elementwise body, the final source
// (preamble, the helpers the text names, the entry point). The families, one file each, write
// their kernel's body with it:
//   elementwise.cpp  elementwise and materialize kernels, copies, concat: reads through views
//   reduction.cpp    reductions over adjacent axes, softmax along an axis
//   matmul.cpp       matrix products
//   random.cpp       random_uniform
//   windows.cpp      the 2-D window ops (convolution, max pooling, their gradients)
//   indexing.cpp     gather, scatter_add, unwindow
//   scans.cpp        cumsum, cumprod, argsort
//   spectral.cpp     the Fourier transform (lines in local memory or in the output buffer)
//   complex_math.cpp the ops computed in complex types and their helpers
// helpers.cpp defines the kiln_* helper functions the registry's C templates and the families
// call; render.cpp chooses the family of a kernel.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "exec/codegen/dialect.hpp"
#include "exec/codegen/render.hpp"
#include "exec/schedule_cache.hpp"

namespace kiln::detail::codegen {

// "<prefix><n>", built in place: g++ 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
std::string numbered(const char* prefix, std::int64_t n);
inline std::string number(std::int64_t v) { return std::to_string(v); }

// The template `tmpl` with {0}, {1}, {2} replaced by args[0], args[1], args[2].
std::string fill_template(std::string_view tmpl, const std::string* args);
inline std::string fill(std::string_view tmpl, const std::string& a) { return fill_template(tmpl, &a); }

// A literal of type `t` with the value of `s` converted as the CPU converts it.
std::string literal(const Scalar& s, DType t, const Dialect& d);

// `expr`, a value of type `from`, as type `to` (convert_value's rules).
std::string cast(const std::string& expr, DType from, DType to, const Dialect& d);

// The helper adding (kiln_add, kiln_cadd) or multiplying (kiln_mul, kiln_cmul) values of type t.
inline std::string add_of(DType t) { return is_complex(t) ? "kiln_cadd" : "kiln_add"; }
inline std::string mul_of(DType t) { return is_complex(t) ? "kiln_cmul" : "kiln_mul"; }

// Float arithmetic written out by a kernel family: `a op b` (op one of + - * /), or the helper
// that applies the NaN rule where the dialect spells it out (kiln_add, ...); `f(x)` for a math
// function likewise.
std::string arithmetic(const Dialect& d, const std::string& a, char op, const std::string& b);
std::string math(const Dialect& d, const char* function, const std::string& x);

// The opening of a kernel with one work-item per position of `n`: the position in `var` (an
// i64), and the work-items past the end (the launch is rounded up to whole work-groups) leaving
// at once.
std::string per_item(const Dialect& d, const char* var, std::int64_t n);
// The launch of a kernel with one work-item per `positions_each` positions of `n` (work-groups of
// 64 work-items, or the device's largest if smaller).
void one_item_each(RenderedKernel& out, std::int64_t n, const DeviceTraits& device,
                   int positions_each = 1);

// The definitions of the helpers `text` names (helpers.cpp), for each type the kernel uses.
std::string helpers_for(const std::string& text, const Dialect& d, bool f64);

// complex_math.cpp: op `op` computed in a complex type, as a C expression of {0} and {1} (values
// of the dialect's complex type), or empty where kernels have no complex form of it; whether the
// c64 form computes in double; the definitions of the complex helpers `text` names (for c64, and
// for c128 too where `f64`).
std::string_view complex_form(Op op);
bool complex_form_needs_f64(Op op);
std::string complex_helpers_for(const std::string& text, const Dialect& d, bool f64);

class Renderer {
 public:
  Renderer(const GraphStructure& structure, const Dialect& dialect)
      : structure_(structure), d_(dialect) {}

  RenderedKernel& result() { return r_; }
  const Dialect& dialect() const { return d_; }
  // The dialect's 64-bit integer type, the type of every index.
  std::string i64() const { return std::string(d_.i64); }

  // The kernel's argument for the buffer of the node at `slot`.
  const std::string& argument(int slot);

  void note_type(DType t) {
    if (t == DType::f64 || t == DType::c128) r_.uses_f64 = true;
  }

  // The element type of a buffer of type t: a 16-bit float is the dialect's f16 storage (f16) or
  // its bits (bf16); a bool one byte.
  std::string storage_type(DType t) const;

  // Element `index` of `buffer` (of type t), as a value of d_.type(t) (float for 16-bit floats,
  // int 0/1 for bool).
  std::string read(const std::string& buffer, const std::string& index, DType t) const;

  // The statement writing `value` (of d_.type(t)) as element `index` of `buffer` (of type t).
  std::string write(const std::string& buffer, const std::string& index, const std::string& value,
                    DType t) const;

  // Statements declaring `name` (of the loaded node's type) as element `index` of the buffer of
  // node `slot`, read through the map of `view` (null: row-major).
  void load(std::string& body, const std::string& name, int slot, const ViewMap* view,
            const std::string& index);

  // The statements of a lowered body computed at element `index`; returns the name of the
  // result, and sets each stored node's value name in `stores`.
  std::string code(std::string& body, const KernelIr& ir, const std::string& index,
                   std::vector<std::string>* stores);

  // The source: preamble, helpers, then the entry point after `head`, whose buffer parameters
  // are `outputs`, the inputs the loads named and `extra` (with its leading comma), then `after`
  // (a second entry point of the same program).
  void finish(const std::string& head, const std::vector<std::string>& outputs,
              const std::string& body, const std::string& extra = "",
              const std::string& after = "");

  // Ends a kernel of one work-item per position of `n`; `before` (helper functions) goes in
  // front of the entry point, `extra` and `after` as finish takes them.
  RenderedKernel per_item_kernel(std::int64_t n, const DeviceTraits& device,
                                 const std::vector<std::string>& outputs, const std::string& body,
                                 const std::string& before = {}, const std::string& extra = {},
                                 const std::string& after = {});

  // Names the entry point of a kernel with one output, of type `t`; returns its parameters.
  std::vector<std::string> begin(const char* entry, DType t);

  // The parameter of output `i`, of type `t`.
  std::string output(DType t, int i);

 private:
  const GraphStructure& structure_;
  const Dialect& d_;
  RenderedKernel r_;
  std::map<int, std::string> args_;
};

// The kernel families: each renders the kernels render_kernel hands it.
RenderedKernel elementwise(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                           const Dialect& d, const DeviceTraits& device);
RenderedKernel copy(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                    const DeviceTraits& device);
RenderedKernel concatenation(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                             const DeviceTraits& device);
RenderedKernel reduction(const Kernel& k, const KernelIr& ir, const GraphStructure& structure,
                         const Dialect& d, const DeviceTraits& device);
RenderedKernel softmax_lines(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                             const DeviceTraits& device);
RenderedKernel matrix_product(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                              const DeviceTraits& device);
RenderedKernel uniform(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device);
RenderedKernel window2d(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                        const DeviceTraits& device);
RenderedKernel gather(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                      const DeviceTraits& device);
RenderedKernel scatter_add(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                           const DeviceTraits& device);
RenderedKernel unwindow(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                        const DeviceTraits& device);
RenderedKernel scan(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                    const DeviceTraits& device);
RenderedKernel argsort(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device);
RenderedKernel fourier(const Kernel& k, const GraphStructure& structure, const Dialect& d,
                       const DeviceTraits& device);

}  // namespace kiln::detail::codegen
