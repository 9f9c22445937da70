// Every kernel the C-style renderer (src/exec/codegen/) can produce, in every dialect it knows,
// compiled by that dialect's compiler without running anything: OpenCL C by the first OpenCL
// device (PoCL on the CPU here), CUDA C by NVRTC to PTX (NVRTC needs no GPU). A dialect whose
// compiler is absent is reported skipped, never passed.
//
// The kernels are real ones: graphs built through the public API (every elementwise registry
// row in each type it takes, conversions between every pair of types, and one or more graphs
// per kernel family) are evaluated on an executor whose test-only backend lowers and renders
// each kernel the runtime schedules, in every dialect, and records the sources. It then has the
// values computed the cheapest way that lets the evaluation go on: single-node kernels by the
// host's reference kernels (KernelOutcome::unsupported), fused ones as zeros (the values are
// never looked at; zeros are valid indices for the index ops downstream).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <complex>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "exec/backend.hpp"
#include "exec/codegen/dialect.hpp"
#include "exec/codegen/render.hpp"
#include "exec/fusion.hpp"
#include "exec/kernel_ir.hpp"
#include "exec/runtime.hpp"
#include "graph/node.hpp"
#include "graph/op_registry.hpp"
#include "kiln/kiln.hpp"
#include "registry_rows.hpp"

#ifdef KILN_TEST_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif
#ifdef KILN_TEST_NVRTC
#include <nvrtc.h>
#endif

namespace {

using kiln::DType;
using kiln::Tensor;
namespace kd = kiln::detail;

// OpenCL C as a device whose arithmetic does not follow the NaN rule by itself gets it, and as a
// device without double arithmetic gets it (c64 quotients by Smith's method in float).
constexpr kd::Dialect kOpenClCOtherDevice = [] {
  kd::Dialect d = kd::kOpenClC;
  d.name = "OpenCL C with the NaN rule, without double arithmetic";
  d.nan_rule = true;
  d.double_arithmetic = false;
  return d;
}();
const kd::Dialect* const kDialects[] = {&kd::kOpenClC, &kd::kCudaC, &kOpenClCOtherDevice};

// The families of kernels, as render_kernel tells them apart: each must be rendered at least once.
const char* const kFamilies[] = {"elementwise", "materialize", "reduce",  "matmul",
                                 "uniform",     "copy",        "concat",  "softmax",
                                 "window2d",    "gather",      "scatter_add", "unwindow",
                                 "scan",        "argsort",     "fft"};

std::string family_of(const kd::Kernel& k) {
  switch (k.kind) {
    case kd::Kernel::Kind::elementwise: return "elementwise";
    case kd::Kernel::Kind::materialize: return "materialize";
    case kd::Kernel::Kind::reduce: return "reduce";
    case kd::Kernel::Kind::matmul: return "matmul";
    case kd::Kernel::Kind::single: break;
  }
  switch (k.root->info().kind) {
    case kd::OpKind::source: return "uniform";
    case kd::OpKind::copy: return "copy";
    case kd::OpKind::concat: return "concat";
    case kd::OpKind::softmax: return "softmax";
    case kd::OpKind::window2d: return "window2d";
    case kd::OpKind::indexing: return std::string(k.root->info().name);
    case kd::OpKind::scan: return "scan";
    case kd::OpKind::sort: return "argsort";
    case kd::OpKind::spectral: return "fft";
    default: return "other";
  }
}

// One rendered kernel: what a compiler needs to build it.
struct Source {
  std::string family, entry;
  bool f64 = false;
};

struct Captured {
  // Per dialect: source text -> what it is (identical sources are compiled once).
  std::vector<std::map<std::string, Source>> sources{std::size(kDialects)};
  std::set<kd::Op> ops;  // of the nodes the rendered kernels compute
};

class RenderingBackend final : public kd::Backend {
 public:
  explicit RenderingBackend(Captured& out) : out_(out) {}

  std::string_view name() const override { return "render-test"; }

  // The OpenCL backend's policy: what a device backend with the renderer fuses.
  kd::FusionPolicy fusion() const override {
    kd::FusionPolicy p;
    p.host_callables = false;
    p.max_ops = 256;
    p.narrow_types = true;
    p.complex_single_kernels = true;
    p.complex_elementwise = &kd::renders_complex;
    return p;
  }

  kd::KernelOutcome run(const kd::KernelRun& r) override {
    const kd::Kernel& k = r.kernel;
    if (kd::can_render(k)) {
      out_.ops.insert(k.root->op);
      for (const kd::Node* n : k.body) out_.ops.insert(n->op);
      kd::KernelIr ir;
      if (!k.body.empty()) {
        const kd::DescribeLoad describe = [](const kd::Node&, const kd::Node*) {
          return kd::LoadFacts{};
        };
        kd::lower_kernel(k.body,
                         k.kind == kd::Kernel::Kind::elementwise ? k.stored
                                                                 : std::vector<kd::Node*>{},
                         r.structure, describe, ir);
      }
      // A GPU with double and large work-groups, and a device without double with small ones
      // (accumulators in the value's type, smaller reduction trees, one position a work-item).
      const kd::DeviceTraits devices[] = {{.fp64 = true, .max_group = 256, .gpu = true},
                                          {.fp64 = false, .max_group = 16}};
      for (const kd::DeviceTraits& device : devices)
        for (std::size_t d = 0; d < std::size(kDialects); ++d) {
          const kd::RenderedKernel rk =
              kd::render_kernel(k, ir, r.structure, *kDialects[d], device);
          out_.sources[d].emplace(rk.source, Source{family_of(k), rk.entry, rk.uses_f64});
        }
    }
    if (k.kind == kd::Kernel::Kind::matmul || k.kind == kd::Kernel::Kind::single ||
        (k.body.empty() && k.stored.empty()))
      return kd::KernelOutcome::unsupported;  // the host's reference kernel computes it
    std::vector<kd::Node*> outputs{k.root};
    outputs.insert(outputs.end(), k.stored.begin(), k.stored.end());
    for (kd::Node* n : outputs) {
      auto zeros = std::make_shared<kd::Buffer>(n->dtype, n->numel());
      std::memset(zeros->data(), 0, zeros->bytes());
      n->result = std::move(zeros);
    }
    return kd::KernelOutcome::fell_back;
  }

 private:
  Captured& out_;
};

// Values of type t: a few of each sign, a zero; f32 values converted (so 0/1 for bool).
Tensor values(DType t, kiln::Shape shape, double scale = 1.0) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<float>(scale * ((i * 7) % 11 - 5) / 2.0);
  return kiln::convert(Tensor::from(v, shape), t).eval(*kiln::reference_executor());
}

Tensor indices(std::vector<std::int64_t> v, kiln::Shape shape) {
  return Tensor::from(v, shape);
}

constexpr DType kTypes[] = {DType::f32,  DType::f64, DType::i32,     DType::i64, DType::f16,
                            DType::bf16, DType::u8,  DType::i8,      DType::i16, DType::boolean};
// The elementwise kernels also take the complex types (their ops with a complex form).
constexpr DType kElementwiseTypes[] = {DType::f32, DType::f64, DType::i32, DType::i64,
                                       DType::f16, DType::bf16, DType::u8, DType::i8,
                                       DType::i16, DType::boolean, DType::c64, DType::c128};

// The graphs: every registry row, every conversion, then each kernel family.
std::vector<std::function<Tensor()>> graphs() {
  std::vector<std::function<Tensor()>> g;
  // Per type, one kernel of every unary row that takes it, one of every binary row, one of the
  // conversions to every other type: each result converted to f64 and added up, so that they are
  // one fused kernel (compiling a few large kernels takes far less time than many small ones).
  const auto add_up = [](const std::vector<Tensor>& terms) {
    Tensor total = kiln::convert(terms[0], DType::f64);
    for (std::size_t i = 1; i < terms.size(); ++i) total = total + kiln::convert(terms[i], DType::f64);
    return total;
  };
  for (DType t : kElementwiseTypes) {
    g.push_back([t, add_up] {
      const Tensor x = values(t, {2, 3});
      std::vector<Tensor> terms;
      for (const kiln_test::Row& row : kiln_test::elementwise_rows())
        if (row.unary && row.op != kd::Op::convert && kd::accepts(row.op, t))
          terms.push_back(row.unary(x));
      return add_up(terms);
    });
    g.push_back([t, add_up] {
      const Tensor a = values(t, {2, 3}), b = values(t, {2, 3}, -0.5);
      std::vector<Tensor> terms;
      for (const kiln_test::Row& row : kiln_test::elementwise_rows())
        if (row.binary && kd::accepts(row.op, t)) terms.push_back(row.binary(a, b));
      return add_up(terms);
    });
    g.push_back([t, add_up] {
      const Tensor x = values(t, {2, 3});
      std::vector<Tensor> terms;
      for (DType to : kElementwiseTypes)
        if (to != t) terms.push_back(kiln::convert(x, to));
      return add_up(terms);
    });
  }
  for (DType t : kElementwiseTypes)
    g.push_back([t] {
      return kiln::where(values(DType::boolean, {2, 3}), values(t, {2, 3}), values(t, {3}, 2));
    });

  // Elementwise chains through views (reordering, padding with infinities and NaN, broadcasts),
  // with several outputs, and plain copies through views (materialize).
  g.push_back([] {
    const Tensor x = values(DType::f32, {3, 4}), y = values(DType::f32, {4, 3});
    return kiln::exp(kiln::permute(x, {1, 0})) * 2.0 + kiln::sqrt(kiln::abs(y)) -
           kiln::slice(kiln::pad(y, {1, 0}, {0, 1}, -INFINITY), {1, 0}, {5, 3});
  });
  g.push_back([] {
    const Tensor x = values(DType::f64, {4});
    return kiln::pad(x, {2}, {1}, NAN) + kiln::pad(x, {1}, {2}, INFINITY);
  });
  g.push_back([] {
    const Tensor x = values(DType::i64, {2, 3});
    return kiln::pad(x, {0, 1}, {1, 0}, std::numeric_limits<std::int64_t>::min()) *
           kiln::broadcast_to(values(DType::i64, {4}), {3, 4});
  });
  g.push_back([] {
    const Tensor x = values(DType::f16, {3, 4});
    return kiln::permute(x, {1, 0}) + kiln::convert(values(DType::bf16, {4, 3}), DType::f16);
  });
  g.push_back([] {
    const Tensor z = kiln::complex(values(DType::f32, {3, 4}), values(DType::f32, {3, 4}, 0.5));
    return kiln::exp(kiln::permute(z, {1, 0})) * 2.0 +
           kiln::pad(kiln::convert(values(DType::f64, {4, 2}), DType::c128), {0, 1}, {0, 0},
                     std::complex<double>(INFINITY, NAN));
  });
  g.push_back([] { return kiln::contiguous(kiln::permute(values(DType::f32, {3, 4}), {1, 0})); });
  g.push_back([] { return kiln::contiguous(kiln::permute(values(DType::c64, {3, 4}), {1, 0})); });
  g.push_back([] { return kiln::contiguous(kiln::permute(values(DType::bf16, {3, 4}), {1, 0})); });
  g.push_back([] {
    return kiln::contiguous(kiln::slice(values(DType::i32, {5, 6}), {1, 0}, {4, 6}, {2, 3}));
  });
  g.push_back([] {
    const Tensor x = values(DType::f32, {2, 3});
    const Tensor a = kiln::exp(x) + 1.0;
    return kiln::concat(a * 2.0, kiln::log(a), 0);  // a is computed once, stored and reused
  });
  g.push_back([] {
    const Tensor x = values(DType::f32, {4, 6}).eval();
    return kiln::sliding_window(kiln::reshape(x, {24}), {5}, {3}) * 3.0;
  });
  // Many positions: several per work-item, written after all are computed; a stored f16 node.
  g.push_back([] {
    const Tensor x = kiln::exp(values(DType::f32, {20000})) + 1.0;
    return kiln::concat(kiln::convert(x * 2.0, DType::f16), kiln::convert(x, DType::f16), 0);
  });
  g.push_back(
      [] { return kiln::contiguous(kiln::permute(values(DType::bf16, {150, 130}), {1, 0})); });

  // Reductions, with and without a fused producer, in each type.
  for (DType t : kTypes) {
    g.push_back([t] { return kiln::sum(values(t, {4, 5}), {1}); });
    g.push_back([t] { return kiln::max(values(t, {4, 5}), {0}); });
    g.push_back([t] { return kiln::argmin(values(t, {4, 5}), 1); });
  }
  g.push_back([] { return kiln::prod(values(DType::f32, {3, 4, 5}), {1}); });
  g.push_back([] { return kiln::min(values(DType::i64, {3, 4, 5}), {2}); });
  g.push_back([] { return kiln::mean(values(DType::f64, {300}), {0}); });
  g.push_back([] { return kiln::mean(values(DType::i32, {4, 5}), {1}); });
  g.push_back([] { return kiln::argmax(values(DType::f32, {4, 5}), 0); });
  g.push_back([] { return kiln::sum(kiln::exp(values(DType::f32, {4, 5})) * 2.0, {1}); });
  // Few outputs of many terms: two launches, the second merging the first's partial results.
  g.push_back([] { return kiln::sum(kiln::exp(values(DType::f32, {20000})) * 2.0); });
  g.push_back([] { return kiln::mean(values(DType::f64, {3, 9000}), {1}); });
  g.push_back([] { return kiln::prod(values(DType::i64, {9000, 2}), {0}); });
  g.push_back([] { return kiln::sum(values(DType::f16, {10000})); });
  // Complex values: sums (in the tree, split in two launches), means, products (in order), and
  // real reductions of values computed from complex ones.
  g.push_back([] { return kiln::sum(values(DType::c64, {4, 5}), {1}); });
  g.push_back([] { return kiln::mean(values(DType::c128, {3, 9000}), {1}); });
  g.push_back([] { return kiln::prod(kiln::exp(values(DType::c64, {4, 5})), {0}); });
  g.push_back([] { return kiln::max(kiln::abs(values(DType::c64, {4, 5}) * 2.0), {1}); });
  g.push_back([] {
    return kiln::max(kiln::permute(values(DType::f32, {4, 5}), {1, 0}) + 1.0, {1});
  });

  // softmax and log_softmax.
  for (DType t : {DType::f32, DType::f64}) {
    g.push_back([t] { return kiln::softmax(values(t, {3, 5}), 1); });
    g.push_back([t] { return kiln::log_softmax(values(t, {3, 5}), 0); });
  }
  // Lines held in registers by 128 and 512 work-items, and lines too long for that.
  g.push_back([] { return kiln::softmax(values(DType::f32, {2, 3000}), 1); });
  g.push_back([] { return kiln::log_softmax(values(DType::f32, {9000, 2}), 0); });
  g.push_back([] { return kiln::softmax(values(DType::f32, {40000}), 0); });

  // The 2-D window ops and their gradients.
  g.push_back([] {
    kiln::GradientContext context;
    const Tensor x = values(DType::f32, {1, 2, 5, 5}).watch(), w = values(DType::f32, {3, 2, 3, 3}).watch();
    const Tensor y = kiln::conv2d(x, w, Tensor(), {.stride = {2, 1}, .padding = {1, 1}});
    const auto grads = kiln::gradients(y * y, {x, w});
    return kiln::sum(grads[0]) + kiln::sum(grads[1]);
  });
  for (DType t : {DType::f32, DType::f64})
    g.push_back([t] {
      kiln::GradientContext context;
      const Tensor x = values(t, {1, 2, 6, 6}).watch();
      const Tensor y = kiln::max_pool2d(x, {3, 3}, {.stride = {2, 2}, .padding = {1, 1}});
      return kiln::sum(kiln::gradient(y, x)) + kiln::convert(kiln::sum(y), DType::f32);
    });
  g.push_back([] { return kiln::max_pool2d(values(DType::i32, {2, 5, 5}), {2, 2}); });

  // Indexing: gather, scatter_add, index_select, unwindow.
  g.push_back([] {
    return kiln::gather(values(DType::f32, {3, 4}), 1,
                        indices({0, 3, 1, 2, 2, 0, 1, 1, 3}, {3, 3}));
  });
  g.push_back([] {
    return kiln::gather(values(DType::i64, {3, 4}), 0, indices({0, 2, 1, 1}, {1, 4}));
  });
  g.push_back([] {
    return kiln::scatter_add(values(DType::f32, {3, 4}), 0, indices({0, 2, 1, 0, 2, 2, 1, 0}, {2, 4}),
                             values(DType::f32, {2, 4}));
  });
  g.push_back([] {
    return kiln::scatter_add(values(DType::i32, {4, 3}), 1, indices({0, 2, 1, 0, 2, 2}, {2, 3}),
                             values(DType::i32, {2, 3}));
  });
  g.push_back([] {
    return kiln::index_select(values(DType::f64, {4, 3}), 0, indices({3, 0, 0}, {3}));
  });
  g.push_back([] {
    return kiln::unslide_window(values(DType::f32, {3, 5}), {11}, {3});
  });
  g.push_back([] {  // complex values: gather, scatter_add and unwindow
    const Tensor z = values(DType::c128, {3, 4});
    const Tensor at = indices({0, 3, 1, 2, 2, 0}, {3, 2});
    return kiln::scatter_add(z, 1, at, kiln::gather(z, 1, at)) +
           kiln::unslide_window(kiln::sliding_window(z, {2, 2}, {1, 1}), {3, 4}, {1, 1});
  });
  g.push_back([] {
    return kiln::unslide_window(values(DType::i64, {4, 3, 2}), {5, 4}, {2, 2});
  });

  // Scans and argsort.
  for (DType t : {DType::f32, DType::i32, DType::i64, DType::f64, DType::c64}) {
    g.push_back([t] { return kiln::cumsum(values(t, {3, 4}), 1); });
    g.push_back([t] { return kiln::cumprod(values(t, {3, 4}), 0); });
    if (!kiln::is_complex(t))
      g.push_back([t] { return kiln::argsort(values(t, {3, 4}), 1, t == DType::i32); });
  }

  // matmul, concat, random_uniform.
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64})
    g.push_back([t] { return kiln::matmul(values(t, {2, 3, 4}), values(t, {2, 4, 5})); });
  g.push_back([] {
    return kiln::matmul(kiln::permute(values(DType::f32, {4, 3}), {1, 0}), values(DType::f32, {4, 2}));
  });
  for (DType t : {DType::f32, DType::i64, DType::f64, DType::c64, DType::c128})
    g.push_back([t] { return kiln::concat({values(t, {2, 3}), values(t, {2, 1}), values(t, {2, 2})}, 1); });
  g.push_back([] {
    return kiln::concat(kiln::permute(values(DType::i32, {3, 2}), {1, 0}), values(DType::i32, {1, 3}), 0);
  });
  for (DType t : {DType::f32, DType::f64})
    g.push_back([t] { return kiln::uniform({5, 7}, 11, t); });

  // Fourier transforms, forward and inverse, of real and complex values, along either axis,
  // through a view: lengths that are powers of two, then of mixed radices, then long lines.
  g.push_back([] { return kiln::fft(values(DType::c64, {3, 16})); });
  g.push_back([] { return kiln::ifft(values(DType::f32, {8, 3}), std::nullopt, 0); });
  g.push_back([] { return kiln::fft(kiln::permute(values(DType::c128, {4, 2}), {1, 0})); });
  g.push_back([] { return kiln::fft(values(DType::f64, {2, 1})); });
  // 2^2 3, 3 5 7 (axis 0, inverse), 61 (the largest radix), and of the narrow floats.
  g.push_back([] { return kiln::fft(values(DType::c64, {2, 12})); });
  g.push_back([] { return kiln::fft(values(DType::f16, {2, 6})); });
  g.push_back([] { return kiln::ifft(values(DType::bf16, {5, 2}), std::nullopt, 0); });
  g.push_back([] { return kiln::ifft(values(DType::f32, {105, 2}), std::nullopt, 0); });
  g.push_back([] { return kiln::fft(values(DType::c128, {61})); });
  // Lines over 48 KiB, transformed in the output buffer.
  g.push_back([] { return kiln::fft(values(DType::c64, {1, 8192})); });
  g.push_back([] { return kiln::ifft(values(DType::c128, {2, 3500})); });
  // A prime factor above 64 (Bluestein's method), in local memory and in scratch.
  g.push_back([] { return kiln::fft(values(DType::c64, {2, 67})); });
  g.push_back([] { return kiln::ifft(values(DType::c128, {1, 4099}), std::nullopt, 0); });
  return g;
}

// The sources of every graph, rendered once per process.
const Captured& captured() {
  static const Captured all = [] {
    Captured c;
    const auto executor = kd::make_runtime(std::make_unique<RenderingBackend>(c));
    for (const auto& make : graphs()) make().eval(*executor);
    // KILN_RENDER_DUMP=<folder>: every source, one file per dialect (to compare renderers).
    if (const char* dump = std::getenv("KILN_RENDER_DUMP"); dump != nullptr && dump[0] != '\0') {
      std::filesystem::create_directories(dump);
      for (std::size_t d = 0; d < std::size(kDialects); ++d) {
        std::ofstream f(std::filesystem::path(dump) / (std::string(kDialects[d]->name) + ".txt"));
        for (const auto& [source, what] : c.sources[d])
          f << "//// " << what.family << " " << what.entry << "\n" << source;
      }
    }
    return c;
  }();
  return all;
}

std::string report(const std::string& source, const std::string& log) {
  return "---- source ----\n" + source + "---- log ----\n" + log;
}

TEST(RenderDialects, EveryFamilyIsRenderedInEveryDialect) {
  const Captured& c = captured();
  for (std::size_t d = 0; d < std::size(kDialects); ++d) {
    std::map<std::string, int> count;
    for (const auto& [source, what] : c.sources[d]) ++count[what.family];
    std::string line;
    for (const auto& [family, n] : count) line += " " + family + " " + std::to_string(n);
    std::cout << kDialects[d]->name << ": " << c.sources[d].size() << " kernels:" << line << "\n";
    for (const char* family : kFamilies)
      EXPECT_GT(count[family], 0) << kDialects[d]->name << " renders no " << family << " kernel";
    EXPECT_EQ(count["other"], 0);
  }
  // Every elementwise row of the registry in some rendered kernel.
  for (const kiln_test::Row& row : kiln_test::elementwise_rows())
    EXPECT_TRUE(c.ops.contains(row.op)) << "no rendered kernel computes " << row.name;
  // The same kernels in every dialect.
  for (std::size_t d = 1; d < std::size(kDialects); ++d)
    EXPECT_EQ(c.sources[d].size(), c.sources[0].size()) << kDialects[d]->name;
}

#ifdef KILN_TEST_OPENCL
std::string device_info(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  clGetDeviceInfo(device, what, 0, nullptr, &size);
  std::string s(size, '\0');
  clGetDeviceInfo(device, what, size, s.data(), nullptr);
  return s;
}
#endif

TEST(RenderDialects, OpenClCCompiles) {
#ifndef KILN_TEST_OPENCL
  GTEST_SKIP() << "kiln was built without OpenCL (KILN_WITH_OPENCL=OFF)";
#else
  cl_uint platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0)
    GTEST_SKIP() << "no OpenCL platform: the OpenCL C kernels were rendered but not compiled";
  std::vector<cl_platform_id> ids(platforms);
  clGetPlatformIDs(platforms, ids.data(), nullptr);
  cl_device_id device = nullptr;
  for (cl_platform_id p : ids)
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS) break;
  if (device == nullptr) GTEST_SKIP() << "an OpenCL platform without devices";
  cl_int status = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  ASSERT_EQ(status, CL_SUCCESS);
  // The dialect's options plus the device's, as the OpenCL device builds its kernels.
  std::string options(kd::kOpenClC.compile_options);
  cl_device_fp_config single = 0;
  clGetDeviceInfo(device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof single, &single, nullptr);
  if ((single & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0)
    options += " -cl-fp32-correctly-rounded-divide-sqrt";
  const bool fp64 = device_info(device, CL_DEVICE_EXTENSIONS).find("cl_khr_fp64") != std::string::npos;
  const auto start = std::chrono::steady_clock::now();
  int built = 0, skipped = 0;
  // Both OpenCL C forms; a kernel the NaN rule leaves alike is built once.
  auto sources = captured().sources[0];
  for (const auto& [source, what] : captured().sources[2]) sources.emplace(source, what);
  for (const auto& [source, what] : sources) {
    if (what.f64 && !fp64) {
      ++skipped;
      continue;
    }
    const char* text = source.c_str();
    cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &status);
    ASSERT_EQ(status, CL_SUCCESS);
    status = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
    std::size_t size = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    if (status != CL_SUCCESS) {
      ADD_FAILURE() << what.family << " kernel " << what.entry << " does not build ("
                    << status << ")\n" << report(source, log);
    } else {
      cl_kernel kernel = clCreateKernel(program, what.entry.c_str(), &status);
      EXPECT_EQ(status, CL_SUCCESS) << "no entry point " << what.entry << "\n" << source;
      if (kernel != nullptr) clReleaseKernel(kernel);
      ++built;
    }
    clReleaseProgram(program);
  }
  clReleaseContext(context);
  std::cout << "OpenCL C: " << built << " kernels built on " << device_info(device, CL_DEVICE_NAME).c_str()
            << " (" << skipped << " f64 kernels left out) in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
  EXPECT_GT(built, 0);
#endif
}

TEST(RenderDialects, CudaCCompilesWithNvrtc) {
#ifndef KILN_TEST_NVRTC
  GTEST_SKIP() << "no CUDA toolkit (NVRTC) was found at configuration: the CUDA C kernels were "
                  "rendered but not compiled";
#else
  std::vector<std::string> words{"--gpu-architecture=compute_90"};
  std::istringstream dialect_options{std::string(kd::kCudaC.compile_options)};
  for (std::string w; dialect_options >> w;) words.push_back(w);
  std::vector<const char*> options;
  for (const std::string& w : words) options.push_back(w.c_str());
  const auto start = std::chrono::steady_clock::now();
  int built = 0;
  for (const auto& [source, what] : captured().sources[1]) {
    nvrtcProgram program = nullptr;
    ASSERT_EQ(nvrtcCreateProgram(&program, source.c_str(), "kernel.cu", 0, nullptr, nullptr),
              NVRTC_SUCCESS);
    const nvrtcResult result =
        nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
    std::size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    if (result != NVRTC_SUCCESS) {
      ADD_FAILURE() << what.family << " kernel " << what.entry << " does not compile ("
                    << nvrtcGetErrorString(result) << ")\n" << report(source, log);
    } else {
      nvrtcGetPTXSize(program, &size);
      std::string ptx(size, '\0');
      nvrtcGetPTX(program, ptx.data());
      EXPECT_NE(ptx.find(".entry " + what.entry), std::string::npos)
          << "no entry point " << what.entry << " in the PTX of\n" << source;
      ++built;
    }
    nvrtcDestroyProgram(&program);
  }
  std::cout << "CUDA C: " << built << " kernels compiled to PTX in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
  EXPECT_GT(built, 0);
#endif
}

}  // namespace
