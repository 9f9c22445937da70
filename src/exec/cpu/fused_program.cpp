#include "exec/cpu/fused_program.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "exec/cpu/float_loops.hpp"
#include "exec/operand.hpp"
#include "exec/semantics/elementwise.hpp"
#include "graph/custom_kernel.hpp"

namespace kiln::detail::cpu {

// A tag that no binding on any thread has had before. Each thread takes blocks of 2^32 tags from
// a shared counter, so a binding costs no atomic read-modify-write (which costs as much as
// binding a tiny kernel does otherwise).
std::uint64_t new_binding_tag() {
  static std::atomic<std::uint64_t> blocks{1};  // tag 0 stays unused: "filled by nothing"
  thread_local std::uint64_t next = 0, end = 0;
  if (next == end) {
    next = blocks.fetch_add(1) << 32;
    end = next + (std::uint64_t{1} << 32);
  }
  return next++;
}

Registers& thread_registers() {
  thread_local Registers r;
  return r;
}

namespace {

std::shared_ptr<Code> compile(const Kernel& k, const GraphStructure& structure) {
  auto code = std::make_shared<Code>();
  // Broadcast scalars are filled once per thread; views are prepared once, when they need no
  // staging of lower layers.
  const DescribeLoad describe = [](const Node& data, const Node* view) {
    const Source source(*data.result, view ? &view->view : nullptr);
    return LoadFacts{source.constant(), source.prepared_layer()};
  };
  lower_kernel(k.body, k.stored, structure, describe, *code);
  for (Instruction& ins : code->code) {
    if (ins.load >= 0) continue;
    Step& s = ins.step;
    const OpKind kind = op_info(s.op).kind;
    if ((kind == OpKind::unary || kind == OpKind::binary) && s.dtype == DType::f32 &&
        s.compute == DType::f32 && has_float_loop(s.op) &&
        std::all_of(s.arg_types, s.arg_types + s.arity, [](DType t) { return t == DType::f32; }))
      s.loop = kind == OpKind::unary ? kUnaryF32Loop : kBinaryF32Loop;
  }
  return code;
}

}  // namespace

const Code& code_of(KernelPlan& plan, const Kernel& k, const GraphStructure& structure) {
  if (!plan.prepared) plan.prepared = compile(k, structure);
  return static_cast<const Code&>(*plan.prepared);
}

namespace {

// The loops for every type and op, with the op fixed per loop so that the compiler removes the
// switch in the scalar semantics and vectorises what it can.
template <class T, class O, class F> void loop1(const T* a, O* o, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = convert_value<O>(f(a[i]));
}
template <class T, class O, class F>
void loop2(const T* a, const T* b, O* o, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = convert_value<O>(f(a[i], b[i]));
}

// Rows whose values may be computed in an integer type (every rule but float_valued) get a loop
// with the op fixed; float-valued rows reach these loops only in odd type combinations, through
// the loop with the op read per value.
#define KILN_NOT_ELEMENTWISE_(...)
#define KILN_FIXED_UNARY_(name, operands, rule, ...) KILN_FIXED_IF_##rule(KILN_FIXED_UNARY_CASE_, name)
#define KILN_FIXED_BINARY_(name, operands, rule, ...) KILN_FIXED_IF_##rule(KILN_FIXED_BINARY_CASE_, name)
#define KILN_FIXED_IF_same(make, name) make(name)
#define KILN_FIXED_IF_given(make, name) make(name)
#define KILN_FIXED_IF_to_i32(make, name) make(name)
#define KILN_FIXED_IF_to_bool(make, name) make(name)
#define KILN_FIXED_IF_to_i64(make, name) make(name)
#define KILN_FIXED_IF_to_real(make, name) make(name)
#define KILN_FIXED_IF_float_valued(make, name)
#define KILN_FIXED_IF_to_complex(make, name)
#define KILN_FIXED_IF_to_real_float(make, name)
#define KILN_FIXED_UNARY_CASE_(name) \
  case Op::name: return loop1(a, o, n, [](T x) { return unary_value<T>(Op::name, x); });
#define KILN_FIXED_BINARY_CASE_(name) \
  case Op::name: return loop2(a, b, o, n, [](T x, T y) { return binary_value<T>(Op::name, x, y); });

template <class T, class O> void generic_unary(Op op, const T* a, O* o, std::int64_t n) {
  switch (op) {
    KILN_OP_REGISTRY(KILN_NOT_ELEMENTWISE_, KILN_FIXED_UNARY_, KILN_NOT_ELEMENTWISE_)
    default: return loop1(a, o, n, [op](T x) { return unary_value<T>(op, x); });
  }
}
template <class T, class O>
void generic_binary(Op op, const T* a, const T* b, O* o, std::int64_t n) {
  switch (op) {
    KILN_OP_REGISTRY(KILN_NOT_ELEMENTWISE_, KILN_NOT_ELEMENTWISE_, KILN_FIXED_BINARY_)
    default: return loop2(a, b, o, n, [op](T x, T y) { return binary_value<T>(op, x, y); });
  }
}
#undef KILN_NOT_ELEMENTWISE_
#undef KILN_FIXED_UNARY_
#undef KILN_FIXED_BINARY_
#undef KILN_FIXED_IF_same
#undef KILN_FIXED_IF_given
#undef KILN_FIXED_IF_to_i32
#undef KILN_FIXED_IF_to_bool
#undef KILN_FIXED_IF_to_i64
#undef KILN_FIXED_IF_float_valued
#undef KILN_FIXED_IF_to_real
#undef KILN_FIXED_IF_to_complex
#undef KILN_FIXED_IF_to_real_float
#undef KILN_FIXED_UNARY_CASE_
#undef KILN_FIXED_BINARY_CASE_

// Rounds n values of the arithmetic type in place to the narrow type `to` (f32 values to a 16-bit
// float, i32 values to bool's 0 and 1 or wrapped to a narrow integer's width), also storing them as
// that type to `narrow` when it is given.
void round_values(DType to, void* values, void* narrow, std::int64_t n) {
  if (is_narrow_integer(to)) {
    auto* v = static_cast<std::int32_t*>(values);
    dispatch_stored(to, [&]<class T>() {
      for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(v[i]);
      if (narrow != nullptr) {
        T* t = static_cast<T*>(narrow);
        for (std::int64_t i = 0; i < n; ++i) t[i] = static_cast<T>(v[i]);
      }
    });
    return;
  }
  if (is_bool(to)) {
    auto* v = static_cast<std::int32_t*>(values);
    for (std::int64_t i = 0; i < n; ++i) v[i] = v[i] != 0 ? 1 : 0;
    if (narrow != nullptr) {
      auto* b = static_cast<std::uint8_t*>(narrow);
      for (std::int64_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(v[i]);
    }
    return;
  }
  const FloatLoops& loops = float_loops();
  auto* f = static_cast<float*>(values);
  auto* bits = static_cast<std::uint16_t*>(narrow);
  if (narrow == nullptr) return (to == DType::f16 ? loops.round_f16 : loops.round_bf16)(f, n);
  (to == DType::f16 ? loops.narrow_f16 : loops.narrow_bf16)(f, bits, n);
  (to == DType::f16 ? loops.widen_f16 : loops.widen_bf16)(bits, f, n);
}

[[gnu::noipa]] void run_step(const Step& s, Registers& r, void* out, std::int64_t n) {
  const OpInfo& info = op_info(s.op);
  const void* args[3] = {};
  for (int i = 0; i < s.arity; ++i) {
    const int a = s.args[i];
    const DType want = info.kind == OpKind::ternary && i == 0 ? s.arg_types[i] : s.compute;
    if (s.arg_types[i] == want) {
      args[i] = r.value(a);
    } else {
      convert_values(r.value(a), s.arg_types[i], r.scratch[i].data(), want, n);
      args[i] = r.scratch[i].data();
    }
  }
  const FloatLoops& loops = float_loops();
  switch (info.kind) {
    case OpKind::unary:
      if (s.compute == s.dtype && has_float_loop(s.op)) {
        if (s.compute == DType::f32)
          return loops.unary_f32(s.op, static_cast<const float*>(args[0]),
                                 static_cast<float*>(out), n);
        if (s.compute == DType::f64)
          return loops.unary_f64(s.op, static_cast<const double*>(args[0]),
                                 static_cast<double*>(out), n);
      }
      return dispatch(s.compute, [&]<class T>() {
        dispatch(s.dtype, [&]<class O>() {
          generic_unary<T, O>(s.op, static_cast<const T*>(args[0]), static_cast<O*>(out), n);
        });
      });
    case OpKind::binary:
      if (s.compute == s.dtype && has_float_loop(s.op)) {
        if (s.compute == DType::f32)
          return loops.binary_f32(s.op, static_cast<const float*>(args[0]),
                                  static_cast<const float*>(args[1]), static_cast<float*>(out),
                                  n);
        if (s.compute == DType::f64)
          return loops.binary_f64(s.op, static_cast<const double*>(args[0]),
                                  static_cast<const double*>(args[1]), static_cast<double*>(out),
                                  n);
      }
      return dispatch(s.compute, [&]<class T>() {
        dispatch(s.dtype, [&]<class O>() {
          generic_binary<T, O>(s.op, static_cast<const T*>(args[0]),
                               static_cast<const T*>(args[1]), static_cast<O*>(out), n);
        });
      });
    case OpKind::ternary:
      return dispatch(s.arg_types[0], [&]<class C>() {
        dispatch(s.dtype, [&]<class O>() {
          const C* c = static_cast<const C*>(args[0]);
          const O* a = static_cast<const O*>(args[1]);
          const O* b = static_cast<const O*>(args[2]);
          O* o = static_cast<O*>(out);
          for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] != C{0} ? a[i] : b[i];
        });
      });
    case OpKind::custom: {
      const auto& f = s.custom->element;
      const double* a = static_cast<const double*>(args[0]);
      return dispatch(s.dtype, [&]<class O>() {
        O* o = static_cast<O*>(out);
        for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(a[i]));
      });
    }
    default: break;
  }
  throw Error(ErrorCode::internal_error,
              std::string(info.name) + ": not an elementwise op");
}

// Asks for the memory of the chunk kPrefetchAhead chunks after this one (`bytes` at `at`) of a
// source read in place, so that its loads overlap the arithmetic until then: the hardware
// prefetchers alone stay too close behind a kernel that computes a while on each chunk (10% to
// 15% of the time of exp(sin(a)*b+c)/2 over 10M values). Prefetches never fault, so the
// addresses may run past the buffer; they are formed as integers.
inline void prefetch_next(const void* at, std::int64_t bytes) {
  const std::uintptr_t from =
      reinterpret_cast<std::uintptr_t>(at) + kPrefetchAhead * static_cast<std::uintptr_t>(bytes);
  for (std::uintptr_t a = from; a < from + static_cast<std::uintptr_t>(bytes); a += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 3);
}

}  // namespace

// Evaluates positions [start, start + n) (n <= kChunk) of the program's result into its result
// register, or into `out` directly when it is given (as values of the last node's type; in the
// register, a 16-bit float node's values are f32). Steps of stored nodes write straight into
// their buffers (`stored`, one per Kernel::stored entry). `at`, when given, holds where each
// load that is not a constant finds these positions' values in place (run_elementwise locates
// them once per range of whole rows).
// Kept out of interprocedural optimisation (as is run_step): every caller passes this thread's
// registers, and a version specialised for them looks the thread-local up again (through
// __tls_get_addr) at each use.
[[gnu::noipa]] void run_chunk(const Program& p, Registers& r, std::int64_t start, std::int64_t n,
                              void* out, const std::vector<Buffer*>* stored,
                              const void* const* at) {
  const Code& code = *p.code;
  const FloatLoops& loops = float_loops();
  r.prepare(static_cast<std::size_t>(code.registers));
  for (std::size_t i = 0; i < code.code.size(); ++i) {
    const Instruction& ins = code.code[i];
    if (ins.load >= 0) {
      // A plain load needs no copy: the steps read the source buffer itself.
      const Source& src = p.sources[ins.load];
      const IrLoad& load = code.loads[ins.load];
      if (load.constant) {
        if (r.filled_by[ins.out] != p.tag) {
          src.fill(p.fill, r.reg(ins.out), load.type);
          r.filled_by[ins.out] = p.tag;
        }
        r.values[ins.out] = r.reg(ins.out);
        continue;
      }
      const void* direct = at                                      ? at[ins.load]
                           : src.dtype() == load.type && !(p.use[ins.load] & Program::kCopy)
                               ? src.contiguous(start, n)
                               : nullptr;
      if (direct != nullptr) {
        if (p.use[ins.load] & Program::kPrefetch)
          prefetch_next(direct, n * static_cast<std::int64_t>(size_of(load.type)));
        r.values[ins.out] = direct;
      } else {
        src.read(start, n, r.reg(ins.out), load.type);
        r.values[ins.out] = r.reg(ins.out);
      }
    } else {
      const bool last = i + 1 == code.code.size();
      void* target = last && out ? out : r.reg(ins.out);
      if (ins.store >= 0 && stored) {
        Buffer& b = *(*stored)[static_cast<std::size_t>(ins.store)];
        target = static_cast<std::byte*>(b.data()) +
                 start * static_cast<std::int64_t>(size_of(b.dtype()));
      }
      const Step& s = ins.step;
      if (s.rounds_to != s.dtype) [[unlikely]] {
        // A narrow node (16-bit float, bool): computed in its arithmetic type into its register,
        // then rounded, and stored as the narrow values where it is stored.
        void* narrow = target != r.reg(ins.out) ? target : nullptr;
        target = r.reg(ins.out);
        if (s.op == Op::convert && s.arg_types[0] != s.dtype) {
          // From another type: rounded once, straight from the operand's values (an f64 to a
          // 16-bit float, 0.5 to true).
          alignas(8) std::uint16_t bits[kChunk];
          convert_values(r.value(s.args[0]), s.arg_types[0], bits, s.rounds_to, n);
          convert_values(bits, s.rounds_to, target, s.dtype, n);
          if (narrow != nullptr)
            std::memcpy(narrow, bits, static_cast<std::size_t>(n) * size_of(s.rounds_to));
          r.values[ins.out] = target;
          continue;
        }
        run_step(s, r, target, n);
        round_values(s.rounds_to, target, narrow, n);
        r.values[ins.out] = target;
        continue;
      }
      if (s.loop == kBinaryF32Loop)
        loops.binary_f32(s.op, static_cast<const float*>(r.value(s.args[0])),
                         static_cast<const float*>(r.value(s.args[1])),
                         static_cast<float*>(target), n);
      else if (s.loop == kUnaryF32Loop)
        loops.unary_f32(s.op, static_cast<const float*>(r.value(s.args[0])),
                        static_cast<float*>(target), n);
      else
        run_step(s, r, target, n);
      r.values[ins.out] = target;
    }
  }
}

bool row_steps(const Program& p, std::int64_t row, std::int64_t* steps) {
  const Code& code = *p.code;
  if (code.loads.size() > kMaxRowLoads) return false;
  for (std::size_t i = 0; i < code.loads.size(); ++i) {
    const IrLoad& load = code.loads[i];
    steps[i] = 0;
    if (load.constant) continue;
    const Source& source = p.sources[i];
    if (source.dtype() != load.type || (p.use[i] & Program::kCopy)) return false;
    const std::optional<std::int64_t> step = source.row_step(row);
    if (!step) return false;
    steps[i] = *step * static_cast<std::int64_t>(size_of(load.type));
  }
  return true;
}

// `rows` whole rows of `row` values of a program that loads its rows in place (`at`, advancing
// by `steps` bytes per row), calls float loops directly in every step and stores only its
// result (to `out`): run_chunk without its per-chunk decisions, which cost a tenth of a
// [1000,1000] + [1000] add. Kept out of interprocedural optimisation, as run_chunk is: inlined
// into its caller, it looked this thread's registers up again (__tls_get_addr) for every row.
[[gnu::noipa]] void run_direct_rows(const Program& p, Registers& r, const void** at,
                                    const std::int64_t* steps, std::int64_t rows,
                                    std::int64_t row, std::byte* out) {
  const Code& code = *p.code;
  const FloatLoops& loops = float_loops();
  r.prepare(static_cast<std::size_t>(code.registers));
  for (const Instruction& ins : code.code) {
    if (ins.load < 0 || !code.loads[ins.load].constant) continue;
    if (r.filled_by[ins.out] != p.tag) {
      p.sources[ins.load].fill(p.fill, r.reg(ins.out), code.loads[ins.load].type);
      r.filled_by[ins.out] = p.tag;
    }
    r.values[ins.out] = r.reg(ins.out);
  }
  const std::size_t last = code.code.size() - 1;
  const std::size_t loads = code.loads.size();
  for (std::int64_t c = 0; c < rows; ++c) {
    if (c > 0) {  // advanced before each row but the first, so no pointer passes the buffer
      for (std::size_t i = 0; i < loads; ++i)
        if (steps[i] != 0) at[i] = static_cast<const std::byte*>(at[i]) + steps[i];
      out += row * static_cast<std::int64_t>(sizeof(float));
    }
    for (std::size_t i = 0; i <= last; ++i) {
      const Instruction& ins = code.code[i];
      if (ins.load >= 0) {
        if (!code.loads[ins.load].constant) r.values[ins.out] = at[ins.load];
        continue;
      }
      const Step& s = ins.step;
      float* target =
          i == last ? reinterpret_cast<float*>(out) : static_cast<float*>(r.reg(ins.out));
      const float* a = static_cast<const float*>(r.value(s.args[0]));
      if (s.loop == kBinaryF32Loop)
        loops.binary_f32(s.op, a, static_cast<const float*>(r.value(s.args[1])), target, row);
      else
        loops.unary_f32(s.op, a, target, row);
      r.values[ins.out] = target;
    }
  }
}

}  // namespace kiln::detail::cpu
