// The fast CPU executor: runs the schedule's kernels. Fused elementwise kernels are interpreted
// without a compile step, chunk by chunk (each chunk small enough to stay in L1), with
// vectorised loops; reductions consume their fused producers the same way; matmul calls oneDNN
// (f32) or OpenBLAS (f64); convolution, pooling, softmax and gather have kernels of their own;
// every other op runs its reference kernel. Work is split over the
// thread pool.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
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
#include "exec/kernel_profile.hpp"
#include "exec/operand.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/scalar_ops.hpp"
#include "graph/custom_kernel.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail::cpu {

namespace {

constexpr std::int64_t kChunk = 1024;  // values per register: 8 KiB at most, so chunks stay in L1

// ---- fused elementwise programs --------------------------------------------------------------

struct Step {
  const Node* node;
  DType compute;                 // the type the op computes in
  std::vector<int> args;         // registers
  std::vector<DType> arg_types;  // the types of the values in them
};

// A fused kernel as a register machine: a list of loads (a source into a register) and steps
// (an op from registers into a register). Registers are reused once their value is dead, so a
// fused chain of any length needs only a few.
struct Instruction {
  int load = -1;  // a source index, or -1 for a step
  Step step;
  int out = 0;    // register
  int store = -1;  // for a step whose node the kernel also stores: its index in Kernel::stored
  bool constant = false;  // a load of one value broadcast everywhere: filled once per thread
  bool copy = false;  // a load from a buffer the kernel also writes: copied, never read in place
};

struct Program {
  std::vector<Source> sources;
  std::vector<DType> source_types;
  std::vector<Instruction> code;
  int registers = 0;
  int result = -1;  // register
  std::uint64_t tag = 0;  // unique per compiled program: which registers hold its constants
};

std::uint64_t next_program_tag() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

DType compute_type(const Node& n, const std::vector<DType>& arg_types) {
  switch (n.info().kind) {
    case OpKind::binary: return promote(arg_types[0], arg_types[1]);
    case OpKind::unary: return (n.op == Op::sign || n.op == Op::even) ? arg_types[0] : n.dtype;
    case OpKind::custom: return DType::f64;
    default: return n.dtype;
  }
}

Program compile(const std::vector<Node*>& body, const std::vector<Node*>& stored = {}) {
  Program p;
  const std::unordered_set<const Node*> in_body(body.begin(), body.end());
  // A value is a fused node or a (node, view) pair read from memory.
  using Value = std::pair<const Node*, const ViewMap*>;
  auto value_of = [&](const NodePtr& input) -> Value {
    const Node* d = input.get();
    const ViewMap* view = nullptr;
    if (!d->result && d->is_view()) {
      view = &d->view;
      d = d->view_base.get();
    }
    if (in_body.count(d)) view = nullptr;  // fused values are read as computed
    return {d, view};
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
    return p.registers++;
  };
  std::unordered_map<Value, std::pair<int, DType>, ValueHash> live;  // value -> (register, type)
  std::unordered_set<int> constant_registers;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const Node* n = body[i];
    Step s{n, n->dtype, {}, {}};
    for (const auto& in : n->inputs) {
      const Value v = value_of(in);
      auto it = live.find(v);
      if (it == live.end()) {  // a value from memory: load it just before its first use
        Instruction load;
        load.load = static_cast<int>(p.sources.size());
        p.sources.emplace_back(*v.first->result, v.second);
        // A broadcast scalar gets a register of its own that no other value reuses, so it is
        // filled once per thread instead of once per chunk; a few of them, so that a long chain
        // of ops with constants still needs only a few registers.
        load.constant = p.sources.back().constant() && constant_registers.size() < 16;
        load.out = load.constant ? p.registers++ : allocate();
        if (load.constant) constant_registers.insert(load.out);
        p.source_types.push_back(v.first->dtype);
        p.code.push_back(std::move(load));
        it = live.emplace(v, std::pair{p.code.back().out, v.first->dtype}).first;
      }
      s.args.push_back(it->second.first);
      s.arg_types.push_back(it->second.second);
    }
    s.compute = compute_type(*n, s.arg_types);
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
    p.code.push_back(std::move(step));
  }
  p.result = p.code.back().out;
  p.tag = next_program_tag();
  return p;
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
  void prepare(std::size_t count) {
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

#define KILN_UNARY_CASE(name) \
  case Op::name: return loop1(a, o, n, [](T x) { return unary_value<T>(Op::name, x); });
#define KILN_BINARY_CASE(name) \
  case Op::name: return loop2(a, b, o, n, [](T x, T y) { return binary_value<T>(Op::name, x, y); });

template <class T, class O> void generic_unary(Op op, const T* a, O* o, std::int64_t n) {
  switch (op) {
    KILN_UNARY_CASE(neg)
    KILN_UNARY_CASE(abs)
    KILN_UNARY_CASE(square)
    KILN_UNARY_CASE(relu)
    KILN_UNARY_CASE(sign)
    KILN_UNARY_CASE(convert)
    default: return loop1(a, o, n, [op](T x) { return unary_value<T>(op, x); });
  }
}
template <class T, class O>
void generic_binary(Op op, const T* a, const T* b, O* o, std::int64_t n) {
  switch (op) {
    KILN_BINARY_CASE(add)
    KILN_BINARY_CASE(sub)
    KILN_BINARY_CASE(mul)
    KILN_BINARY_CASE(minimum)
    KILN_BINARY_CASE(maximum)
    KILN_BINARY_CASE(less)
    KILN_BINARY_CASE(greater)
    KILN_BINARY_CASE(equal)
    KILN_BINARY_CASE(less_equal)
    KILN_BINARY_CASE(greater_equal)
    KILN_BINARY_CASE(not_equal)
    default: return loop2(a, b, o, n, [op](T x, T y) { return binary_value<T>(op, x, y); });
  }
}
#undef KILN_UNARY_CASE
#undef KILN_BINARY_CASE

void run_step(const Step& s, Registers& r, void* out, std::int64_t n) {
  const Node& node = *s.node;
  const void* args[3] = {};
  for (std::size_t i = 0; i < s.args.size(); ++i) {
    const int a = s.args[i];
    const DType want = node.info().kind == OpKind::ternary && i == 0 ? s.arg_types[i] : s.compute;
    if (s.arg_types[i] == want) {
      args[i] = r.value(a);
    } else {
      convert_values(r.value(a), s.arg_types[i], r.scratch[i].data(), want, n);
      args[i] = r.scratch[i].data();
    }
  }
  const FloatLoops& loops = float_loops();
  switch (node.info().kind) {
    case OpKind::unary:
      if (s.compute == node.dtype && has_float_loop(node.op)) {
        if (s.compute == DType::f32)
          return loops.unary_f32(node.op, static_cast<const float*>(args[0]),
                                 static_cast<float*>(out), n);
        if (s.compute == DType::f64)
          return loops.unary_f64(node.op, static_cast<const double*>(args[0]),
                                 static_cast<double*>(out), n);
      }
      return dispatch(s.compute, [&]<class T>() {
        dispatch(node.dtype, [&]<class O>() {
          generic_unary<T, O>(node.op, static_cast<const T*>(args[0]), static_cast<O*>(out), n);
        });
      });
    case OpKind::binary:
      if (s.compute == node.dtype && has_float_loop(node.op)) {
        if (s.compute == DType::f32)
          return loops.binary_f32(node.op, static_cast<const float*>(args[0]),
                                  static_cast<const float*>(args[1]), static_cast<float*>(out),
                                  n);
        if (s.compute == DType::f64)
          return loops.binary_f64(node.op, static_cast<const double*>(args[0]),
                                  static_cast<const double*>(args[1]), static_cast<double*>(out),
                                  n);
      }
      return dispatch(s.compute, [&]<class T>() {
        dispatch(node.dtype, [&]<class O>() {
          generic_binary<T, O>(node.op, static_cast<const T*>(args[0]),
                               static_cast<const T*>(args[1]), static_cast<O*>(out), n);
        });
      });
    case OpKind::ternary:
      return dispatch(s.arg_types[0], [&]<class C>() {
        dispatch(node.dtype, [&]<class O>() {
          const C* c = static_cast<const C*>(args[0]);
          const O* a = static_cast<const O*>(args[1]);
          const O* b = static_cast<const O*>(args[2]);
          O* o = static_cast<O*>(out);
          for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] != C{0} ? a[i] : b[i];
        });
      });
    case OpKind::custom: {
      const auto& f = node.attrs.custom->element;
      const double* a = static_cast<const double*>(args[0]);
      return dispatch(node.dtype, [&]<class O>() {
        O* o = static_cast<O*>(out);
        for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f(a[i]));
      });
    }
    default: break;
  }
  throw Error(ErrorCode::internal_error,
              std::string(node.info().name) + ": not an elementwise op");
}

// Evaluates positions [start, start + n) (n <= kChunk) of the program's result into its result
// register, or into `out` directly when it is given. Steps of stored nodes write straight into
// their buffers (`stored`, one per Kernel::stored entry).
void run_chunk(const Program& p, Registers& r, std::int64_t start, std::int64_t n, void* out,
               const std::vector<Buffer*>* stored = nullptr) {
  r.prepare(static_cast<std::size_t>(p.registers));
  for (std::size_t i = 0; i < p.code.size(); ++i) {
    const Instruction& ins = p.code[i];
    if (ins.load >= 0) {
      // A plain load needs no copy: the steps read the source buffer itself.
      const Source& src = p.sources[ins.load];
      if (ins.constant) {
        if (r.filled_by[ins.out] != p.tag) {
          src.fill(kChunk, r.reg(ins.out), p.source_types[ins.load]);
          r.filled_by[ins.out] = p.tag;
        }
        r.values[ins.out] = r.reg(ins.out);
        continue;
      }
      const void* direct = src.dtype() == p.source_types[ins.load] && !ins.copy
                               ? src.contiguous(start, n)
                               : nullptr;
      if (direct != nullptr) {
        r.values[ins.out] = direct;
      } else {
        src.read(start, n, r.reg(ins.out), p.source_types[ins.load]);
        r.values[ins.out] = r.reg(ins.out);
      }
    } else {
      const bool last = i + 1 == p.code.size();
      void* target = last && out ? out : r.reg(ins.out);
      if (ins.store >= 0 && stored) {
        Buffer& b = *(*stored)[static_cast<std::size_t>(ins.store)];
        target = static_cast<std::byte*>(b.data()) +
                 start * static_cast<std::int64_t>(size_of(b.dtype()));
      }
      run_step(ins.step, r, target, n);
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
    convert_values(r.value(program->result), type, out, as, n);
  }
};

// The output buffers of an elementwise kernel: new ones, or the buffers `reuse` offers (one per
// root and stored node, null for none). Loads from an offered buffer are copied per chunk, so
// a chunk's values are all read before any of them is overwritten.
void run_elementwise(const Kernel& k, const std::vector<std::shared_ptr<Buffer>>& reuse) {
  Program p = compile(k.body, k.stored);
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
  for (Instruction& ins : p.code) {
    if (ins.load < 0) continue;
    const Buffer* from = p.sources[static_cast<std::size_t>(ins.load)].base();
    ins.copy = std::any_of(reuse.begin(), reuse.end(),
                           [&](const std::shared_ptr<Buffer>& b) { return b.get() == from; });
  }
  // Rows of half a chunk or more are chunks of their own: an operand broadcast along the rows
  // (a bias) is then one contiguous run per chunk, read in place instead of copied.
  const std::int64_t row = root.shape.empty() ? 0 : root.shape.back();
  const std::int64_t chunk = row >= kChunk / 2 && row < kChunk ? row : kChunk;
  const std::int64_t chunks = (root.numel() + chunk - 1) / chunk;
  const std::size_t width = size_of(root.dtype);
  parallel_for(chunks, 16, [&](std::int64_t begin, std::int64_t end) {
    Registers& r = thread_registers();
    for (std::int64_t c = begin; c < end; ++c) {
      const std::int64_t start = c * chunk;
      const std::int64_t n = std::min(chunk, root.numel() - start);
      run_chunk(p, r, start, n, static_cast<std::byte*>(out->data()) + start * width, &stored);
    }
  });
  root.result = std::move(out);
  for (std::size_t i = 0; i < k.stored.size(); ++i) k.stored[i]->result = std::move(kept[i]);
}

void run_materialize(const Kernel& k) {
  Node& root = *k.root;
  const Source src(*k.inputs[0].node->result, k.inputs[0].view);
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  const std::size_t width = size_of(root.dtype);
  const std::int64_t chunks = (root.numel() + kChunk - 1) / kChunk;
  parallel_for(chunks, 16, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t c = begin; c < end; ++c) {
      const std::int64_t start = c * kChunk;
      src.read(start, std::min(kChunk, root.numel() - start),
               static_cast<std::byte*>(out->data()) + start * width, root.dtype);
    }
  });
  root.result = std::move(out);
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

void run_reduce(const Kernel& k) {
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
    program.emplace(compile(k.body));
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
        std::vector<Accumulator<T>> partial(static_cast<std::size_t>(outer * parts), Accumulator<T>{root.op});
        parallel_for(outer * parts, 1, [&](std::int64_t begin, std::int64_t end) {
          std::vector<T> chunk(kChunk);
          for (std::int64_t w = begin; w < end; ++w) {
            const std::int64_t row = w / parts, part = w % parts;
            const std::int64_t from = reduced * part / parts, to = reduced * (part + 1) / parts;
            // Accumulate locally: neighbouring slots of `partial` share cache lines between
            // threads, and writing them per chunk would make the threads fight over them.
            Accumulator<T> acc{root.op};
            acc.start();
            for (std::int64_t s = from; s < to; s += kChunk) {
              const std::int64_t n = std::min(kChunk, to - s);
              acc.add(producer.values<T>(row * reduced + s, n, chunk.data()), n, s);
            }
            partial[w] = acc;
          }
        });
        for (std::int64_t row = 0; row < outer; ++row) {
          Accumulator<T>& acc = partial[row * parts];
          for (std::int64_t part = 1; part < parts; ++part) acc.merge(partial[row * parts + part]);
          o[row] = acc.template result<O>(reduced);
        }
        return;
      }
      // Column reductions: each output position of a block of `inner` accumulates `reduced`
      // values spaced `inner` apart; blocks of columns go to different threads.
      const std::int64_t column_blocks = (inner + kChunk - 1) / kChunk;
      parallel_for(outer * column_blocks, 1, [&](std::int64_t begin, std::int64_t end) {
        std::vector<T> chunk(kChunk);
        std::vector<Accumulator<T>> acc(kChunk, Accumulator<T>{root.op});
        std::vector<double> sums(kChunk);
        for (std::int64_t w = begin; w < end; ++w) {
          const std::int64_t row = w / column_blocks;
          const std::int64_t c0 = (w % column_blocks) * kChunk;
          const std::int64_t n = std::min(kChunk, inner - c0);
          const bool float_sum = std::is_floating_point_v<T> &&
                                 (root.op == Op::sum || root.op == Op::mean);
          if (float_sum) {
            std::fill(sums.begin(), sums.begin() + n, 0.0);
          } else {
            for (std::int64_t j = 0; j < n; ++j) acc[j].start();
          }
          for (std::int64_t r = 0; r < reduced; ++r) {
            const T* v = producer.values<T>((row * reduced + r) * inner + c0, n, chunk.data());
            if (float_sum) {
              for (std::int64_t j = 0; j < n; ++j) sums[j] += v[j];
            } else {
              for (std::int64_t j = 0; j < n; ++j) acc[j].add(&v[j], 1, r);
            }
          }
          for (std::int64_t j = 0; j < n; ++j) {
            O& dst = o[row * inner + c0 + j];
            if (float_sum) {
              const double v = root.op == Op::mean ? sums[j] / static_cast<double>(reduced) : sums[j];
              dst = convert_value<O>(static_cast<T>(v));
            } else {
              dst = acc[j].template result<O>(reduced);
            }
          }
        }
      });
    });
  });
  root.result = std::move(out);
}

// ---- matmul -----------------------------------------------------------------------------------

void run_matmul(const Kernel& k) {
  Node& root = *k.root;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  if (!matmul_with_library(root, k.inputs[0], k.inputs[1], *out)) run_reference_kernel(root, *out);
  root.result = std::move(out);
}

void run_single(const Kernel& k) {
  Node& root = *k.root;
  auto out = std::make_shared<Buffer>(root.dtype, root.numel());
  const OpKind kind = root.info().kind;
  const bool fast = (kind == OpKind::window2d && run_window2d(k, *out)) ||
                    (kind == OpKind::softmax && run_softmax(k, *out)) ||
                    (root.op == Op::gather && run_gather(k, *out));
  if (!fast) run_reference_kernel(root, *out);
  root.result = std::move(out);
}

bool debug_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_DEBUG");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

// For each output of an elementwise kernel (root, then the stored nodes), the buffer of the node
// it may overwrite (Node::overwrite), when that is safe now: the buffer is that node's alone,
// has the output's type and size, is not wanted by the caller, no later kernel reads it, and
// this kernel reads it (if at all) in order.
std::vector<std::shared_ptr<Buffer>> reusable(const Kernel& k,
                                              const std::unordered_map<Node*, int>& readers,
                                              const std::unordered_set<Node*>& wanted) {
  std::vector<std::shared_ptr<Buffer>> reuse(k.stored.size() + 1);
  auto offer = [&](const Node& out) -> std::shared_ptr<Buffer> {
    Node* old = out.overwrite.get();
    if (old == nullptr || !old->result || old->result.use_count() != 1 || wanted.count(old) ||
        old->result->dtype() != out.dtype || old->result->numel() != out.numel())
      return nullptr;
    bool read_here = false;
    for (const KernelInput& in : k.inputs) {
      if (in.node != old) continue;
      if (in.view && !in.view->is_identity()) return nullptr;
      read_here = true;
    }
    const auto it = readers.find(old);
    const int remaining = it == readers.end() ? 0 : it->second;
    if (remaining != (read_here ? 1 : 0)) return nullptr;
    return old->result;
  };
  reuse[0] = offer(*k.root);
  for (std::size_t i = 0; i < k.stored.size(); ++i) reuse[i + 1] = offer(*k.stored[i]);
  // Two outputs must not be offered one buffer.
  for (std::size_t i = 1; i < reuse.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (reuse[i] && reuse[i] == reuse[j]) reuse[i] = nullptr;
  return reuse;
}

class CpuExecutor final : public Executor {
 public:
  std::string_view name() const override { return "cpu"; }

  void execute(std::span<Node* const> targets) override {
    use_thread_count();
    const ProfileTimer scheduling;
    const std::vector<Kernel> kernels = schedule(targets);
    if (scheduling.on()) profile_label("scheduling", scheduling.seconds());
    if (debug_enabled() && !kernels.empty())
      std::cerr << "[kiln] schedule (" << float_loops().isa << ", " << thread_count()
                << " threads):\n"
                << describe(kernels);
    // Results of kernels are released after their last reader unless a handle or a target
    // needs them.
    std::unordered_map<Node*, int> readers;
    std::unordered_set<Node*> computed;
    for (const Kernel& k : kernels) {
      computed.insert(k.root);
      computed.insert(k.stored.begin(), k.stored.end());
      std::unordered_set<Node*> seen;
      for (const KernelInput& in : k.inputs)
        if (seen.insert(in.node).second) ++readers[in.node];
    }
    const std::unordered_set<Node*> wanted(targets.begin(), targets.end());
    for (const Kernel& k : kernels) {
      const ProfileTimer timer;
      switch (k.kind) {
        case Kernel::Kind::elementwise: run_elementwise(k, reusable(k, readers, wanted)); break;
        case Kernel::Kind::reduce: run_reduce(k); break;
        case Kernel::Kind::matmul: run_matmul(k); break;
        case Kernel::Kind::materialize: run_materialize(k); break;
        case Kernel::Kind::single: run_single(k); break;
      }
      if (timer.on()) profile_kernel(k, timer.seconds());
      std::unordered_set<Node*> seen;
      for (const KernelInput& in : k.inputs) {
        Node* n = in.node;
        if (!seen.insert(n).second) continue;
        if (--readers[n] == 0 && computed.count(n) && !wanted.count(n) && n->handles.load() == 0)
          n->result.reset();
      }
    }
  }
};

}  // namespace

}  // namespace detail::cpu

std::shared_ptr<Executor> cpu_executor() {
  static const auto instance = std::make_shared<detail::cpu::CpuExecutor>();
  return instance;
}

}  // namespace kiln
