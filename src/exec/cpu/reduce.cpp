// The CPU executor's reductions over any adjacent block of axes, seen as [outer, reduced, inner]:
// rows (inner == 1) reduced with vectorised row loops, columns accumulated row after row in memory
// order; fused producers run chunk by chunk through the interpreter; long runs are split over the
// threads and merged in order. What is accumulated, and how, is semantics/reduction.hpp's.
#include <algorithm>
#include <vector>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cpu/float_loops.hpp"
#include "exec/operand.hpp"
#include "exec/cpu/fused_program.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/reduction_geometry.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/semantics/reduction.hpp"

namespace kiln::detail::cpu {

namespace {

// A Reduction (semantics/reduction.hpp) fed whole runs of values: sums and extremes of f32 runs
// with the vectorised row loops, other runs with plain loops in the order the rules give (f64
// sums in eight lanes, products value by value), arg-extremes one value at a time.
template <class T> struct Accumulator : Reduction<T> {
  using Acc = typename Reduction<T>::Acc;
  explicit Accumulator(Op op) : Reduction<T>{op} {}

  void add(const T* v, std::int64_t n, std::int64_t first_index) {
    Reduction<T>& r = *this;
    switch (r.op) {
      case Op::sum:
      case Op::mean:
        if constexpr (std::is_integral_v<T>) {
          Acc partial = 0;  // wrapping addition is associative
          for (std::int64_t i = 0; i < n; ++i) partial = wrap_add<Acc>(partial, v[i]);
          r.add_partial(partial, n);
        } else if constexpr (std::is_same_v<T, float>) {
          r.add_partial(float_loops().row_sum_f32(v, n), n);
        } else {
          double lanes[8] = {};
          std::int64_t i = 0;
          for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; ++j) lanes[j] += v[i + j];
          for (; i < n; ++i) lanes[0] += v[i];
          for (int j = 0; j < 8; ++j) r.add_partial(lanes[j], j == 0 ? n : 0);
        }
        break;
      case Op::prod:
        if constexpr (std::is_integral_v<T>) {
          Acc partial = 1;  // wrapping multiplication is associative
          for (std::int64_t i = 0; i < n; ++i) partial = wrap_mul<Acc>(partial, v[i]);
          r.add_partial(partial, n);
        } else {
          for (std::int64_t i = 0; i < n; ++i) r.add_partial(static_cast<Acc>(v[i]), 1);
        }
        break;
      case Op::min:
      case Op::max: {
        if (n == 0) break;
        T extreme = v[0];
        if constexpr (std::is_same_v<T, float>) {
          extreme = r.op == Op::max ? float_loops().row_max_f32(v, n)
                                    : float_loops().row_min_f32(v, n);
        } else {
          for (std::int64_t i = 1; i < n; ++i)
            if (replaces(v[i], extreme, r.op == Op::max)) extreme = v[i];
        }
        r.add_extreme(extreme, n);
        break;
      }
      default:  // argmax, argmin
        for (std::int64_t i = 0; i < n; ++i) r.add(v[i], first_index + i);
        break;
    }
  }

  template <class O> O result(std::int64_t count) const {
    return this->template finish<O>(count);
  }
};

}  // namespace

// Returns whether it fell back to the reference kernel (axes that are not adjacent).
bool run_reduce(const Kernel& k, KernelPlan& plan, const GraphStructure& structure) {
  Node& root = *k.root;
  const Node& input = *root.inputs[0];
  std::int64_t outer, reduced, inner;
  if (!as_block(root, input.shape, outer, reduced, inner)) {
    // Scattered axes: the scheduler fused nothing into this reduction (see fusion.cpp).
    auto out = std::make_shared<Buffer>(root.dtype, root.numel());
    run_reference_kernel(root, *out);
    root.result = std::move(out);
    return true;
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
  // Narrow types are reduced in their arithmetic type (f32, i32 for bool), and a narrow result
  // rounded at the end.
  const DType value_type = arithmetic_type(is_arg ? producer.type : root.dtype);
  const bool narrow_result = is_narrow(root.dtype);
  auto out = std::make_shared<Buffer>(arithmetic_type(root.dtype), root.numel());

  dispatch(value_type, [&]<class T>() {
    dispatch(arithmetic_type(root.dtype), [&]<class O>() {
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
  if (narrow_result) {
    auto rounded = std::make_shared<Buffer>(root.dtype, root.numel());
    convert_values(out->data(), arithmetic_type(root.dtype), rounded->data(), root.dtype,
                   root.numel());
    out = std::move(rounded);
  }
  root.result = std::move(out);
  return false;
}

}  // namespace kiln::detail::cpu
