// The OpenCL backend: matrix products go to CLBlast where it takes them; each other kernel of
// the runtime's schedule that the renderer has a form for (elementwise chains through views,
// copies through views, producers fused into reductions) runs as one generated OpenCL C kernel
// on the device. Results stay in device memory until a host reads them. Only kernels that run
// the user's C++ callables go to the runtime's host fallback, which KILN_DEBUG names.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "exec/backend.hpp"
#include "exec/codegen/render.hpp"
#include "exec/kernel_ir.hpp"
#include "exec/matrix_layout.hpp"
#include "exec/opencl/clblast_matmul.hpp"
#include "exec/opencl/opencl_device.hpp"
#include "exec/runtime.hpp"
#include "exec/semantics/indexing.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail::opencl {

namespace {

// Whether the variable `name` is set to `value` (unset counts as "").
bool env_is(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return std::string_view(v ? v : "") == value;
}

struct Prepared final : PreparedKernel {
  RenderedKernel rendered;
  cl_kernel kernel = nullptr;
};

class OpenClBackend final : public Backend {
 public:
  explicit OpenClBackend(std::shared_ptr<OpenClDevice> device) : device_(std::move(device)) {}

  std::string_view name() const override { return "opencl"; }

  FusionPolicy fusion() const override {
    FusionPolicy p;
    p.host_callables = false;  // a C++ callable cannot run on the device
    // A chain of thousands of ops would be one kernel whose compilation takes longer than the
    // memory traffic of cutting it saves.
    p.max_ops = 256;
    p.narrow_types = true;  // elementwise kernels and reductions (can_render)
    p.complex_single_kernels = true;  // CLBlast's complex products; the host does the rest
    return p;
  }

  std::string setup() const override { return device_->name() + ", " + device_->driver(); }

  void synchronize() override { device_->finish(); }
  void place(const Buffer& values) override {
    device_->usable();
    static_cast<void>(on_device(values));
  }
  bool holds(const Buffer& values) const override {
    return !device_->lost() && values.copy_on(*device_) != nullptr;
  }

  KernelOutcome run(const KernelRun& r) override {
    const Kernel& k = r.kernel;
    // Complex values: products through CLBlast (cgemm/zgemm); the renderer has no complex types.
    if (touches_complex_types(*k.root))
      return k.kind == Kernel::Kind::matmul && library_matmul(r) ? KernelOutcome::ran
                                                                 : KernelOutcome::unsupported;
    if (!can_render(k)) return KernelOutcome::unsupported;
    if (k.kind == Kernel::Kind::matmul && library_matmul(r)) return KernelOutcome::ran;
    const Prepared& p = prepare(r);
    const RenderedKernel& rk = p.rendered;
    cl_uint arg = 0;
    // Inputs first: an in-place output below reuses the device copy an input may only now get.
    std::vector<std::shared_ptr<ClMemory>> inputs;
    inputs.reserve(rk.inputs.size());
    for (int slot : rk.inputs)
      inputs.push_back(on_device(*r.structure.nodes()[static_cast<std::size_t>(slot)]->result));
    std::vector<Node*> outputs{k.root};
    outputs.insert(outputs.end(), k.stored.begin(), k.stored.end());
    std::vector<Output> results;
    results.reserve(outputs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) results.push_back(output(r, i, *outputs[i]));
    for (const Output& o : results) set_buffer(p.kernel, arg++, *o.memory);
    for (const auto& m : inputs) set_buffer(p.kernel, arg++, *m);
    if (rk.seed_of >= 0) {
      const cl_ulong seed = r.structure.nodes()[static_cast<std::size_t>(rk.seed_of)]->attrs.seed;
      check(clSetKernelArg(p.kernel, arg++, sizeof seed, &seed), "clSetKernelArg");
    }
    std::shared_ptr<ClMemory> bad;
    if (rk.index_check) {
      const cl_int zero = 0;
      bad = device_->allocate(sizeof zero);
      device_->upload(*bad, &zero, sizeof zero);
      set_buffer(p.kernel, arg++, *bad);
    }
    device_->run(p.kernel, rk.global_size, rk.local_size);
    if (bad) {
      cl_int flagged = 0;
      device_->download(*bad, &flagged, sizeof flagged);
      if (flagged != 0) report_bad_index(k);
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) publish(*outputs[i], std::move(results[i]));
    return KernelOutcome::ran;
  }

 private:
  // Where an output's values go: the memory the plan lets it reuse, or new memory.
  struct Output {
    std::shared_ptr<ClMemory> memory;
    std::shared_ptr<Buffer> reused;
  };

  Output output(const KernelRun& r, std::size_t i, const Node& n) {
    const std::size_t bytes = device_->bytes_of(n.dtype, n.numel());
    const std::shared_ptr<Buffer>& old = i < r.reuse.size() ? r.reuse[i] : nullptr;
    if (old) {
      auto copy = std::static_pointer_cast<ClMemory>(old->copy_on(*device_));
      if (copy && copy->bytes() >= bytes) return {std::move(copy), old};
    }
    return {device_->allocate(bytes), nullptr};
  }

  static void publish(Node& n, Output o) {
    if (o.reused) {
      o.reused->overwrite_on_device(o.memory);
      n.result = std::move(o.reused);
    } else {
      n.result = std::make_shared<Buffer>(n.dtype, n.numel(), std::move(o.memory));
    }
  }

  // The error the reference gives for the first index (in row-major order) outside its
  // dimension: the indices are read on the host only once the device found one.
  [[noreturn]] static void report_bad_index(const Kernel& k) {
    const Node& root = *k.root;
    const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
    const std::int64_t size =
        root.op == Op::gather ? root.inputs[0]->shape[axis] : root.shape[axis];
    const KernelInput& in = k.inputs[1];
    const Buffer& values = *in.node->result;
    const std::int64_t count = root.inputs[1]->numel();
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t at = i;
      const Scalar* fill = nullptr;
      const bool stored = in.view == nullptr || in.view->locate(i, &at, &fill);
      const std::int64_t v = stored ? values.get<std::int64_t>(at) : fill->as<std::int64_t>();
      if (v < 0 && root.attrs.drop_negative) continue;
      if (!index_in_range(v, size)) index_out_of_range(root, v, size);
    }
    throw Error(ErrorCode::internal_error, std::string(root.info().name) +
                                               ": the device found an index out of range that "
                                               "the host does not");
  }

  // A product CLBlast takes runs there; false leaves it to the generated kernel.
  bool library_matmul(const KernelRun& r) {
    if (!use_clblast_) return false;
    const Kernel& k = r.kernel;
    const Node& root = *k.root;
    if (!clblast_takes(root, device_->traits().fp64)) return false;
    auto la = library_layout(k.inputs[0], root.inputs[0]->shape, root.dtype);
    auto lb = library_layout(k.inputs[1], root.inputs[1]->shape, root.dtype);
    if (!la || !lb) return false;
    const auto a = on_device(*k.inputs[0].node->result);
    const auto b = on_device(*k.inputs[1].node->result);
    Output out = output(r, 0, root);
    std::string why;
    if (!clblast_matmul(*device_, root, {a->handle(), std::move(*la)},
                        {b->handle(), std::move(*lb)}, out.memory->handle(), why)) {
      if (debug_)
        std::cerr << "[kiln] opencl: matmul " << shape_to_string(root.shape) << ": " << why
                  << "; the generated kernel computes it\n";
      return false;
    }
    publish(*k.root, std::move(out));
    return true;
  }

  const Prepared& prepare(const KernelRun& r) {
    if (r.plan.prepared) return static_cast<const Prepared&>(*r.plan.prepared);
    const Kernel& k = r.kernel;
    KernelIr ir;
    if (!k.body.empty()) {
      const DescribeLoad describe = [](const Node&, const Node*) { return LoadFacts{}; };
      lower_kernel(k.body, k.kind == Kernel::Kind::elementwise ? k.stored : std::vector<Node*>{},
                   r.structure, describe, ir);
    }
    auto p = std::make_shared<Prepared>();
    p->rendered = render_kernel(k, ir, r.structure, kOpenClC, device_->traits());
    if (p->rendered.uses_f64 && !device_->traits().fp64)
      throw Error(ErrorCode::wrong_type,
                  std::string(k.root->info().name) + " " + shape_to_string(k.root->shape) +
                      ": f64 values need an OpenCL device with cl_khr_fp64, which " +
                      device_->name() + " does not have");
    p->kernel = device_->kernel(p->rendered.source, p->rendered.entry);
    r.plan.prepared = p;
    return *p;
  }

  // The buffer's copy on this device, uploaded now if it has none. A borrowed buffer (from_blob
  // memory the user may change) is uploaded every time rather than kept.
  std::shared_ptr<ClMemory> on_device(const Buffer& b) {
    if (auto copy = b.copy_on(*device_)) return std::static_pointer_cast<ClMemory>(copy);
    auto m = device_->allocate(device_->bytes_of(b.dtype(), b.numel()));
    device_->upload(*m, b.data(), b.bytes());
    if (!b.borrowed()) b.add_device_copy(m);
    return m;
  }

  static void set_buffer(cl_kernel kernel, cl_uint index, const ClMemory& m) {
    cl_mem handle = m.handle();
    check(clSetKernelArg(kernel, index, sizeof handle, &handle), "clSetKernelArg");
  }

  std::shared_ptr<OpenClDevice> device_;
  // KILN_OPENCL_BLAS=0 computes products with the generated kernel (to compare, or to avoid
  // CLBlast's first-use compilation).
  const bool use_clblast_ = !env_is("KILN_OPENCL_BLAS", "0");
  const bool debug_ = !env_is("KILN_DEBUG", "") && !env_is("KILN_DEBUG", "0");
};

// The device the executor opened, for simulate_device_loss.
std::weak_ptr<OpenClDevice>& opened_device() {
  static std::weak_ptr<OpenClDevice> device;
  return device;
}

}  // namespace

void simulate_device_loss(bool lost) {
  if (const auto device = opened_device().lock()) device->simulate_loss(lost);
}

}  // namespace detail::opencl

std::vector<std::string> opencl_devices() { return detail::opencl::device_list(); }

std::shared_ptr<Executor> opencl_executor() {
  // Opened once; a machine without a device gives the same error on every later call without
  // asking the driver again.
  static const std::variant<std::shared_ptr<Executor>, Error> instance =
      []() -> std::variant<std::shared_ptr<Executor>, Error> {
    try {
      auto device = detail::opencl::OpenClDevice::open();
      detail::opencl::opened_device() = device;
      return detail::make_runtime(
          std::make_unique<detail::opencl::OpenClBackend>(std::move(device)));
    } catch (const Error& e) {
      return e;
    }
  }();
  if (const auto* error = std::get_if<Error>(&instance)) throw *error;
  return std::get<std::shared_ptr<Executor>>(instance);
}

}  // namespace kiln
