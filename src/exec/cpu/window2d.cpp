#include "exec/cpu/window2d.hpp"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "exec/cpu/onednn_engine.hpp"
#include "exec/cpu/source.hpp"
#include "exec/cpu/float_loops.hpp"
#include "exec/cpu/parallel.hpp"
#include "exec/operand.hpp"
#include "exec/semantics/elementwise.hpp"
#include "exec/semantics/window_max.hpp"
#include "exec/window2d.hpp"

namespace kiln::detail::cpu {

namespace {

// ---- convolution through oneDNN ---------------------------------------------------------------

using dnnl::memory;

memory::desc plain(const Shape& s, memory::format_tag tag, memory::data_type type) {
  return memory::desc(memory::dims(s.begin(), s.end()), type, tag);
}

// Primitives are created once per geometry and reused: a training loop repeats the same shapes.
// Their tensors use the layouts oneDNN prefers (blocked, for its direct kernels); kiln's plain
// NCHW/OIHW data is reordered into and out of them.
struct ConvPrimitives {
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_backward_data::primitive_desc backward_data_pd;
  dnnl::convolution_backward_weights::primitive_desc backward_weights_pd;
  dnnl::primitive forward, backward_data, backward_weights;
};

// Of f32 or bf16 tensors (`type`); for bf16, oneDNN accumulates in f32 and rounds each result to
// nearest even, with AVX-512 BF16's dot products where the CPU has them.
const ConvPrimitives& conv_primitives(const Window2d& g, memory::data_type type) {
  static std::mutex mutex;
  static std::map<std::vector<std::int64_t>, ConvPrimitives> cache;
  // oneDNN splits the work among the threads it has when a primitive is created, so the thread
  // count is part of the key: a primitive made for 1 thread would keep using 1.
  const std::vector<std::int64_t> key{g.n,  g.c,  g.h,  g.w,  g.o,  g.oh,
                                      g.ow, g.kh, g.kw, g.sh, g.sw, g.ph,
                                      g.pw, g.dh, g.dw, omp_get_max_threads(),
                                      static_cast<std::int64_t>(type)};
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto any = [type](const Shape& s) {
    return memory::desc(memory::dims(s.begin(), s.end()), type, memory::format_tag::any);
  };
  const auto src = any({g.n, g.c, g.h, g.w});
  const auto wei = any({g.o, g.c, g.kh, g.kw});
  const auto dst = any({g.n, g.o, g.oh, g.ow});
  const memory::dims strides{g.sh, g.sw}, dilates{g.dh - 1, g.dw - 1}, pad{g.ph, g.pw};
  // oneDNN wants the right padding that makes the output size exact.
  const memory::dims pad_r{(g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1 - g.h - g.ph,
                           (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1 - g.w - g.pw};
  const auto algo = dnnl::algorithm::convolution_direct;
  ConvPrimitives p{
      dnnl::convolution_forward::primitive_desc(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, src, wei, dst,
                                          strides, dilates, pad, pad_r),
          onednn_engine()),
      {},
      {},
      {},
      {},
      {}};
  p.backward_data_pd = dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(algo, src, wei, dst, strides, dilates, pad, pad_r),
      onednn_engine(), p.forward_pd);
  p.backward_weights_pd = dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(algo, src, wei, dst, strides, dilates, pad, pad_r),
      onednn_engine(), p.forward_pd);
  p.forward = dnnl::convolution_forward(p.forward_pd);
  p.backward_data = dnnl::convolution_backward_data(p.backward_data_pd);
  p.backward_weights = dnnl::convolution_backward_weights(p.backward_weights_pd);
  return cache.emplace(key, std::move(p)).first->second;
}

// Memory for data in a primitive's layout, from kiln's caching allocator: a training loop
// needs the same sizes every step, and fresh memory would fault its pages in every time.
// `keep` holds the buffers until the stream has finished with them.
memory scratch(const memory::desc& desc, std::vector<std::shared_ptr<Buffer>>& keep) {
  const auto floats =
      static_cast<std::int64_t>((desc.get_size() + sizeof(float) - 1) / sizeof(float));
  keep.push_back(std::make_shared<Buffer>(DType::f32, std::max<std::int64_t>(1, floats)));
  return memory(desc, onednn_engine(), keep.back()->data());
}

// 16 or 8 when `desc` is `dims` (4-d) with dimension 1 in blocks of that many (oneDNN's nChw16c
// and nChw8c, which its direct convolutions prefer), else 0.
std::int64_t channel_block(const memory::desc& desc, const memory::dims& dims) {
  const auto blocked = [&](memory::format_tag tag) {
    return desc == memory::desc(dims, memory::data_type::f32, tag);
  };
  if (dims.size() != 4) return 0;
  if (blocked(memory::format_tag::nChw16c)) return 16;
  if (blocked(memory::format_tag::nChw8c)) return 8;
  return 0;
}

// Converts between plain NCHW data and channel blocks (see channel_block) with kiln's own
// vectorised transposes, over the threads: `to_blocks` false unblocks (`from` blocked, `to`
// planes), true blocks (the padding channels zero). oneDNN's reorders take longer than the
// convolutions around them ([32,16,64,64] from nChw16c: 0.93 ms against 0.68 ms on one thread).
void convert_channel_blocks(const float* from, float* to, const memory::dims& dims,
                            std::int64_t block, bool to_blocks) {
  const std::int64_t images = dims[0], channels = dims[1], positions = dims[2] * dims[3];
  const std::int64_t blocks = (channels + block - 1) / block;
  const FloatLoops& loops = float_loops();
  const auto loop = to_blocks ? loops.block_channels_f32 : loops.unblock_channels_f32;
  parallel_for(images * blocks, grain_for(positions * block), [&](std::int64_t begin,
                                                                    std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t first = i % blocks * block;
      const std::int64_t blocked_at = i * positions * block;
      const std::int64_t planes_at = (i / blocks * channels + first) * positions;
      loop(from + (to_blocks ? planes_at : blocked_at), to + (to_blocks ? blocked_at : planes_at),
           std::min(block, channels - first), positions, block);
    }
  });
}

// User data in a plain layout, seen in the layout a primitive wants (converted when they differ:
// by kiln's transposes for channel blocks, else by a oneDNN reorder).
memory as_layout(dnnl::stream& stream, const memory::desc& want, const memory::desc& plain_desc,
                 const void* data, std::vector<std::shared_ptr<Buffer>>& keep) {
  memory user(plain_desc, onednn_engine(), const_cast<void*>(data));
  if (want == plain_desc) return user;
  memory converted = scratch(want, keep);
  if (const std::int64_t block = channel_block(want, plain_desc.dims()))
    convert_channel_blocks(static_cast<const float*>(data),
                           static_cast<float*>(converted.get_data_handle()), plain_desc.dims(),
                           block, true);
  else
    dnnl::reorder(user, converted).execute(stream, user, converted);
  return converted;
}

template <class T> bool run_conv_of(const Kernel& k, Buffer& out);

bool run_conv(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  // f32; bf16 with oneDNN's bf16 primitives where it has them for this CPU; else 16-bit floats
  // read as f32 (Contiguous widens them) and the result rounded.
  if (arithmetic_type(n.dtype) != DType::f32) return false;
  bool all_bf16 = n.dtype == DType::bf16;
  for (const KernelInput& in : k.inputs) {
    if (arithmetic_type(in.node->dtype) != DType::f32) return false;
    all_bf16 = all_bf16 && in.node->dtype == DType::bf16;
  }
  if (all_bf16 && run_conv_of<BFloat16>(k, out)) return true;
  return computed_as_f32(n, out, [&](Buffer& values) { return run_conv_of<float>(k, values); });
}

// The convolution of values of type T (float, or BFloat16 where oneDNN has bf16 primitives);
// false, with `out` untouched, where oneDNN has no primitive for it.
template <class T> bool run_conv_of(const Kernel& k, Buffer& out) {
  constexpr memory::data_type type =
      std::is_same_v<T, float> ? memory::data_type::f32 : memory::data_type::bf16;
  const Node& n = *k.root;
  const Window2d g = window2d_of(n);
  // oneDNN has no primitive for empty tensors: the reference kernel gives their (empty or zero)
  // results.
  if (g.n == 0 || g.c == 0 || g.o == 0 || g.oh == 0 || g.ow == 0) return false;
  // oneDNN rejects negative right padding (windows that end before the input does).
  if ((g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1 - g.h - g.ph < 0 ||
      (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1 - g.w - g.pw < 0)
    return false;
  const ConvPrimitives* primitives = nullptr;
  try {
    primitives = &conv_primitives(g, type);
  } catch (const dnnl::error&) {
    return false;  // a geometry oneDNN has no primitive for: the reference kernel computes it
  }
  const ConvPrimitives& p = *primitives;
  const Contiguous<T> a(k.inputs[0]), b(k.inputs[1]);
  const auto src = plain({g.n, g.c, g.h, g.w}, memory::format_tag::nchw, type);
  const auto wei = plain({g.o, g.c, g.kh, g.kw}, memory::format_tag::oihw, type);
  const auto dst = plain({g.n, g.o, g.oh, g.ow}, memory::format_tag::nchw, type);
  dnnl::stream stream(onednn_engine());
  std::vector<std::shared_ptr<Buffer>> keep;
  // Computes into the primitive's preferred layout, then reorders into `out` if needed.
  auto run = [&](const dnnl::primitive& prim, std::unordered_map<int, memory> args, int out_arg,
                 const memory::desc& out_want, const memory::desc& out_plain) {
    memory user(out_plain, onednn_engine(), out.data());
    memory result = out_want == out_plain ? user : scratch(out_want, keep);
    args.insert({out_arg, result});
    prim.execute(stream, args);
    if (out_want == out_plain) return;
    if (const std::int64_t block = channel_block(out_want, out_plain.dims())) {
      stream.wait();
      convert_channel_blocks(static_cast<const float*>(result.get_data_handle()),
                             static_cast<float*>(out.data()), out_plain.dims(), block, false);
    } else {
      dnnl::reorder(result, user).execute(stream, result, user);
    }
  };
  switch (n.op) {
    case Op::conv2d:
      run(p.forward,
          {{DNNL_ARG_SRC, as_layout(stream, p.forward_pd.src_desc(), src, a.data, keep)},
           {DNNL_ARG_WEIGHTS, as_layout(stream, p.forward_pd.weights_desc(), wei, b.data, keep)}},
          DNNL_ARG_DST, p.forward_pd.dst_desc(), dst);
      break;
    case Op::conv2d_grad_input:
      run(p.backward_data,
          {{DNNL_ARG_DIFF_DST,
            as_layout(stream, p.backward_data_pd.diff_dst_desc(), dst, a.data, keep)},
           {DNNL_ARG_WEIGHTS,
            as_layout(stream, p.backward_data_pd.weights_desc(), wei, b.data, keep)}},
          DNNL_ARG_DIFF_SRC, p.backward_data_pd.diff_src_desc(), src);
      break;
    case Op::conv2d_grad_weight:
      run(p.backward_weights,
          {{DNNL_ARG_SRC, as_layout(stream, p.backward_weights_pd.src_desc(), src, a.data, keep)},
           {DNNL_ARG_DIFF_DST,
            as_layout(stream, p.backward_weights_pd.diff_dst_desc(), dst, b.data, keep)}},
          DNNL_ARG_DIFF_WEIGHTS, p.backward_weights_pd.diff_weights_desc(), wei);
      break;
    default: return false;
  }
  stream.wait();
  return true;
}

// ---- max pooling ----------------------------------------------------------------------------------

// The common 2x2, stride 2 case as straight-line, vectorisable code: `grad` null for the
// forward pass (dst is the pooled plane), else the pooled gradient (dst is the input's plane).
template <class T> void pool_2x2(const T* plane, T* dst, const Window2d& g, const T* grad) {
  constexpr T nan = std::numeric_limits<T>::quiet_NaN();
  for (std::int64_t i = 0; i < g.oh; ++i) {
    const T* r0 = plane + 2 * i * g.w;
    const T* r1 = r0 + g.w;
    if constexpr (std::is_same_v<T, float>) {  // the vectorised rows of the machine's ISA
      if (grad == nullptr)
        float_loops().pool2x2_row_f32(r0, r1, dst + i * g.ow, g.ow);
      else
        float_loops().pool2x2_grad_row_f32(r0, r1, grad + i * g.ow, dst + 2 * i * g.w,
                                           dst + (2 * i + 1) * g.w, g.ow);
      continue;
    }
    if (grad == nullptr) {
      T* o = dst + i * g.ow;
      for (std::int64_t j = 0; j < g.ow; ++j) {
        const T a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
        const T ab = a > b ? a : b, cd = c > d ? c : d;
        const bool any_nan = (a != a) | (b != b) | (c != c) | (d != d);
        o[j] = any_nan ? nan : (ab > cd ? ab : cd);
      }
      continue;
    }
    T* d0 = dst + 2 * i * g.w;
    T* d1 = d0 + g.w;
    const T* gi = grad + i * g.ow;
    // A NaN in the window makes `ok` 0 and so every flag 0: the window's gradient is then 0.
    for (std::int64_t j = 0; j < g.ow; ++j) {
      const T a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
      const T ab = a > b ? a : b, cd = c > d ? c : d;
      const T m = ab > cd ? ab : cd;
      const T ok = (a == a ? T{1} : T{0}) * (b == b ? T{1} : T{0}) * (c == c ? T{1} : T{0}) *
                   (d == d ? T{1} : T{0});
      const T ea = a == m ? ok : T{0}, eb = b == m ? ok : T{0};
      const T ec = c == m ? ok : T{0}, ed = d == m ? ok : T{0};
      const T ties = ea + eb + ec + ed;
      const T each = gi[j] / (ties > T{0} ? ties : T{1});
      d0[2 * j] = ea > T{0} ? each : T{0};
      d0[2 * j + 1] = eb > T{0} ? each : T{0};
      d1[2 * j] = ec > T{0} ? each : T{0};
      d1[2 * j + 1] = ed > T{0} ? each : T{0};
    }
  }
}

// The same semantics as the reference kernel (ties share the gradient), one plane per task.
template <class T> void pool(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  const Window2d g = window2d_of(n);
  const Contiguous<T> x(k.inputs[0]);
  std::optional<Contiguous<T>> grad;
  if (n.op == Op::max_pool2d_grad) grad.emplace(k.inputs[1]);
  T* o = out.as<T>();
  parallel_for(g.n * g.c, grain_for(g.h * g.w), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      const T* plane = x.data + p * g.h * g.w;
      T* dst = n.op == Op::max_pool2d ? o + p * g.oh * g.ow : o + p * g.h * g.w;
      // Without padding every window lies inside the plane: no bounds checks.
      const bool inside = g.ph == 0 && g.pw == 0;
      const bool two_by_two =
          inside && g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.dh == 1 && g.dw == 1;
      // The 2x2 gradient writes every position its windows cover; the rest must be 0.
      const bool covered = two_by_two && g.h == 2 * g.oh && g.w == 2 * g.ow;
      if (n.op == Op::max_pool2d_grad && !covered) std::fill(dst, dst + g.h * g.w, T{0});
      if (two_by_two) {
        pool_2x2(plane, dst, g, n.op == Op::max_pool2d_grad ? grad->data + p * g.oh * g.ow : nullptr);
        continue;
      }
      for (std::int64_t i = 0; i < g.oh; ++i)
        for (std::int64_t j = 0; j < g.ow; ++j) {
          T best{};
          bool any = false;
          if (inside) {
            // Branch-free: a comparison per element whose outcome is random data would cost a
            // mispredicted branch each time.
            const T* corner = plane + g.row(i, 0) * g.w + g.col(j, 0);
            best = corner[0];
            any = true;
            bool nan = false;
            for (std::int64_t ki = 0; ki < g.kh; ++ki) {
              const T* r = corner + ki * g.dh * g.w;
              for (std::int64_t kj = 0; kj < g.kw; ++kj) {
                const T v = r[kj * g.dw];
                nan |= v != v;
                best = v > best ? v : best;
              }
            }
            if (nan) best = std::numeric_limits<T>::quiet_NaN();
            if (n.op == Op::max_pool2d_grad) {
              const T share = grad->data[(p * g.oh + i) * g.ow + j];
              int ties = 0;
              for (std::int64_t ki = 0; ki < g.kh; ++ki)
                for (std::int64_t kj = 0; kj < g.kw; ++kj)
                  ties += corner[ki * g.dh * g.w + kj * g.dw] == best;
              const T each = tie_share(share, ties);
              T* target = dst + g.row(i, 0) * g.w + g.col(j, 0);
              for (std::int64_t ki = 0; ki < g.kh; ++ki)
                for (std::int64_t kj = 0; kj < g.kw; ++kj) {
                  const std::int64_t at = ki * g.dh * g.w + kj * g.dw;
                  target[at] += corner[at] == best ? each : T{0};
                }
              continue;
            }
          } else {
            const auto [k0, k1] = g.rows_inside(i);
            const auto [l0, l1] = g.cols_inside(j);
            for (std::int64_t ki = k0; ki < k1; ++ki) {
              const std::int64_t y = g.row(i, ki);
              for (std::int64_t kj = l0; kj < l1; ++kj) {
                const std::int64_t xx = g.col(j, kj);
                const T v = plane[y * g.w + xx];
                if (!any || v > best || is_nan(v)) best = any && is_nan(best) ? best : v;
                any = true;
              }
            }
          }
          if (n.op == Op::max_pool2d) {
            dst[i * g.ow + j] = best;
            continue;
          }
          const T share = grad->data[(p * g.oh + i) * g.ow + j];
          int ties = 0;
          const auto [k0, k1] = g.rows_inside(i);
          const auto [l0, l1] = g.cols_inside(j);
          for (int pass = 0; pass < 2; ++pass)
            for (std::int64_t ki = k0; ki < k1; ++ki) {
              const std::int64_t y = g.row(i, ki);
              for (std::int64_t kj = l0; kj < l1; ++kj) {
                const std::int64_t xx = g.col(j, kj);
                if (!(plane[y * g.w + xx] == best)) continue;
                if (pass == 0) ++ties;
                else dst[y * g.w + xx] += tie_share(share, ties);
              }
            }
        }
    }
  });
}

}  // namespace

bool run_window2d(const Kernel& k, Buffer& out) {
  const Node& n = *k.root;
  if (n.op == Op::max_pool2d || n.op == Op::max_pool2d_grad) {
    // Same input and output types only; mixed ones go to the reference kernel.
    if (!is_float(n.dtype) || k.inputs[0].node->dtype != n.dtype) return false;
    return computed_as_f32(n, out, [&](Buffer& values) {
      dispatch(arithmetic_type(n.dtype), [&]<class T>() {
        if constexpr (std::is_floating_point_v<T>) pool<T>(k, values);
      });
      return true;
    });
  }
  return run_conv(k, out);
}

}  // namespace kiln::detail::cpu
