#include "exec/cuda/cufft_transform.hpp"

#include <cufft.h>

#include <atomic>
#include <string>
#include <vector>

#include "exec/cuda/loaded_library.hpp"
#include "exec/reduction_geometry.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"

namespace kiln::detail::cuda {

namespace {

struct CufftApi {
  decltype(&::cufftCreate) create;
  decltype(&::cufftDestroy) destroy;
  decltype(&::cufftSetAutoAllocation) set_auto_allocation;
  decltype(&::cufftMakePlanMany64) make_plan;
  decltype(&::cufftSetWorkArea) set_work_area;
  decltype(&::cufftSetStream) set_stream;
  decltype(&::cufftExecC2C) exec_c2c;
  decltype(&::cufftExecZ2Z) exec_z2z;
};

// Loaded once per process; null (with the reason) where cuFFT is not installed.
const CufftApi* cufft_api(std::string& why) {
  static std::string missing;
  static const CufftApi* api = []() -> const CufftApi* {
    void* library = open_library({"libcufft.so.12", "libcufft.so"});
    if (library == nullptr) {
      missing = "cuFFT (libcufft.so.12) is not installed here";
      return nullptr;
    }
    static CufftApi a{};
    const auto resolve = [&](const char* symbol, auto& into) {
      return cuda::resolve(library, symbol, into, missing);
    };
    const bool all = resolve("cufftCreate", a.create) && resolve("cufftDestroy", a.destroy) &&
                     resolve("cufftSetAutoAllocation", a.set_auto_allocation) &&
                     resolve("cufftMakePlanMany64", a.make_plan) &&
                     resolve("cufftSetWorkArea", a.set_work_area) &&
                     resolve("cufftSetStream", a.set_stream) &&
                     resolve("cufftExecC2C", a.exec_c2c) && resolve("cufftExecZ2Z", a.exec_z2z);
    return all ? &a : nullptr;
  }();
  if (api == nullptr) why = missing;
  return api;
}

std::atomic<std::uint64_t> transforms{0};

constexpr std::size_t kMostPlans = 64;

// The inverse's factor: each part times 1 / n, as the reference multiplies (the reciprocal
// rounded to the parts' type, IEEE division).
constexpr const char* kScaleSource =
    "extern \"C\" __global__ void kiln_fft_scale_c64(float2* v, unsigned long long count,\n"
    "                                                 unsigned long long n) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= count) return;\n"
    "  const float s = 1.0f / (float)n;\n"
    "  v[i] = make_float2(v[i].x * s, v[i].y * s);\n"
    "}\n"
    "extern \"C\" __global__ void kiln_fft_scale_c128(double2* v, unsigned long long count,\n"
    "                                                  unsigned long long n) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= count) return;\n"
    "  const double s = 1.0 / (double)n;\n"
    "  v[i] = make_double2(v[i].x * s, v[i].y * s);\n"
    "}\n";

}  // namespace

bool CufftTransform::takes(const Node& root) {
  if (root.op != Op::fft || root.inputs.size() != 1) return false;
  if (root.dtype != DType::c64 && root.dtype != DType::c128) return false;
  if (root.inputs[0]->dtype != root.dtype || root.numel() == 0) return false;
  // cuFFT's lengths are 64-bit; a length of 1 is a copy the generated kernel makes.
  return AxisLines(root).len > 1;
}

CufftTransform::~CufftTransform() {
  std::string why;
  const CufftApi* api = cufft_api(why);
  if (api == nullptr || plans_.empty()) return;
  device_->bind();
  for (const auto& [key, plan] : plans_) api->destroy(plan.handle);
}

bool CufftTransform::run(const Node& root, CUdeviceptr in, CUdeviceptr out, std::string& why) {
  const CufftApi* api = cufft_api(why);
  if (api == nullptr) return false;
  std::lock_guard lock(mutex_);
  device_->usable();
  device_->bind();
  const bool wide = root.dtype == DType::c128;
  const AxisLines lines(root);
  // Element j of line (i, k) lies at (i len + j) inner + k: a call takes the lines of one k
  // (`outer` of them, a block apart) or of one i (`inner` of them side by side), whichever
  // makes fewer calls; along the last axis (inner 1) that is one call.
  const bool by_block = lines.outer <= lines.inner;
  long long n = lines.len, embed = lines.len;
  const long long stride = lines.inner, distance = by_block ? 1 : lines.len * lines.inner;
  const long long batch = by_block ? lines.inner : lines.outer;
  const std::string key = std::string(wide ? "z" : "c") + " " + std::to_string(n) + " " +
                          std::to_string(batch) + " " + std::to_string(stride) + " " +
                          std::to_string(distance);
  const auto failed = [&](cufftResult status, const std::string& what) {
    if (status == CUFFT_ALLOC_FAILED)
      throw Error(ErrorCode::out_of_memory, "CUDA: cuFFT ran out of memory in " + what +
                                                " for fft " + shape_to_string(root.shape));
    why = what + ": cuFFT status " + std::to_string(static_cast<int>(status));
    return false;
  };
  Plan plan;
  if (auto found = plans_.find(key); found != plans_.end()) {
    plan = found->second;
  } else {
    cufftHandle handle = 0;
    if (cufftResult s = api->create(&handle); s != CUFFT_SUCCESS) return failed(s, "cufftCreate");
    // The work area comes from kiln's pool (so that the device's memory is counted and an
    // exhausted device is kiln's out_of_memory), not from cuFFT's own allocation.
    cufftResult s = api->set_auto_allocation(handle, 0);
    if (s == CUFFT_SUCCESS)
      s = api->make_plan(handle, 1, &n, &embed, stride, distance, &embed, stride, distance,
                         wide ? CUFFT_Z2Z : CUFFT_C2C, batch, &plan.work);
    if (s == CUFFT_SUCCESS) s = api->set_stream(handle, device_->stream());
    if (s != CUFFT_SUCCESS) {
      api->destroy(handle);
      return failed(s, "planning");
    }
    plan.handle = handle;
    // Each plan holds device memory of cuFFT's own: past kMostPlans geometries the plans made so
    // far go (a workload of ever new shapes would otherwise hold memory without bound).
    if (plans_.size() >= kMostPlans) {
      for (const auto& [old_key, old_plan] : plans_) api->destroy(old_plan.handle);
      plans_.clear();
      ++epoch_;
    }
    plans_.emplace(key, plan);
  }
  // From the device's pool: work queued later on the same stream may reuse it only after this.
  const auto work = plan.work > 0 ? device_->allocate(plan.work) : nullptr;
  if (work) {
    if (cufftResult s = api->set_work_area(plan.handle, work->native_handle()); s != CUFFT_SUCCESS)
      return failed(s, "cufftSetWorkArea");
  }
  const int direction = root.attrs.inverse ? CUFFT_INVERSE : CUFFT_FORWARD;
  const std::size_t part = wide ? sizeof(cufftDoubleComplex) : sizeof(cufftComplex);
  const long long calls = by_block ? lines.outer : lines.inner;
  const auto step = static_cast<CUdeviceptr>(by_block ? lines.len * lines.inner : 1) * part;
  for (long long c = 0; c < calls; ++c) {
    const CUdeviceptr from = in + static_cast<CUdeviceptr>(c) * step;
    const CUdeviceptr to = out + static_cast<CUdeviceptr>(c) * step;
    const cufftResult s =
        wide ? api->exec_z2z(plan.handle, reinterpret_cast<cufftDoubleComplex*>(from),
                             reinterpret_cast<cufftDoubleComplex*>(to), direction)
             : api->exec_c2c(plan.handle, reinterpret_cast<cufftComplex*>(from),
                             reinterpret_cast<cufftComplex*>(to), direction);
    // A failure after a first call has written part of the output: the generated kernel then
    // writes all of it again.
    if (s != CUFFT_SUCCESS) return failed(s, "the transform");
  }
  if (root.attrs.inverse) {
    if (!scale_) scale_ = device_->compile(kScaleSource);
    const std::uint64_t count = static_cast<std::uint64_t>(root.numel());
    // The output's device pointer as a 64-bit value: what launch passes for a buffer.
    const device::KernelArgument arguments[] = {
        {nullptr, static_cast<std::uint64_t>(out)}, {nullptr, count},
        {nullptr, static_cast<std::uint64_t>(lines.len)}};
    device_->launch(scale_->entry(wide ? "kiln_fft_scale_c128" : "kiln_fft_scale_c64"),
                    arguments, static_cast<std::size_t>(count), 256);
  }
  transforms.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::uint64_t CufftTransform::computed() { return transforms.load(std::memory_order_relaxed); }

}  // namespace kiln::detail::cuda
