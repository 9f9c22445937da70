// The CPU executor's kernels that write values position by position: fused elementwise kernels
// (over whole rows read in place where it can, else chunk by chunk), and copies of viewed values
// and concatenations through the strided reader.
#include <algorithm>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cpu/fused_program.hpp"
#include "exec/cpu/parallel.hpp"

namespace kiln::detail::cpu {

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
          return ins.load >= 0 || (ins.step.loop != kGeneralLoop && ins.step.rounds_to == ins.step.dtype);
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

}  // namespace kiln::detail::cpu
