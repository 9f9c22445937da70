#include "exec/device/generated_backend.hpp"

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "exec/device/recorded_schedule.hpp"
#include "exec/kernel_ir.hpp"
#include "exec/semantics/nan_rules.hpp"
#include "exec/semantics/indexing.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"

namespace kiln::detail::device {

namespace {

// The error the reference gives for the first index (in row-major order) outside its
// dimension: the indices are read on the host only once the device found one.
[[noreturn]] void report_bad_index(const Kernel& k) {
  const Node& root = *k.root;
  const auto axis = static_cast<std::size_t>(root.attrs.axes[0]);
  const std::int64_t size = root.op == Op::gather ? root.inputs[0]->shape[axis] : root.shape[axis];
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

// Why the renderer has no form for a kernel (can_render's cases).
std::string render_refusal(const Kernel& k) {
  for (const Node* n : k.body)
    if (n->info().kind == OpKind::custom) return "a C++ callable runs on the host";
  const Node& root = *k.root;
  const std::string what = std::string(kind_name(k.kind)) + " kernel of " +
                           std::string(root.info().name) + " " + dtype_name(root.dtype);
  return "the renderer has no " + what;
}

}  // namespace

struct GeneratedBackend::Prepared final : PreparedKernel {
  RenderedKernel rendered;
  void* entry = nullptr;
  void* merge = nullptr;  // the second launch of a two-launch reduction
  std::shared_ptr<DeviceBuffer> table;  // rendered.table on the device, uploaded once
};

GeneratedBackend::GeneratedBackend(std::shared_ptr<DeviceApi> device)
    : device_(std::move(device)), programs_(*device_), dialect_(device_->dialect()) {
  dialect_.double_arithmetic = device_->traits().fp64;
  traits_ = device_->traits();
  // KILN_KERNEL_FORMS=gpu renders the kernels a GPU gets on any device (to test them on a CPU's
  // OpenCL), =cpu those of a CPU.
  if (environment_is("KILN_KERNEL_FORMS", "gpu")) traits_.gpu = true;
  if (environment_is("KILN_KERNEL_FORMS", "cpu")) traits_.gpu = false;
  // KILN_NAN_RULE=1 spells the rule out on any device (to test that code where the device follows
  // the rule by itself), =0 never.
  const char* forced = std::getenv("KILN_NAN_RULE");
  if (forced != nullptr && (forced[0] == '0' || forced[0] == '1'))
    dialect_.nan_rule = forced[0] == '1';
  else if (!dialect_.nan_rule)
    dialect_.nan_rule = !follows_nan_rule();
}

GeneratedBackend::~GeneratedBackend() = default;

bool GeneratedBackend::follows_nan_rule() {
  const Dialect& d = device_->dialect();
  const std::string global = d.global.empty() ? "" : std::string(d.global) + " ";
  const std::string source = std::string(d.preamble) + std::string(d.kernel) +
                             " kiln_nan_probe(" + global + "const float* in, " + global +
                             "float* out) {\n"
                             "  out[0] = in[0] + in[1];\n  out[1] = in[2] / in[2];\n"
                             "  out[2] = in[1] * in[3];\n}\n";
  const std::uint32_t payload = 0x7fc00123u, negative = 0xffc00456u, one = 0x3f800000u;
  const std::uint32_t in[4] = {payload, one, 0, negative};
  std::uint32_t out[3] = {0, 0, 0};
  const auto input = device_->allocate(sizeof in), output = device_->allocate(sizeof out);
  device_->upload(*input, in, sizeof in);
  const KernelArgument arguments[] = {{input.get()}, {output.get()}};
  device_->launch(programs_.kernel(source, "kiln_nan_probe"), arguments, 1, 1);
  device_->download(*output, out, sizeof out);
  return out[0] == payload && out[1] == host_made_nan_f32() && out[2] == negative;
}

bool GeneratedBackend::supports(const Kernel& k, std::string& reason) const {
  if (can_render(k)) return true;
  return library_supports(k, reason) || (reason = render_refusal(k), false);
}

KernelOutcome GeneratedBackend::run(const KernelRun& r) {
  const Kernel& k = r.kernel;
  if (recording_ && !device_->records_libraries()) {
    // The library's commands would run at once, before the recorded kernels they follow.
    std::string reason;
    if (library_supports(k, reason))
      throw Error(ErrorCode::internal_error, "the device does not record its library's commands");
  }
  if (library_kernel(r)) return KernelOutcome::ran;
  if (!can_render(k)) return KernelOutcome::unsupported;
  const Prepared& p = prepare(r);
  const RenderedKernel& rk = p.rendered;
  // Inputs first: an in-place output below reuses the device copy an input may only now get.
  std::vector<std::shared_ptr<DeviceBuffer>> inputs;
  inputs.reserve(rk.inputs.size());
  for (int slot : rk.inputs)
    inputs.push_back(on_device(*r.structure.nodes()[static_cast<std::size_t>(slot)]->result));
  std::vector<Node*> outputs{k.root};
  outputs.insert(outputs.end(), k.stored.begin(), k.stored.end());
  std::vector<Output> results;
  results.reserve(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) results.push_back(output(r, i, *outputs[i]));
  std::vector<KernelArgument> arguments;
  arguments.reserve(results.size() + inputs.size() + 4);
  for (const Output& o : results) arguments.push_back({o.memory.get()});
  for (const auto& m : inputs) arguments.push_back({m.get()});
  const std::size_t seed_argument = arguments.size();
  if (rk.seed_of >= 0)
    arguments.push_back(
        {nullptr, r.structure.nodes()[static_cast<std::size_t>(rk.seed_of)]->attrs.seed});
  std::shared_ptr<DeviceBuffer> bad;
  if (rk.index_check && recording_) {
    // One flag for the recording's kernels, set to zero by the recording before the first, read
    // after each run of it (recorded_schedule.cpp).
    Recorded& recorded = *recording_->recorded;
    if (recorded.flag == nullptr) {
      recording_->flag = device_->allocate(sizeof(std::int32_t));
      recorded.flag = recording_->flag.get();
      device_->copy(*zero_, *recorded.flag, sizeof(std::int32_t));
    }
    arguments.push_back({recorded.flag});
  } else if (rk.index_check) {
    const std::int32_t zero = 0;
    bad = device_->allocate(sizeof zero);
    device_->upload(*bad, &zero, sizeof zero);
    arguments.push_back({bad.get()});
  }
  if (p.table) arguments.push_back({p.table.get()});
  std::shared_ptr<DeviceBuffer> scratch;
  if (rk.scratch_bytes > 0) {
    scratch = device_->allocate(rk.scratch_bytes);
    arguments.push_back({scratch.get()});
  }
  device_->launch(p.entry, arguments, rk.global_size, rk.local_size);
  if (rk.seed_of >= 0 && recording_) {
    // The seed is a value of each evaluation, not of the structure: each replay sets its own.
    recording_->recorded->seeds.push_back(
        {device_->recorded_value(seed_argument), rk.seed_of});
  }
  if (scratch && !rk.merge_entry.empty()) {
    // The queue is in order: the merge reads the partials the first launch wrote, and the
    // scratch buffer goes back to the pool only for work queued after both.
    std::vector<KernelArgument> merge;
    for (const Output& o : results) merge.push_back({o.memory.get()});
    merge.push_back({scratch.get()});
    device_->launch(p.merge, merge, rk.merge_global_size, rk.merge_local_size);
  }
  if (bad) {
    std::int32_t flagged = 0;
    device_->download(*bad, &flagged, sizeof flagged);
    if (flagged != 0) report_bad_index(k);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) publish(*outputs[i], std::move(results[i]));
  return KernelOutcome::ran;
}

bool GeneratedBackend::library_product(const KernelRun& r, const ProductCall& call) {
  const Kernel& k = r.kernel;
  const Node& root = *k.root;
  auto la = library_layout(k.inputs[0], root.inputs[0]->shape, root.dtype);
  auto lb = library_layout(k.inputs[1], root.inputs[1]->shape, root.dtype);
  if (!la || !lb) return false;
  const auto a = on_device(*k.inputs[0].node->result);
  const auto b = on_device(*k.inputs[1].node->result);
  Output out = output(r, 0, root);
  std::string why;
  if (!call(*a, std::move(*la), *b, std::move(*lb), *out.memory, why)) {
    if (debug_)
      std::cerr << "[kiln] " << name() << ": matmul " << shape_to_string(root.shape) << ": " << why
                << "; the generated kernel computes it\n";
    return false;
  }
  publish(*k.root, std::move(out));
  return true;
}

bool GeneratedBackend::environment_is(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return std::string_view(v ? v : "") == value;
}

void GeneratedBackend::place(const Buffer& values) {
  device_->usable();
  static_cast<void>(on_device(values));
}

bool GeneratedBackend::holds(const Buffer& values) const {
  return !device_->lost() && values.copy_on(*device_) != nullptr;
}

GeneratedBackend::Output GeneratedBackend::output(const KernelRun& r, std::size_t i,
                                                  const Node& n) {
  const std::size_t bytes = device_->bytes_of(n.dtype, n.numel());
  const std::shared_ptr<Buffer>& old = i < r.reuse.size() ? r.reuse[i] : nullptr;
  if (old) {
    auto copy = std::static_pointer_cast<DeviceBuffer>(old->copy_on(*device_));
    if (copy && copy->bytes() >= bytes) return {std::move(copy), old};
  }
  return {device_->allocate(bytes), nullptr};
}

void GeneratedBackend::publish(Node& n, Output o) {
  if (recording_) {
    const int slot = recording_->structure->slot(&n);
    if (slot >= 0) recording_->recorded->results[static_cast<std::size_t>(slot)] = o.memory.get();
  }
  if (o.reused) {
    o.reused->overwrite_on_device(o.memory);
    n.result = std::move(o.reused);
  } else {
    n.result = std::make_shared<Buffer>(n.dtype, n.numel(), std::move(o.memory));
  }
}

std::shared_ptr<DeviceBuffer> GeneratedBackend::on_device(const Buffer& b) {
  if (recording_) {
    // A recorded kernel reads the recording's copy of an input.
    if (auto found = recording_->copies.find(&b); found != recording_->copies.end())
      return found->second;
  }
  // A borrowed buffer (from_blob memory the user may change) is uploaded every time rather than
  // kept.
  if (auto copy = b.copy_on(*device_)) return std::static_pointer_cast<DeviceBuffer>(copy);
  auto m = device_->allocate(device_->bytes_of(b.dtype(), b.numel()));
  device_->upload(*m, b.data(), b.bytes());
  if (!b.borrowed()) b.add_device_copy(m);
  return m;
}

const GeneratedBackend::Prepared& GeneratedBackend::prepare(const KernelRun& r) {
  if (r.plan.prepared) return static_cast<const Prepared&>(*r.plan.prepared);
  const Kernel& k = r.kernel;
  KernelIr ir;
  if (!k.body.empty()) {
    const DescribeLoad describe = [](const Node&, const Node*) { return LoadFacts{}; };
    lower_kernel(k.body, k.kind == Kernel::Kind::elementwise ? k.stored : std::vector<Node*>{},
                 r.structure, describe, ir);
  }
  auto p = std::make_shared<Prepared>();
  p->rendered = render_kernel(k, ir, r.structure, dialect_, traits_);
  if (p->rendered.uses_f64 && !traits_.fp64)
    throw Error(ErrorCode::wrong_type,
                std::string(k.root->info().name) + " " + shape_to_string(k.root->shape) +
                    ": f64 values need a device with double precision, which " +
                    device_->name() + " does not have");
  p->entry = programs_.kernel(p->rendered.source, p->rendered.entry);
  if (!p->rendered.merge_entry.empty())
    p->merge = programs_.kernel(p->rendered.source, p->rendered.merge_entry);
  if (!p->rendered.table.empty()) {
    p->table = device_->allocate(p->rendered.table.size());
    device_->upload(*p->table, p->rendered.table.data(), p->rendered.table.size());
    p->rendered.table = {};  // the device copy is the one used
  }
  r.plan.prepared = p;
  return *p;
}

}  // namespace kiln::detail::device
