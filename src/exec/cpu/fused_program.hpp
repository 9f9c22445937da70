// The CPU executor's fused elementwise kernels: the kernel IR (exec/kernel_ir.hpp) compiled for
// the CPU (each step's loop chosen), bound to one evaluation's buffers (Program) and interpreted
// chunk by chunk, each chunk small enough to stay in L1, with the float loops of
// float_loops.hpp. Reductions read their fused producers through the same interpreter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <vector>

#include "exec/cpu/source.hpp"
#include "exec/fusion.hpp"
#include "exec/kernel_ir.hpp"
#include "exec/schedule_cache.hpp"
#include "graph/buffer.hpp"

namespace kiln::detail::cpu {

inline constexpr std::int64_t kChunk = 1024;  // values per register: 8 KiB at most, so chunks stay in L1
// Sources at least this large are prefetched ahead (prefetch_next); smaller ones are mostly in
// cache, where the prefetches cost more than they save (25% on a [1000,1000] + [1000] add).
inline constexpr std::size_t kPrefetchFrom = std::size_t{8} << 20;
// Kernels that stream such sources run in shorter chunks, prefetched this many chunks ahead.
// Each step of a chunk is a pass over it, and only the passes that load a source ask memory for
// anything: the shorter the chunk, the sooner the next loads come and the better the hardware
// prefetchers keep up. exp(sin(a)*b+c)/2 over 10M values, 1 thread, on a Xeon with AVX-512:
// 17.4 ms in chunks of 1024 prefetched one ahead, 14.4 ms in chunks of 256, 13.1 ms with 256
// prefetched two ahead; its sum over all values (the producer fused into the reduction) 16.1 ->
// 10.7 ms. Cached kernels keep kChunk, where the per-chunk cost counts.
inline constexpr std::int64_t kStreamChunk = 256;
inline constexpr std::uintptr_t kPrefetchAhead = 2;

// The loops a step can run with (IrStep::loop): an f32 op with a vectorised loop whose
// operands are f32 already is run by calling the loop directly, without run_step's conversions
// and dispatch (which cost as much as the loop on short rows).
enum StepLoop : std::uint8_t { kGeneralLoop = 0, kUnaryF32Loop = 1, kBinaryF32Loop = 2 };

using Step = IrStep;
using Instruction = IrInstruction;

// A compiled fused kernel, kept with its plan by the schedule cache.
struct Code final : PreparedKernel, KernelIr {};

// A tag that no binding on any thread has had before (see fused_program.cpp).
std::uint64_t new_binding_tag();

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
      const IrLoad& l = c.loads[i];
      const Buffer& buffer = *nodes[l.node]->result;
      if (buffer.bytes() >= kPrefetchFrom) use[i] = kPrefetch;
      if (l.through < 0 || l.layer) sources.emplace_back(buffer, l.layer.get());
      else sources.emplace_back(buffer, &nodes[l.through]->view);
    }
  }
};

// The chunk length for evaluating a program: kStreamChunk when it streams a source too large for
// the caches (see kStreamChunk), else kChunk.
inline std::int64_t chunk_for(const Program& p) {
  const bool streams = std::any_of(p.use.begin(), p.use.end(),
                                   [](std::uint8_t u) { return (u & Program::kPrefetch) != 0; });
  return streams ? kStreamChunk : kChunk;
}

// The compiled code of a kernel plan: compiled when the plan first runs, then kept with it.
const Code& code_of(KernelPlan& plan, const Kernel& k, const GraphStructure& structure);

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

Registers& thread_registers();

void run_chunk(const Program& p, Registers& r, std::int64_t start, std::int64_t n, void* out,
               const std::vector<Buffer*>* stored = nullptr, const void* const* at = nullptr);

// Produces the values of a kernel's input stream: a fused program, or a plain source.
struct Producer {
  const Program* program = nullptr;
  const Source* source = nullptr;
  DType type;  // the type of the values: the input's, or the last fused node's
  // Writes positions [start, start + n) converted to `as` into `out` (n <= kChunk).
  // The values at [start, start + n) as type T: read in place when the input is a plain buffer
  // of that type, else produced into `scratch`.
  template <class T> const T* values(std::int64_t start, std::int64_t n, T* scratch) const {
    if (source && source->dtype() == dtype_of_v<T>)
      if (const void* direct = source->contiguous(start, n)) return static_cast<const T*>(direct);
    produce(start, n, scratch, dtype_of_v<T>);
    return scratch;
  }
  inline void produce(std::int64_t start, std::int64_t n, void* out, DType as) const {
    if (source) return source->read(start, n, out, as);
    Registers& r = thread_registers();
    if (as == type) return run_chunk(*program, r, start, n, out);
    run_chunk(*program, r, start, n, nullptr);
    // The result register holds a 16-bit float node's values as f32 (rounded).
    convert_values(r.value(program->code->result), arithmetic_type(type), out, as, n);
  }
};

inline constexpr std::size_t kMaxRowLoads = 16;

// For chunks of one whole row each: whether every load that is not a constant reads its rows in
// place, each row a fixed number of bytes (`steps`, per load; 0 for constants) after the previous
// one.
bool row_steps(const Program& p, std::int64_t row, std::int64_t* steps);

// `rows` whole rows of `row` values of a program whose steps all call float loops directly
// (fused_program.cpp).
void run_direct_rows(const Program& p, Registers& r, const void** at, const std::int64_t* steps,
                     std::int64_t rows, std::int64_t row, std::byte* out);

}  // namespace kiln::detail::cpu
