// The fast CPU executor: runs the schedule's kernels. Schedules and compiled fused kernels are
// cached by the graph's structure (schedule_cache.hpp), so a repeated graph is only bound and
// run. Fused elementwise kernels are interpreted without a compile step, chunk by chunk (each
// chunk small enough to stay in L1), with vectorised loops; reductions consume their fused
// producers the same way; matmul calls oneDNN (f32) or OpenBLAS (f64 and small f32 products);
// convolution, pooling, softmax, gather and scatter_add have kernels of their own; every other
// op runs its reference kernel. Work is split over the thread pool.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory_resource>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "exec/cpu/chunk_ops.hpp"
#include "exec/cpu/gemm.hpp"
#include "exec/cpu/indexing.hpp"
#include "exec/cpu/softmax.hpp"
#include "exec/cpu/source.hpp"
#include "exec/cpu/thread_pool.hpp"
#include "exec/cpu/window2d.hpp"
#include "exec/fusion.hpp"
#include "exec/schedule_cache.hpp"
#include "exec/kernel_profile.hpp"
#include "exec/operand.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/semantics/elementwise.hpp"
#include "graph/custom_kernel.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail::cpu {

namespace {

constexpr std::int64_t kChunk = 1024;  // values per register: 8 KiB at most, so chunks stay in L1
// Sources at least this large are prefetched ahead (prefetch_next); smaller ones are mostly in
// cache, where the prefetches cost more than they save (25% on a [1000,1000] + [1000] add).
constexpr std::size_t kPrefetchFrom = std::size_t{8} << 20;
// Kernels that stream such sources run in shorter chunks, prefetched this many chunks ahead.
// Each step of a chunk is a pass over it, and only the passes that load a source ask memory for
// anything: the shorter the chunk, the sooner the next loads come and the better the hardware
// prefetchers keep up. exp(sin(a)*b+c)/2 over 10M values, 1 thread, on a Xeon with AVX-512:
// 17.4 ms in chunks of 1024 prefetched one ahead, 14.4 ms in chunks of 256, 13.1 ms with 256
// prefetched two ahead; its sum over all values (the producer fused into the reduction) 16.1 ->
// 10.7 ms. Cached kernels keep kChunk, where the per-chunk cost counts.
constexpr std::int64_t kStreamChunk = 256;
constexpr std::uintptr_t kPrefetchAhead = 2;

// ---- fused elementwise programs --------------------------------------------------------------

struct Step {
  Op op = Op::store;
  DType dtype = DType::f32;      // the node's type
  DType compute = DType::f32;    // the type the op computes in
  int arity = 0;
  int args[3] = {};              // registers
  DType arg_types[3] = {};       // the types of the values in them
  std::shared_ptr<const CustomKernel> custom;  // custom_map
  // An f32 op with a vectorised loop whose operands are f32 already: run_chunk calls the loop
  // directly, without run_step's conversions and dispatch (which cost as much as the loop on
  // short rows).
  enum class Direct : std::uint8_t { none, unary_f32, binary_f32 } direct = Direct::none;
};

// A fused kernel as a register machine: a list of loads (a source into a register) and steps
// (an op from registers into a register). Registers are reused once their value is dead, so a
// fused chain of any length needs only a few.
struct Instruction {
  int load = -1;  // an index into Code::loads, or -1 for a step
  Step step;
  int out = 0;    // register
  int store = -1;  // for a step whose node the kernel also stores: its index in Kernel::stored
};

// A value read from memory: the buffer of the node at position `node` of the graph's structure,
// through the map of the view node at `through` (or -1: as it is).
struct Load {
  int node;
  int through;
  DType type;
  bool constant;  // one value broadcast everywhere: filled once per thread
  // The view's map prepared once (coalesced into one strided layer), when it needs no staging.
  std::shared_ptr<const ViewLayer> layer;
};

// A compiled fused kernel. It names nodes by their positions in the graph's structure, so the
// schedule cache keeps it for every later graph of the same structure.
struct Code final : PreparedKernel {
  std::vector<Load> loads;
  std::vector<Instruction> code;
  int registers = 0;
  int result = -1;  // register
};

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

// A Code bound to the buffers of one evaluation.
struct Program {
  const Code* code = nullptr;
  // The per-load vectors live in `storage` when they fit (a program of up to 8 loads or so), so
  // that binding a small kernel allocates nothing.
  alignas(std::max_align_t) std::byte storage[768];
  std::pmr::monotonic_buffer_resource arena{storage, sizeof storage};
  std::pmr::vector<Source> sources{&arena};  // one per load
  // Per load: how its chunks are read (flags below).
  std::pmr::vector<std::uint8_t> use{&arena};
  static constexpr std::uint8_t kCopy = 1;      // a buffer the kernel also writes: copied, never
                                                // read in place
  static constexpr std::uint8_t kPrefetch = 2;  // a buffer too large to stay in cache: its next
                                                // chunk is prefetched (prefetch_next)
  std::uint64_t tag = 0;  // unique per binding: which registers hold its constants
  std::int64_t fill = 0;  // values a constant register needs: a chunk, or all positions if fewer

  // `positions`: how many positions the kernel evaluates.
  Program(const Code& c, const GraphStructure& structure, std::int64_t positions)
      : code(&c), fill(std::min(kChunk, positions)) {
    use.assign(c.loads.size(), 0);
    tag = new_binding_tag();
    sources.reserve(c.loads.size());
    const std::vector<Node*>& nodes = structure.nodes();
    for (std::size_t i = 0; i < c.loads.size(); ++i) {
      const Load& l = c.loads[i];
      const Buffer& buffer = *nodes[l.node]->result;
      if (buffer.bytes() >= kPrefetchFrom) use[i] = kPrefetch;
      if (l.through < 0 || l.layer) sources.emplace_back(buffer, l.layer.get());
      else sources.emplace_back(buffer, &nodes[l.through]->view);
    }
  }
};

// The chunk length for evaluating a program: kStreamChunk when it streams a source too large for
// the caches (see kStreamChunk), else kChunk.
std::int64_t chunk_for(const Program& p) {
  const bool streams = std::any_of(p.use.begin(), p.use.end(),
                                   [](std::uint8_t u) { return (u & Program::kPrefetch) != 0; });
  return streams ? kStreamChunk : kChunk;
}

DType compute_type(const Node& n, const DType* arg_types) {
  switch (n.info().kind) {
    case OpKind::binary: return promote(arg_types[0], arg_types[1]);
    // Comparisons of one value (to_i32: sign, even) compute in the operand type.
    case OpKind::unary:
      return n.info().type_rule == TypeRule::to_i32 ? arg_types[0] : n.dtype;
    case OpKind::custom: return DType::f64;
    default: return n.dtype;
  }
}

// Compiles the fused nodes `body` (inputs first); the values they read from memory must be
// computed already.
std::shared_ptr<Code> compile(const std::vector<Node*>& body, const std::vector<Node*>& stored,
                              const GraphStructure& structure) {
  auto p = std::make_shared<Code>();
  const std::unordered_set<const Node*> in_body(body.begin(), body.end());
  // A value is a fused node or a (node, view node) pair read from memory.
  using Value = std::pair<const Node*, const Node*>;
  auto value_of = [&](const NodePtr& input) -> Value {
    const Node* d = input.get();
    const Node* through = nullptr;
    if (!d->result && d->is_view()) {
      through = d;
      d = d->view_base.get();
    }
    if (in_body.count(d)) through = nullptr;  // fused values are read as computed
    return {d, through};
  };
  struct ValueHash {
    std::size_t operator()(const Value& v) const {
      return std::hash<const void*>()(v.first) * 31 + std::hash<const void*>()(v.second);
    }
  };
  std::unordered_map<Value, std::size_t, ValueHash> last_use;
  last_use.reserve(body.size() * 2);
  for (std::size_t i = 0; i < body.size(); ++i)
    for (const auto& in : body[i]->inputs) last_use[value_of(in)] = i;

  std::vector<int> free_registers;
  auto allocate = [&] {
    if (!free_registers.empty()) {
      const int r = free_registers.back();
      free_registers.pop_back();
      return r;
    }
    return p->registers++;
  };
  std::unordered_map<Value, std::pair<int, DType>, ValueHash> live;  // value -> (register, type)
  std::unordered_set<int> constant_registers;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const Node* n = body[i];
    Step s;
    s.op = n->op;
    s.dtype = n->dtype;
    s.custom = n->attrs.custom;
    for (const auto& in : n->inputs) {
      const Value v = value_of(in);
      auto it = live.find(v);
      if (it == live.end()) {  // a value from memory: load it just before its first use
        Instruction load;
        load.load = static_cast<int>(p->loads.size());
        // A broadcast scalar gets a register of its own that no other value reuses, so it is
        // filled once per thread instead of once per chunk; a few of them, so that a long chain
        // of ops with constants still needs only a few registers.
        const Source source(*v.first->result, v.second ? &v.second->view : nullptr);
        const bool constant = source.constant() && constant_registers.size() < 16;
        p->loads.push_back({structure.slot(v.first), v.second ? structure.slot(v.second) : -1,
                            v.first->dtype, constant, source.prepared_layer()});
        load.out = constant ? p->registers++ : allocate();
        if (constant) constant_registers.insert(load.out);
        p->code.push_back(std::move(load));
        it = live.emplace(v, std::pair{p->code.back().out, v.first->dtype}).first;
      }
      s.args[s.arity] = it->second.first;
      s.arg_types[s.arity] = it->second.second;
      ++s.arity;
    }
    s.compute = compute_type(*n, s.arg_types);
    const OpKind kind = n->info().kind;
    if ((kind == OpKind::unary || kind == OpKind::binary) && s.dtype == DType::f32 &&
        s.compute == DType::f32 && has_float_loop(s.op) &&
        std::all_of(s.arg_types, s.arg_types + s.arity, [](DType t) { return t == DType::f32; }))
      s.direct = kind == OpKind::unary ? Step::Direct::unary_f32 : Step::Direct::binary_f32;
    Instruction step;
    step.step = std::move(s);
    step.out = allocate();
    const auto kept = std::find(stored.begin(), stored.end(), n);
    if (kept != stored.end()) step.store = static_cast<int>(kept - stored.begin());
    // Values whose last reader is this step give their registers back.
    for (const auto& in : n->inputs) {
      const Value v = value_of(in);
      auto it = live.find(v);
      if (it != live.end() && last_use[v] == i) {
        if (!constant_registers.count(it->second.first))
          free_registers.push_back(it->second.first);
        live.erase(it);
      }
    }
    live[{n, nullptr}] = {step.out, n->dtype};
    p->code.push_back(std::move(step));
  }
  p->result = p->code.back().out;
  return p;
}

// The compiled code of a kernel plan: compiled when the plan first runs, then kept with it.
const Code& code_of(KernelPlan& plan, const Kernel& k, const GraphStructure& structure) {
  if (!plan.prepared) plan.prepared = compile(k.body, k.stored, structure);
  return static_cast<const Code&>(*plan.prepared);
}

// Per-thread registers and conversion scratch.
struct Registers {
  std::vector<std::vector<std::int64_t>> regs;  // int64 storage keeps 8-byte alignment
  std::vector<const void*> values;  // where each register's current values are: its storage,
                                    // or the source buffer itself for a plain load
  std::vector<std::int64_t> scratch[3];
  std::vector<std::uint64_t> filled_by;  // the program whose constant a register holds
  void* reg(int i) { return regs[i].data(); }
  const void* value(int i) const { return values[i]; }
  // Every register and scratch vector holds kChunk values once prepared, so a later call for
  // no more registers returns at once (it runs for every chunk).
  void prepare(std::size_t count) {
    if (regs.size() >= count && !regs.empty()) return;
    if (regs.size() < count) regs.resize(count);
    if (values.size() < count) values.resize(count);
    if (filled_by.size() < count) filled_by.resize(count);
    for (auto& r : regs)
      if (r.size() < kChunk) r.resize(kChunk);
    for (auto& s : scratch)
      if (s.size() < kChunk) s.resize(kChunk);
  }
};

Registers& thread_registers() {
  thread_local Registers r;
  return r;
}

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
#define KILN_FIXED_IF_to_i64(make, name) make(name)
#define KILN_FIXED_IF_float_valued(make, name)
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
#undef KILN_FIXED_IF_to_i64
#undef KILN_FIXED_IF_float_valued
#undef KILN_FIXED_UNARY_CASE_
#undef KILN_FIXED_BINARY_CASE_

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

// Evaluates positions [start, start + n) (n <= kChunk) of the program's result into its result
// register, or into `out` directly when it is given. Steps of stored nodes write straight into
// their buffers (`stored`, one per Kernel::stored entry). `at`, when given, holds where each
// load that is not a constant finds these positions' values in place (run_elementwise locates
// them once per range of whole rows).
// Kept out of interprocedural optimisation (as is run_step): every caller passes this thread's
// registers, and a version specialised for them looks the thread-local up again (through
// __tls_get_addr) at each use.
[[gnu::noipa]] void run_chunk(const Program& p, Registers& r, std::int64_t start, std::int64_t n,
                              void* out, const std::vector<Buffer*>* stored = nullptr,
                              const void* const* at = nullptr) {
  const Code& code = *p.code;
  const FloatLoops& loops = float_loops();
  r.prepare(static_cast<std::size_t>(code.registers));
  for (std::size_t i = 0; i < code.code.size(); ++i) {
    const Instruction& ins = code.code[i];
    if (ins.load >= 0) {
      // A plain load needs no copy: the steps read the source buffer itself.
      const Source& src = p.sources[ins.load];
      const Load& load = code.loads[ins.load];
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
      if (s.direct == Step::Direct::binary_f32)
        loops.binary_f32(s.op, static_cast<const float*>(r.value(s.args[0])),
                         static_cast<const float*>(r.value(s.args[1])),
                         static_cast<float*>(target), n);
      else if (s.direct == Step::Direct::unary_f32)
        loops.unary_f32(s.op, static_cast<const float*>(r.value(s.args[0])),
                        static_cast<float*>(target), n);
      else
        run_step(s, r, target, n);
      r.values[ins.out] = target;
    }
  }
}

// Produces the values of a kernel's input stream: a fused program, or a plain source.
struct Producer {
  const Program* program = nullptr;
  const Source* source = nullptr;
  DType type;
  // Writes positions [start, start + n) converted to `as` into `out` (n <= kChunk).
  // The values at [start, start + n) as type T: read in place when the input is a plain buffer
  // of that type, else produced into `scratch`.
  template <class T> const T* values(std::int64_t start, std::int64_t n, T* scratch) const {
    if (source && source->dtype() == dtype_of_v<T>)
      if (const void* direct = source->contiguous(start, n)) return static_cast<const T*>(direct);
    produce(start, n, scratch, dtype_of_v<T>);
    return scratch;
  }
  void produce(std::int64_t start, std::int64_t n, void* out, DType as) const {
    if (source) return source->read(start, n, out, as);
    Registers& r = thread_registers();
    if (as == type) return run_chunk(*program, r, start, n, out);
    run_chunk(*program, r, start, n, nullptr);
    convert_values(r.value(program->code->result), type, out, as, n);
  }
};

constexpr std::size_t kMaxRowLoads = 16;

// For chunks of one whole row each: whether every load that is not a constant reads its rows in
// place, each row a fixed number of bytes (`steps`, per load; 0 for constants) after the previous
// one.
bool row_steps(const Program& p, std::int64_t row, std::int64_t* steps) {
  const Code& code = *p.code;
  if (code.loads.size() > kMaxRowLoads) return false;
  for (std::size_t i = 0; i < code.loads.size(); ++i) {
    const Load& load = code.loads[i];
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
      if (s.direct == Step::Direct::binary_f32)
        loops.binary_f32(s.op, a, static_cast<const float*>(r.value(s.args[1])), target, row);
      else
        loops.unary_f32(s.op, a, target, row);
      r.values[ins.out] = target;
    }
  }
}

// The output buffers of an elementwise kernel: new ones, or the buffers `reuse` offers (one per
// root and stored node, null for none). Loads from an offered buffer are copied per chunk, so
// a chunk's values are all read before any of them is overwritten.
void run_elementwise(const Kernel& k, const Code& code, const GraphStructure& structure,
                     const std::vector<std::shared_ptr<Buffer>>& reuse) {
  Program p(code, structure, k.root->numel());
  Node& root = *k.root;
  auto output = [&](const Node& n, std::size_t i) {
    return reuse[i] ? reuse[i] : std::make_shared<Buffer>(n.dtype, n.numel());
  };
  auto out = output(root, 0);
  std::vector<std::shared_ptr<Buffer>> kept;
  std::vector<Buffer*> stored;
  for (std::size_t i = 0; i < k.stored.size(); ++i) {
    kept.push_back(output(*k.stored[i], i + 1));
    stored.push_back(kept.back().get());
  }
  for (std::size_t i = 0; i < p.sources.size(); ++i) {
    const Buffer* from = p.sources[i].base();
    if (std::any_of(reuse.begin(), reuse.end(),
                    [&](const std::shared_ptr<Buffer>& b) { return b.get() == from; }))
      p.use[i] |= Program::kCopy;
  }
  // Rows of half a chunk or more are chunks of their own: an operand broadcast along the rows
  // (a bias) is then one contiguous run per chunk, read in place instead of copied.
  const std::int64_t row = root.shape.empty() ? 0 : root.shape.back();
  const std::int64_t chunk = row >= kChunk / 2 && row < kChunk ? row : kChunk;
  const std::int64_t positions = root.numel();
  const std::int64_t chunks = (positions + chunk - 1) / chunk;
  const std::int64_t width = static_cast<std::int64_t>(size_of(root.dtype));
  std::byte* const out_bytes = static_cast<std::byte*>(out->data());
  std::int64_t steps[kMaxRowLoads];
  if (chunk == row && row_steps(p, row, steps)) {
    const std::size_t loads = code.loads.size();
    // Prefetching (kPrefetch) is left to run_chunk; row_steps has excluded kCopy already.
    const bool direct_only =
        stored.empty() &&
        std::none_of(p.use.begin(), p.use.end(), [](std::uint8_t u) { return u != 0; }) &&
        std::all_of(code.code.begin(), code.code.end(), [](const Instruction& ins) {
          return ins.load >= 0 || ins.step.direct != Step::Direct::none;
        });
    const std::int64_t longest = chunk_for(p);
    const std::int64_t pieces = (row + longest - 1) / longest;
    const std::int64_t piece = (row + pieces - 1) / pieces;
    parallel_for(chunks, grain_for(chunk), [&](std::int64_t begin, std::int64_t end) {
      Registers& r = thread_registers();
      const void* at[kMaxRowLoads] = {};
      for (std::size_t i = 0; i < loads; ++i)
        if (!code.loads[i].constant) at[i] = p.sources[i].contiguous(begin * row, row);
      if (direct_only) {
        run_direct_rows(p, r, at, steps, end - begin, row, out_bytes + begin * row * width);
        return;
      }
      for (std::int64_t c = begin; c < end; ++c) {
        if (c > begin)
          for (std::size_t i = 0; i < loads; ++i)
            if (steps[i] != 0) at[i] = static_cast<const std::byte*>(at[i]) + steps[i];
        if (pieces == 1) {
          run_chunk(p, r, c * row, row, out_bytes + c * row * width, &stored, at);
          continue;
        }
        // A streaming kernel takes its rows in pieces (see kStreamChunk); every load's row is
        // one contiguous run, so a piece's values are `from` values further on.
        for (std::int64_t from = 0; from < row; from += piece) {
          const void* piece_at[kMaxRowLoads] = {};
          for (std::size_t i = 0; i < loads; ++i)
            if (at[i] != nullptr)
              piece_at[i] = static_cast<const std::byte*>(at[i]) +
                            from * static_cast<std::int64_t>(size_of(code.loads[i].type));
          run_chunk(p, r, c * row + from, std::min(piece, row - from),
                    out_bytes + (c * row + from) * width, &stored, piece_at);
        }
      }
    });
  } else {
    const std::int64_t flat = chunk_for(p);
    parallel_for((positions + flat - 1) / flat, grain_for(flat),
                 [&](std::int64_t begin, std::int64_t end) {
      Registers& r = thread_registers();
      for (std::int64_t c = begin; c < end; ++c) {
        const std::int64_t start = c * flat;
        const std::int64_t n = std::min(flat, positions - start);
        run_chunk(p, r, start, n, out_bytes + start * width, &stored);
      }
    });
  }
  root.result = std::move(out);
  for (std::size_t i = 0; i < k.stored.size(); ++i) k.stored[i]->result = std::move(kept[i]);
}

// Writes the values of `in` (a buffer read through its view, if any) to `out`, converted to
// out's type, chunk by chunk over the threads: the copy behind views that are materialised and
// `contiguous`, through the strided reader.
void copy_values(const KernelInput& in, Buffer& out) {
  const Source src(*in.node->result, in.view);
  const std::size_t width = size_of(out.dtype());
  const std::int64_t numel = out.numel();
  const std::int64_t chunks = (numel + kChunk - 1) / kChunk;
  parallel_for(chunks, grain_for(kChunk), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t c = begin; c < end; ++c) {
      const std::int64_t start = c * kChunk;
      src.read(start, std::min(kChunk, numel - start),
               static_cast<std::byte*>(out.data()) + start * width, out.dtype());
    }
  });
}

void run_materialize(const Kernel& k) {
  Node& root = *k.root;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  copy_values(k.inputs[0], *out);
  root.result = std::move(out);
}

// concat along attrs.axes[0]: each input's rows (its part of one output row, `part` values)
// read through the strided reader straight into place.
void run_concat(const Kernel& k, Buffer& out) {
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= root.shape[d];
  for (std::size_t d = axis + 1; d < root.shape.size(); ++d) inner *= root.shape[d];
  const std::int64_t row = root.shape[axis] * inner;
  const std::int64_t width = static_cast<std::int64_t>(size_of(root.dtype));
  std::byte* const bytes = static_cast<std::byte*>(out.data());
  std::int64_t offset = 0;
  for (const KernelInput& in : k.inputs) {
    const Shape& shape = in.through ? in.through->shape : in.node->shape;
    const std::int64_t length = shape[axis] * inner;
    if (length > 0) {
      const Source src(*in.node->result, in.view);
      parallel_for(outer, grain_for(length), [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t o = begin; o < end; ++o)
          src.read(o * length, length, bytes + (o * row + offset) * width, root.dtype);
      });
    }
    offset += length;
  }
}

// ---- reductions -------------------------------------------------------------------------------

// The reduced axes as one block: the input is [outer, reduced, inner] in row-major order.
bool as_block(const Node& n, const Shape& in, std::int64_t& outer, std::int64_t& reduced,
              std::int64_t& inner) {
  const auto& axes = n.attrs.axes;
  for (std::size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return false;
  outer = reduced = inner = 1;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(in.size()); ++d) {
    if (!axes.empty() && d < axes.front()) outer *= in[d];
    else if (!axes.empty() && d <= axes.back()) reduced *= in[d];
    else inner *= in[d];
  }
  return true;
}

// Accumulates one output element (or a row of them) of any reduction op in its natural type:
// float sums and products in double, integers wrapping in their own type.
template <class T> struct Accumulator {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  Op op;
  Acc acc{};
  T best{};
  std::int64_t index = -1;
  std::int64_t seen = 0;

  void start() {
    acc = op == Op::prod ? Acc{1} : Acc{0};
    index = -1;
    seen = 0;
  }
  void add(const T* v, std::int64_t n, std::int64_t first_index) {
    switch (op) {
      case Op::sum:
      case Op::mean:
        if constexpr (std::is_integral_v<T>) {
          for (std::int64_t i = 0; i < n; ++i) acc = wrap_add<Acc>(acc, v[i]);
        } else if constexpr (std::is_same_v<T, float>) {
          acc += float_loops().row_sum_f32(v, n);
        } else {
          double lanes[8] = {};
          std::int64_t i = 0;
          for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; ++j) lanes[j] += v[i + j];
          for (; i < n; ++i) lanes[0] += v[i];
          for (double l : lanes) acc += l;
        }
        break;
      case Op::prod:
        for (std::int64_t i = 0; i < n; ++i) {
          if constexpr (std::is_integral_v<T>) acc = wrap_mul<Acc>(acc, v[i]);
          else acc *= v[i];
        }
        break;
      case Op::min:
      case Op::max: {
        T b;
        if constexpr (std::is_same_v<T, float>) {
          b = op == Op::max ? float_loops().row_max_f32(v, n) : float_loops().row_min_f32(v, n);
        } else {
          b = v[0];
          for (std::int64_t i = 0; i < n && !is_nan(b); ++i)
            if (is_nan(v[i]) || (op == Op::max ? v[i] > b : v[i] < b)) b = v[i];
        }
        if (seen == 0 || (!is_nan(best) && (is_nan(b) || (op == Op::max ? b > best : b < best))))
          best = b;
        break;
      }
      case Op::argmax:
      case Op::argmin:
        for (std::int64_t i = 0; i < n; ++i) {
          if (index >= 0 && is_nan(best)) break;
          if (index < 0 || is_nan(v[i]) || (op == Op::argmax ? v[i] > best : v[i] < best)) {
            best = v[i];
            index = first_index + i;
          }
        }
        break;
      default: break;
    }
    seen += n;
  }
  // Combines the accumulator of a later part of the same reduction.
  void merge(const Accumulator& later) {
    switch (op) {
      case Op::sum:
      case Op::mean:
        if constexpr (std::is_integral_v<T>) acc = wrap_add<Acc>(acc, later.acc);
        else acc += later.acc;
        break;
      case Op::prod:
        if constexpr (std::is_integral_v<T>) acc = wrap_mul<Acc>(acc, later.acc);
        else acc *= later.acc;
        break;
      case Op::min:
      case Op::max:
        if (later.seen == 0) break;
        if (seen == 0 || (!is_nan(best) && (is_nan(later.best) ||
                                            (op == Op::max ? later.best > best : later.best < best))))
          best = later.best;
        break;
      case Op::argmax:
      case Op::argmin:
        if (later.index < 0) break;
        if (index < 0 || (!is_nan(best) && (is_nan(later.best) ||
                                            (op == Op::argmax ? later.best > best : later.best < best)))) {
          best = later.best;
          index = later.index;
        }
        break;
      default: break;
    }
    seen += later.seen;
  }
  template <class O> O result(std::int64_t count) const {
    switch (op) {
      case Op::sum:
      case Op::prod: return convert_value<O>(static_cast<T>(acc));
      case Op::mean:
        if constexpr (std::is_floating_point_v<Acc>)
          return convert_value<O>(static_cast<T>(acc / static_cast<Acc>(count)));
        return convert_value<O>(acc);
      case Op::min:
      case Op::max: return convert_value<O>(best);
      default: return static_cast<O>(index);
    }
  }
};

void run_reduce(const Kernel& k, KernelPlan& plan, const GraphStructure& structure) {
  Node& root = *k.root;
  const Node& input = *root.inputs[0];
  std::int64_t outer, reduced, inner;
  if (!as_block(root, input.shape, outer, reduced, inner)) {
    // Scattered axes: the scheduler fused nothing into this reduction (see fusion.cpp).
    auto out = std::make_shared<Buffer>(root.dtype, root.numel());
    run_reference_kernel(root, *out);
    root.result = std::move(out);
    return;
  }
  // The value stream: the fused producer tree, or the input read through its view.
  std::optional<Program> program;
  std::optional<Source> source;
  Producer producer;
  if (!k.body.empty()) {
    program.emplace(code_of(plan, k, structure), structure, input.numel());
    producer.program = &*program;
    producer.type = k.body.back()->dtype;
  } else {
    source.emplace(*k.inputs[0].node->result, k.inputs[0].view);
    producer.source = &*source;
    producer.type = k.inputs[0].node->dtype;
  }
  const bool is_arg = root.op == Op::argmax || root.op == Op::argmin;
  const DType value_type = is_arg ? producer.type : root.dtype;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());

  dispatch(value_type, [&]<class T>() {
    dispatch(root.dtype, [&]<class O>() {
      O* o = out->as<O>();
      if (inner == 1) {
        // Each output reduces a contiguous run of `reduced` values; with few outputs the runs
        // themselves are split over the threads.
        const std::int64_t parts = outer >= thread_count() ? 1 : std::max<std::int64_t>(1, std::min<std::int64_t>(thread_count() * 4, reduced / (16 * kChunk)));
        const std::int64_t step = producer.program ? chunk_for(*producer.program) : kChunk;
        // Parts of rows are combined at the end; whole rows write their output directly.
        std::vector<Accumulator<T>> partial(parts > 1 ? static_cast<std::size_t>(outer * parts) : 0,
                                            Accumulator<T>{root.op});
        auto finish = [&](std::int64_t w, const Accumulator<T>& acc) {
          if (parts > 1) partial[w] = acc;
          else o[w] = acc.template result<O>(reduced);
        };
        parallel_for(outer * parts, grain_for(reduced / parts), [&](std::int64_t begin, std::int64_t end) {
          std::vector<T> chunk(kChunk);
          for (std::int64_t w = begin; w < end; ++w) {
            const std::int64_t row = w / parts, part = w % parts;
            const std::int64_t from = reduced * part / parts, to = reduced * (part + 1) / parts;
            // Accumulate locally: neighbouring slots of `partial` share cache lines between
            // threads, and writing them per chunk would make the threads fight over them.
            Accumulator<T> acc{root.op};
            acc.start();
            // A run that lies in memory as it is goes to the row loop in one piece.
            const T* whole = producer.source && producer.source->dtype() == dtype_of_v<T>
                                 ? static_cast<const T*>(
                                       producer.source->contiguous(row * reduced + from, to - from))
                                 : nullptr;
            if (whole != nullptr) {
              acc.add(whole, to - from, from);
              finish(w, acc);
              continue;
            }
            for (std::int64_t s = from; s < to; s += step) {
              const std::int64_t n = std::min(step, to - s);
              acc.add(producer.values<T>(row * reduced + s, n, chunk.data()), n, s);
            }
            finish(w, acc);
          }
        });
        for (std::int64_t row = 0; parts > 1 && row < outer; ++row) {
          Accumulator<T>& acc = partial[row * parts];
          for (std::int64_t part = 1; part < parts; ++part) acc.merge(partial[row * parts + part]);
          o[row] = acc.template result<O>(reduced);
        }
        return;
      }
      // Column reductions: each output of a block of up to kColumns adjacent columns accumulates
      // `reduced` values spaced `inner` apart, read row after row, in memory order. Blocks go to
      // different threads; when there are fewer blocks than threads, the rows of each block are
      // split into parts as well, combined in order at the end.
      constexpr std::int64_t kColumns = 4096;
      const std::int64_t width = std::max<std::int64_t>(1, std::min(inner, kColumns));
      const std::int64_t column_blocks = (inner + width - 1) / width;
      const std::int64_t blocks = outer * column_blocks;
      const std::int64_t parts =
          blocks >= thread_count()
              ? 1
              : std::max<std::int64_t>(1, std::min<std::int64_t>(thread_count() * 2, reduced / 64));
      const bool float_sum =
          std::is_floating_point_v<T> && (root.op == Op::sum || root.op == Op::mean);
      // Per (block, part) accumulators, kept only when parts are combined later.
      std::vector<double> part_sums;
      std::vector<Accumulator<T>> part_accs;
      if (parts > 1) {
        const auto slots = static_cast<std::size_t>(blocks * parts * width);
        if (float_sum) part_sums.resize(slots);
        else part_accs.resize(slots, Accumulator<T>{root.op});
      }
      auto write = [&](std::int64_t block, std::int64_t j, double sum, const Accumulator<T>& acc) {
        const std::int64_t row = block / column_blocks;
        O& dst = o[row * inner + (block % column_blocks) * width + j];
        if (float_sum) {
          const double v = root.op == Op::mean ? sum / static_cast<double>(reduced) : sum;
          dst = convert_value<O>(static_cast<T>(v));
        } else {
          dst = acc.template result<O>(reduced);
        }
      };
      const std::int64_t step = producer.program ? chunk_for(*producer.program) : kChunk;
      parallel_for(blocks * parts, grain_for(reduced / parts * width),
                   [&](std::int64_t begin, std::int64_t end) {
        std::vector<T> chunk(kChunk);
        std::vector<Accumulator<T>> acc(float_sum ? 0 : width, Accumulator<T>{root.op});
        std::vector<double> sums(float_sum ? width : 0);
        for (std::int64_t w = begin; w < end; ++w) {
          const std::int64_t block = w / parts, part = w % parts;
          const std::int64_t row = block / column_blocks;
          const std::int64_t c0 = (block % column_blocks) * width;
          const std::int64_t n = std::min(width, inner - c0);
          if (float_sum) std::fill(sums.begin(), sums.begin() + n, 0.0);
          else for (std::int64_t j = 0; j < n; ++j) acc[j].start();
          const std::int64_t first = reduced * part / parts, last = reduced * (part + 1) / parts;
          std::int64_t r = first;
          if constexpr (std::is_same_v<T, float>) {
            // Rows read in place go eight at a time: one pass over the sums instead of eight.
            if (float_sum && producer.source && producer.source->dtype() == DType::f32) {
              const float* rows[8];
              for (; r + 8 <= last; r += 8) {
                for (std::int64_t c = 0; c < n; c += kChunk) {
                  const std::int64_t m = std::min(kChunk, n - c);
                  bool direct = true;
                  for (int i = 0; i < 8 && direct; ++i) {
                    rows[i] = static_cast<const float*>(producer.source->contiguous(
                        (row * reduced + r + i) * inner + c0 + c, m));
                    direct = rows[i] != nullptr;
                  }
                  if (direct) {
                    float_loops().column_sum8_f32(rows, sums.data() + c, m);
                    continue;
                  }
                  for (int i = 0; i < 8; ++i)
                    float_loops().column_sum_f32(
                        producer.values<float>((row * reduced + r + i) * inner + c0 + c, m,
                                               chunk.data()),
                        sums.data() + c, m);
                }
              }
            }
          }
          for (; r < last; ++r) {
            for (std::int64_t c = 0; c < n; c += step) {
              const std::int64_t m = std::min(step, n - c);
              const T* v =
                  producer.values<T>((row * reduced + r) * inner + c0 + c, m, chunk.data());
              if constexpr (std::is_same_v<T, float>) {
                if (float_sum) {
                  float_loops().column_sum_f32(v, sums.data() + c, m);
                  continue;
                }
              }
              if (float_sum) {
                double* sum = sums.data() + c;
                for (std::int64_t j = 0; j < m; ++j) sum[j] += v[j];
              } else {
                for (std::int64_t j = 0; j < m; ++j) acc[c + j].add(&v[j], 1, r);
              }
            }
          }
          if (parts == 1) {
            for (std::int64_t j = 0; j < n; ++j)
              write(block, j, float_sum ? sums[j] : 0.0, float_sum ? Accumulator<T>{root.op} : acc[j]);
          } else if (float_sum) {
            std::copy(sums.begin(), sums.begin() + n, part_sums.begin() + w * width);
          } else {
            std::copy(acc.begin(), acc.begin() + n, part_accs.begin() + w * width);
          }
        }
      });
      if (parts > 1) {
        for (std::int64_t block = 0; block < blocks; ++block) {
          const std::int64_t n = std::min(width, inner - (block % column_blocks) * width);
          for (std::int64_t j = 0; j < n; ++j) {
            const std::size_t first = static_cast<std::size_t>(block * parts * width + j);
            double sum = 0;
            Accumulator<T> acc{root.op};
            acc.start();
            for (std::int64_t part = 0; part < parts; ++part) {
              const std::size_t at = first + static_cast<std::size_t>(part * width);
              if (float_sum) sum += part_sums[at];
              else acc.merge(part_accs[at]);
            }
            write(block, j, sum, acc);
          }
        }
      }
    });
  });
  root.result = std::move(out);
}

// ---- matmul -----------------------------------------------------------------------------------

// Returns whether it fell back to the reference kernel (integer products).
bool run_matmul(const Kernel& k) {
  Node& root = *k.root;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  const bool fast = matmul_with_library(root, k.inputs[0], k.inputs[1], *out);
  if (!fast) run_reference_kernel(root, *out);
  root.result = std::move(out);
  return !fast;
}

// Runs the ops without a fused kernel: CPU kernels where there are, else the reference kernel,
// which KILN_DEBUG reports and KILN_PROFILE labels. Returns whether it fell back.
bool run_single(const Kernel& k) {
  Node& root = *k.root;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  const OpKind kind = root.info().kind;
  bool fast = (kind == OpKind::window2d && run_window2d(k, *out)) ||
              (kind == OpKind::softmax && run_softmax(k, *out)) ||
              (root.op == Op::gather && run_gather(k, *out)) ||
              (root.op == Op::scatter_add && run_scatter_add(k, *out));
  if (kind == OpKind::copy) {
    copy_values(k.inputs[0], *out);
    fast = true;
  } else if (kind == OpKind::concat) {
    run_concat(k, *out);
    fast = true;
  }
  if (!fast) run_reference_kernel(root, *out);
  root.result = std::move(out);
  return !fast;
}

bool debug_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_DEBUG");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

// For each output of an elementwise kernel (root, then the stored nodes), written into `reuse`:
// the buffer of the node it may overwrite (Node::overwrite), when that is safe now: the buffer is
// that node's alone, has the output's type and size, is not wanted by the caller, no later
// kernel reads it, and this kernel reads it (if at all) in order. `readers` counts the kernels
// yet to read each node.
void reusable(const Kernel& k, const GraphStructure& structure, const SchedulePlan& plan,
              const std::vector<int>& readers, std::vector<std::shared_ptr<Buffer>>& reuse) {
  reuse.assign(k.stored.size() + 1, nullptr);
  auto offer = [&](const Node& out) -> std::shared_ptr<Buffer> {
    Node* old = out.overwrite.get();
    if (old == nullptr || !old->result || old->result.use_count() != 1 ||
        old->result->dtype() != out.dtype || old->result->numel() != out.numel())
      return nullptr;
    const int slot = structure.slot(old);  // -1: not part of this evaluation
    if (slot >= 0 && plan.requested[static_cast<std::size_t>(slot)]) return nullptr;
    bool read_here = false;
    for (const KernelInput& in : k.inputs) {
      if (in.node != old) continue;
      if (in.view && !in.view->is_identity()) return nullptr;
      read_here = true;
    }
    const int remaining = slot < 0 ? 0 : readers[static_cast<std::size_t>(slot)];
    if (remaining != (read_here ? 1 : 0)) return nullptr;
    return old->result;
  };
  reuse[0] = offer(*k.root);
  for (std::size_t i = 0; i < k.stored.size(); ++i) reuse[i + 1] = offer(*k.stored[i]);
  // Two outputs must not be offered one buffer.
  for (std::size_t i = 1; i < reuse.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (reuse[i] && reuse[i] == reuse[j]) reuse[i] = nullptr;
}

class CpuExecutor final : public Executor {
 public:
  std::string_view name() const override { return "cpu"; }

  void execute(std::span<Node* const> targets) override {
    if (std::all_of(targets.begin(), targets.end(), [](Node* t) { return t->result != nullptr; }))
      return;
    use_thread_count();
    const ProfileTimer scheduling;
    structure_.build(targets);
    bool cached = false;
    SchedulePlan& plan = cache_.plan(targets, structure_, cached);
    plan.bind(structure_, kernels_);
    const std::vector<Kernel>& kernels = kernels_;
    if (scheduling.on()) profile_label(cached ? "scheduling (cached)" : "scheduling", scheduling.seconds());
    if (debug_enabled() && !kernels.empty())
      std::cerr << "[kiln] schedule (" << float_loops().isa << ", " << thread_count()
                << " threads" << (cached ? ", cached" : "") << "):\n"
                << describe(kernels);
    // Results of kernels are released after their last reader unless a handle or a target
    // needs them.
    std::vector<int>& readers = readers_;
    readers.assign(plan.readers.begin(), plan.readers.end());
    const std::vector<Node*>& nodes = structure_.nodes();
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& k = kernels[i];
      KernelPlan& p = plan.kernels[i];
      const ProfileTimer timer;
      bool fell_back = false;
      // A result with no elements needs no kernel, however large the other sizes of its shape:
      // kernels that loop over those (concat's outer rows, a copy through a permutation) would
      // spend time and memory on them for nothing.
      if (k.root->numel() == 0) {
        k.root->result = std::make_shared<Buffer>(k.root->dtype, 0);
        for (Node* s : k.stored) s->result = std::make_shared<Buffer>(s->dtype, 0);
      } else switch (k.kind) {
        case Kernel::Kind::elementwise:
          reusable(k, structure_, plan, readers, reuse_);
          run_elementwise(k, code_of(p, k, structure_), structure_, reuse_);
          reuse_.clear();
          break;
        case Kernel::Kind::reduce: run_reduce(k, p, structure_); break;
        case Kernel::Kind::matmul: fell_back = run_matmul(k); break;
        case Kernel::Kind::materialize: run_materialize(k); break;
        case Kernel::Kind::single: fell_back = run_single(k); break;
      }
      if (fell_back && debug_enabled())
        std::cerr << "[kiln] reference kernel: " << k.root->info().name << " "
                  << dtype_name(k.root->dtype) << shape_to_string(k.root->shape)
                  << " (the cpu executor has no kernel of its own for it)\n";
      if (timer.on()) profile_kernel(k, timer.seconds(), fell_back);
      for (int slot : p.reads) {
        const auto s = static_cast<std::size_t>(slot);
        Node* n = nodes[s];
        if (--readers[s] == 0 && plan.computed[s] && !plan.requested[s] && n->handles.load() == 0)
          n->result.reset();
      }
    }
  }

 private:
  GraphStructure structure_;
  ScheduleCache cache_;
  // Per-evaluation scratch kept between evaluations (they are serialised), so that a repeated
  // small graph allocates nothing here.
  std::vector<Kernel> kernels_;
  std::vector<int> readers_;
  std::vector<std::shared_ptr<Buffer>> reuse_;
};

}  // namespace

}  // namespace detail::cpu

std::shared_ptr<Executor> cpu_executor() {
  static const auto instance = std::make_shared<detail::cpu::CpuExecutor>();
  return instance;
}

}  // namespace kiln
