#include "exec/cuda/cuda_device.hpp"

#include "exec/cuda/loaded_library.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "kiln/error.hpp"

namespace kiln::detail::cuda {

// The entry points kiln uses, resolved from the loaded libraries (the _v2 names are what cuda.h's
// macros name).
struct DriverApi {
  decltype(&::cuInit) init;
  decltype(&::cuDriverGetVersion) driver_version;
  decltype(&::cuDeviceGetCount) device_count;
  decltype(&::cuDeviceGet) device_get;
  decltype(&::cuDeviceGetName) device_name;
  decltype(&::cuDeviceGetAttribute) device_attribute;
  decltype(&::cuDeviceTotalMem) total_memory;
  decltype(&::cuDevicePrimaryCtxRetain) retain_context;
  decltype(&::cuDevicePrimaryCtxRelease) release_context;
  decltype(&::cuCtxSetCurrent) set_current;
  decltype(&::cuStreamCreate) stream_create;
  decltype(&::cuStreamDestroy) stream_destroy;
  decltype(&::cuStreamSynchronize) stream_synchronize;
  decltype(&::cuMemAlloc) alloc;
  decltype(&::cuMemFree) free;
  decltype(&::cuMemcpyHtoDAsync) upload;
  decltype(&::cuMemHostAlloc) host_alloc;
  decltype(&::cuMemFreeHost) host_free;
  decltype(&::cuEventCreate) event_create;
  decltype(&::cuEventRecord) event_record;
  decltype(&::cuEventSynchronize) event_synchronize;
  decltype(&::cuEventDestroy) event_destroy;
  decltype(&::cuMemcpyDtoHAsync) download;
  decltype(&::cuMemcpyDtoDAsync) copy;
  decltype(&::cuStreamBeginCapture_v2) begin_capture;
  decltype(&::cuStreamEndCapture) end_capture;
  decltype(&::cuGraphInstantiate) graph_instantiate;
  decltype(&::cuGraphLaunch) graph_launch;
  decltype(&::cuGraphExecDestroy) graph_exec_destroy;
  decltype(&::cuGraphDestroy) graph_destroy;
  decltype(&::cuStreamGetCaptureInfo_v3) capture_info;
  decltype(&::cuGraphExecKernelNodeSetParams_v2) set_kernel_parameters;
  bool graphs;  // whether the entry points above it are there
  decltype(&::cuModuleLoadData) module_load;
  decltype(&::cuModuleUnload) module_unload;
  decltype(&::cuModuleGetFunction) module_function;
  decltype(&::cuLaunchKernel) launch;
  decltype(&::cuGetErrorName) error_name;
  decltype(&::nvrtcCreateProgram) nvrtc_create;
  decltype(&::nvrtcCompileProgram) nvrtc_compile;
  decltype(&::nvrtcGetProgramLogSize) nvrtc_log_size;
  decltype(&::nvrtcGetProgramLog) nvrtc_log;
  decltype(&::nvrtcGetCUBINSize) nvrtc_cubin_size;
  decltype(&::nvrtcGetCUBIN) nvrtc_cubin;
  decltype(&::nvrtcDestroyProgram) nvrtc_destroy;
  decltype(&::nvrtcVersion) nvrtc_version;
};

namespace {

[[noreturn]] void missing(const std::string& what) {
  throw Error(ErrorCode::device_error, "CUDA: " + what);
}

// Loaded once per process; an error (no driver) is kept and given again.
const DriverApi& driver_api() {
  static const DriverApi api = [] {
    void* driver = open_library({"libcuda.so.1"});
    if (driver == nullptr)
      missing("NVIDIA's driver (libcuda.so.1) is not installed here, so no CUDA device was found");
    void* nvrtc = open_library({"libnvrtc.so.13", "libnvrtc.so"});
    if (nvrtc == nullptr)
      missing("NVRTC (libnvrtc.so.13, from the CUDA toolkit) is not installed here; kiln compiles "
              "its CUDA kernels with it");
    DriverApi a{};
    std::string why;
    const auto need = [&](void* library, const char* symbol, auto& into) {
      if (!cuda::resolve(library, symbol, into, why)) missing(why);
    };
    need(driver, "cuInit", a.init);
    need(driver, "cuDriverGetVersion", a.driver_version);
    need(driver, "cuDeviceGetCount", a.device_count);
    need(driver, "cuDeviceGet", a.device_get);
    need(driver, "cuDeviceGetName", a.device_name);
    need(driver, "cuDeviceGetAttribute", a.device_attribute);
    need(driver, "cuDeviceTotalMem_v2", a.total_memory);
    need(driver, "cuDevicePrimaryCtxRetain", a.retain_context);
    need(driver, "cuDevicePrimaryCtxRelease_v2", a.release_context);
    need(driver, "cuCtxSetCurrent", a.set_current);
    need(driver, "cuStreamCreate", a.stream_create);
    need(driver, "cuStreamDestroy_v2", a.stream_destroy);
    need(driver, "cuStreamSynchronize", a.stream_synchronize);
    need(driver, "cuMemAlloc_v2", a.alloc);
    need(driver, "cuMemFree_v2", a.free);
    need(driver, "cuMemcpyHtoDAsync_v2", a.upload);
    need(driver, "cuMemHostAlloc", a.host_alloc);
    need(driver, "cuMemFreeHost", a.host_free);
    need(driver, "cuEventCreate", a.event_create);
    need(driver, "cuEventRecord", a.event_record);
    need(driver, "cuEventSynchronize", a.event_synchronize);
    need(driver, "cuEventDestroy_v2", a.event_destroy);
    need(driver, "cuMemcpyDtoHAsync_v2", a.download);
    need(driver, "cuMemcpyDtoDAsync_v2", a.copy);
    // CUDA graphs (recorded schedules): a driver without one of these calls (before 12.3)
    // launches kernel by kernel.
    std::string absent;
    a.graphs = cuda::resolve(driver, "cuStreamBeginCapture_v2", a.begin_capture, absent) &&
               cuda::resolve(driver, "cuStreamEndCapture", a.end_capture, absent) &&
               cuda::resolve(driver, "cuGraphInstantiateWithFlags", a.graph_instantiate, absent) &&
               cuda::resolve(driver, "cuGraphLaunch", a.graph_launch, absent) &&
               cuda::resolve(driver, "cuGraphExecDestroy", a.graph_exec_destroy, absent) &&
               cuda::resolve(driver, "cuGraphDestroy", a.graph_destroy, absent) &&
               cuda::resolve(driver, "cuStreamGetCaptureInfo_v3", a.capture_info, absent) &&
               cuda::resolve(driver, "cuGraphExecKernelNodeSetParams_v2",
                             a.set_kernel_parameters, absent);
    need(driver, "cuModuleLoadData", a.module_load);
    need(driver, "cuModuleUnload", a.module_unload);
    need(driver, "cuModuleGetFunction", a.module_function);
    need(driver, "cuLaunchKernel", a.launch);
    need(driver, "cuGetErrorName", a.error_name);
    need(nvrtc, "nvrtcCreateProgram", a.nvrtc_create);
    need(nvrtc, "nvrtcCompileProgram", a.nvrtc_compile);
    need(nvrtc, "nvrtcGetProgramLogSize", a.nvrtc_log_size);
    need(nvrtc, "nvrtcGetProgramLog", a.nvrtc_log);
    need(nvrtc, "nvrtcGetCUBINSize", a.nvrtc_cubin_size);
    need(nvrtc, "nvrtcGetCUBIN", a.nvrtc_cubin);
    need(nvrtc, "nvrtcDestroyProgram", a.nvrtc_destroy);
    need(nvrtc, "nvrtcVersion", a.nvrtc_version);
    return a;
  }();
  return api;
}

constexpr std::size_t kMostPooledBytes = std::size_t{1} << 30;

// A module and its functions, unloaded with it.
class CudaProgram final : public device::DeviceProgram {
 public:
  CudaProgram(const DriverApi& api, CUmodule module, std::vector<unsigned char> cubin)
      : api_(api), module_(module), cubin_(std::move(cubin)) {}
  ~CudaProgram() override { api_.module_unload(module_); }
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  void* entry(const std::string& name) override {
    auto found = functions_.find(name);
    if (found != functions_.end()) return found->second;
    CUfunction f = nullptr;
    if (api_.module_function(&f, module_, name.c_str()) != CUDA_SUCCESS)
      throw Error(ErrorCode::internal_error, "CUDA: kiln's kernel has no entry point " + name);
    return functions_.emplace(name, f).first->second;
  }
  std::vector<unsigned char> binary() const override { return cubin_; }

 private:
  const DriverApi& api_;
  CUmodule module_;
  std::vector<unsigned char> cubin_;
  std::map<std::string, CUfunction> functions_;
};

}  // namespace

// A captured graph, instantiated; destroyed with the buffers it was captured with.
class CudaGraph final : public device::RecordedWork {
 public:
  CudaGraph(std::shared_ptr<CudaDevice> device, CUgraph graph, CUgraphExec exec)
      : device_(std::move(device)), graph_(graph), exec_(exec) {}
  ~CudaGraph() override {
    device_->bind();
    device_->api_->graph_exec_destroy(exec_);
    device_->api_->graph_destroy(graph_);
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  void run() override {
    device_->usable();
    device_->checked(device_->api_->graph_launch(exec_, device_->stream_), "cuGraphLaunch");
  }

  void set_value(std::size_t value, std::uint64_t to) override {
    CudaDevice::RecordedValue& v = values.at(value);
    CudaDevice::KernelLaunch& launch = v.launch;
    launch.values.at(v.argument) = to;
    std::vector<void*> parameters(launch.values.size());
    for (std::size_t i = 0; i < parameters.size(); ++i) parameters[i] = &launch.values[i];
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = launch.function;
    p.gridDimX = launch.grid;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = launch.block;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = parameters.data();
    device_->bind();
    device_->checked(device_->api_->set_kernel_parameters(exec_, v.node, &p),
                     "cuGraphExecKernelNodeSetParams");
  }

  std::vector<CudaDevice::RecordedValue> values;

 private:
  std::shared_ptr<CudaDevice> device_;
  CUgraph graph_;
  CUgraphExec exec_;
};

std::shared_ptr<CudaDevice> CudaDevice::open() {
  const DriverApi& api = driver_api();
  if (api.init(0) != CUDA_SUCCESS) missing("the driver is installed but cuInit failed");
  int count = 0;
  if (api.device_count(&count) != CUDA_SUCCESS || count == 0) missing("no CUDA device was found");
  int index = 0;
  if (const char* want = std::getenv("KILN_CUDA_DEVICE"); want != nullptr && *want != '\0') {
    index = std::atoi(want);
    if (index < 0 || index >= count)
      missing("KILN_CUDA_DEVICE=" + std::string(want) + " names no device (" +
              std::to_string(count) + " present)");
  }
  std::shared_ptr<CudaDevice> d(new CudaDevice());
  d->api_ = &api;
  d->checked(api.device_get(&d->device_, index), "cuDeviceGet");
  char name[256] = {};
  d->checked(api.device_name(name, sizeof name, d->device_), "cuDeviceGetName");
  d->name_ = name;
  int major = 0, minor = 0, version = 0, nvrtc_major = 0, nvrtc_minor = 0, threads = 0;
  api.device_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->device_);
  api.device_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->device_);
  api.device_attribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, d->device_);
  int shared = 0;  // static shared memory per block (48 KiB; more only by a launch's opt-in)
  api.device_attribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, d->device_);
  api.driver_version(&version);
  api.nvrtc_version(&nvrtc_major, &nvrtc_minor);
  d->architecture_ = "sm_" + std::to_string(major * 10 + minor);
  // The cubin depends on the architecture and NVRTC's version: both are part of the cache key.
  d->driver_ = "driver " + std::to_string(version) + ", NVRTC " + std::to_string(nvrtc_major) +
               "." + std::to_string(nvrtc_minor) + ", " + d->architecture_;
  d->options_ = std::string(kCudaC.compile_options) + " --gpu-architecture=" + d->architecture_;
  d->traits_.fp64 = true;
  d->traits_.gpu = true;
  d->traits_.max_group = static_cast<std::size_t>(std::max(threads, 1));
  if (shared > 0)
    d->traits_.local_bytes =
        std::min(static_cast<std::size_t>(shared), DeviceTraits::kMostLocalBytes);
  api.total_memory(&d->total_memory_, d->device_);
  d->checked(api.retain_context(&d->context_, d->device_), "cuDevicePrimaryCtxRetain");
  d->checked(api.set_current(d->context_), "cuCtxSetCurrent");
  d->checked(api.stream_create(&d->stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  d->api_has_graphs_ = api.graphs;
  if (const char* staging = std::getenv("KILN_CUDA_STAGING"); staging != nullptr)
    d->use_staging_ = std::string_view(staging) != "0";
  return d;
}

CudaDevice::~CudaDevice() {
  if (api_ == nullptr) return;
  bind();  // the calls below act on the current context
  if (stream_ != nullptr) api_->stream_synchronize(stream_);
  free_staging();
  release_pool();
  if (stream_ != nullptr) api_->stream_destroy(stream_);
  if (context_ != nullptr) api_->release_context(device_);
}

void CudaDevice::bind() const {
  // The driver's current context is per thread; kiln may be called from any thread.
  thread_local CUcontext bound = nullptr;
  if (bound != context_ && context_ != nullptr) {
    api_->set_current(context_);
    bound = context_;
  }
}

void CudaDevice::usable() const {
  bind();
  if (lost())
    throw Error(ErrorCode::device_error,
                "CUDA: the device " + name_ +
                    " is lost: values that lived only on it are gone; host copies stay readable "
                    "and other executors still work");
}

void CudaDevice::checked(CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  const char* what = nullptr;
  if (api_ != nullptr) api_->error_name(status, &what);
  const std::string message = std::string("CUDA: ") + call + " failed: " +
                              (what != nullptr ? what : "an error") + " (" +
                              std::to_string(static_cast<int>(status)) + ")";
  if (status == CUDA_ERROR_OUT_OF_MEMORY) throw Error(ErrorCode::out_of_memory, message);
  if (status == CUDA_ERROR_DEVICE_UNAVAILABLE || status == CUDA_ERROR_ILLEGAL_ADDRESS ||
      status == CUDA_ERROR_LAUNCH_FAILED)
    lost_.store(true, std::memory_order_release);
  throw Error(ErrorCode::device_error, message);
}

CudaMemory::~CudaMemory() { device_->give_back(ptr_, bytes_); }
const Device& CudaMemory::device() const { return *device_; }
void CudaMemory::download(void* to, std::size_t bytes) const { device_->download(*this, to, bytes); }

std::size_t CudaDevice::bytes_of(DType dtype, std::int64_t numel) const {
  const std::uint64_t most = total_memory_ / size_of(dtype);
  if (numel < 0 || static_cast<std::uint64_t>(numel) > most)
    throw Error(ErrorCode::out_of_memory,
                "CUDA: " + std::to_string(numel) + " " + dtype_name(dtype) +
                    " values exceed the memory of " + name_ + " (" +
                    std::to_string(total_memory_) + " bytes, " +
                    std::to_string(allocated_bytes()) + " of them held by kiln's buffers)");
  return static_cast<std::size_t>(numel) * size_of(dtype);
}

std::size_t CudaDevice::pooled_bytes() const {
  std::lock_guard lock(pool_mutex_);
  return pooled_bytes_;
}

void CudaDevice::count_allocation(std::size_t bytes) {
  const std::size_t now = allocated_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::size_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

std::shared_ptr<device::DeviceBuffer> CudaDevice::allocate(std::size_t bytes) {
  usable();
  const auto gate = gate_.pass();
  if (gate_.here()) {
    const std::size_t size = std::max<std::size_t>(256, (bytes + 255) / 256 * 256);
    if (auto again = recorded_buffers_.reuse(size)) return again;
    // cuMemAlloc is allowed while capturing (relaxed mode).
    return recorded_buffers_.add(unrecorded_allocation(bytes, /*may_release=*/false));
  }
  return unrecorded_allocation(bytes);
}

std::shared_ptr<device::DeviceBuffer> CudaDevice::unrecorded_allocation(std::size_t bytes,
                                                                        bool may_release) {
  const std::size_t size = std::max<std::size_t>(256, (bytes + 255) / 256 * 256);
  {
    std::lock_guard lock(pool_mutex_);
    auto it = pool_.find(size);
    if (it != pool_.end()) {
      const CUdeviceptr ptr = it->second;
      pool_.erase(it);
      pooled_bytes_ -= size;
      count_allocation(size);
      return std::make_shared<CudaMemory>(shared_from_this(), ptr, size);
    }
  }
  CUdeviceptr ptr = 0;
  CUresult status = api_->alloc(&ptr, size);
  if (status == CUDA_ERROR_OUT_OF_MEMORY && may_release) {
    release_pool();  // what the pool keeps may be what is missing
    status = api_->alloc(&ptr, size);
  }
  if (status == CUDA_ERROR_OUT_OF_MEMORY)
    throw Error(ErrorCode::out_of_memory,
                "CUDA: " + name_ + " has no " + std::to_string(size) + " bytes free for a buffer (" +
                    std::to_string(allocated_bytes()) + " bytes held by kiln's buffers)");
  checked(status, ("cuMemAlloc of " + std::to_string(size) + " bytes on " + name_).c_str());
  count_allocation(size);
  return std::make_shared<CudaMemory>(shared_from_this(), ptr, size);
}

void CudaDevice::give_back(CUdeviceptr ptr, std::size_t bytes) {
  bind();
  allocated_.fetch_sub(bytes, std::memory_order_relaxed);
  {
    std::lock_guard lock(pool_mutex_);
    // While capturing, cuMemFree (which waits for the device) would break the capture: the pool
    // keeps the buffer past its bound, until an allocation takes it or running out of memory
    // empties the pool.
    if (pooled_bytes_ + bytes <= kMostPooledBytes || gate_.active()) {
      pool_.emplace(bytes, ptr);
      pooled_bytes_ += bytes;
      return;
    }
  }
  api_->free(ptr);
}

void CudaDevice::release_pool() {
  bind();
  std::lock_guard lock(pool_mutex_);
  if (stream_ != nullptr) api_->stream_synchronize(stream_);  // no kernel still uses them
  for (auto& [size, ptr] : pool_) api_->free(ptr);
  pool_.clear();
  pooled_bytes_ = 0;
}

void CudaDevice::upload(const device::DeviceBuffer& to, const void* from, std::size_t bytes) {
  usable();
  const auto gate = gate_.pass();
  // A captured copy would read `from` again at each launch of the graph.
  not_while_recording("an upload");
  if (bytes == 0) return;
  const CUdeviceptr target = static_cast<const CudaMemory&>(to).handle();
  const auto* source = static_cast<const unsigned char*>(from);
  std::lock_guard lock(staging_mutex_);
  for (std::size_t done = 0; done < bytes;) {
    if (use_staging_ && staging_used_ == kStagingBytes) {
      // The current buffer is full: the next one, once every copy that read it is done (an
      // event never recorded counts as done).
      current_staging_ = (current_staging_ + 1) % staging_.size();
      staging_used_ = 0;
      if (staging_[current_staging_].read != nullptr)
        checked(api_->event_synchronize(staging_[current_staging_].read), "cuEventSynchronize");
    }
    Staging& s = staging_[current_staging_];
    if (use_staging_ && s.host == nullptr) {
      void* host = nullptr;
      CUevent read = nullptr;
      if (api_->host_alloc(&host, kStagingBytes, 0) != CUDA_SUCCESS) {
        use_staging_ = false;  // no pinned memory to be had: the driver's staging
      } else if (api_->event_create(&read, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC) !=
                 CUDA_SUCCESS) {
        api_->host_free(host);
        use_staging_ = false;
      } else {
        s = {host, read};
      }
    }
    if (!use_staging_) {
      // From pageable host memory the driver copies `from` to its own staging memory before
      // returning, so the caller may reuse it at once; the transfer stays ordered on the stream.
      checked(api_->upload(target + done, source + done, bytes - done, stream_),
              "cuMemcpyHtoDAsync");
      return;
    }
    const std::size_t piece = std::min(kStagingBytes - staging_used_, bytes - done);
    unsigned char* at = static_cast<unsigned char*>(s.host) + staging_used_;
    std::memcpy(at, source + done, piece);
    checked(api_->upload(target + done, at, piece, stream_), "cuMemcpyHtoDAsync");
    // Each copy from the buffer re-records its event: the buffer is free once the last has run.
    // Were the event left behind the copy, the copy must be over before the buffer is reused.
    if (const CUresult recorded = api_->event_record(s.read, stream_); recorded != CUDA_SUCCESS) {
      api_->stream_synchronize(stream_);
      checked(recorded, "cuEventRecord");
    }
    staging_used_ += (piece + 255) / 256 * 256;  // the next copy from an aligned address
    staging_used_ = std::min(staging_used_, kStagingBytes);
    done += piece;
  }
}

void CudaDevice::free_staging() {
  bind();
  std::lock_guard lock(staging_mutex_);
  for (Staging& s : staging_) {
    if (s.read != nullptr) api_->event_destroy(s.read);
    if (s.host != nullptr) api_->host_free(s.host);
    s = {};
  }
}

void CudaDevice::download(const device::DeviceBuffer& from, void* to, std::size_t bytes) {
  usable();
  const auto gate = gate_.pass();
  not_while_recording("a download");
  if (bytes == 0) return;
  checked(api_->download(to, static_cast<const CudaMemory&>(from).handle(), bytes, stream_),
          "cuMemcpyDtoHAsync");
  checked(api_->stream_synchronize(stream_), "cuStreamSynchronize");
}

void CudaDevice::finish() {
  usable();
  const auto gate = gate_.pass();
  not_while_recording("a wait for the stream");
  checked(api_->stream_synchronize(stream_), "cuStreamSynchronize");
}

void CudaDevice::copy(const device::DeviceBuffer& from, const device::DeviceBuffer& to,
                      std::size_t bytes) {
  usable();
  if (bytes == 0) return;
  checked(api_->copy(static_cast<const CudaMemory&>(to).handle(),
                     static_cast<const CudaMemory&>(from).handle(), bytes, stream_),
          "cuMemcpyDtoDAsync");
}

void CudaDevice::not_while_recording(const char* what) {
  if (gate_.here())
    throw Error(ErrorCode::internal_error,
                std::string("CUDA: ") + what + " while capturing a schedule's graph");
}

void CudaDevice::begin_recording() {
  usable();
  if (!api_has_graphs_)
    throw Error(ErrorCode::internal_error, "CUDA: the driver has no graph calls to record with");
  if (!gate_.begin())
    throw Error(ErrorCode::internal_error, "CUDA: a capture began inside another");
  // Relaxed: buffers are allocated while capturing (and kept with the graph).
  const CUresult began = api_->begin_capture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED);
  if (began != CUDA_SUCCESS) {
    gate_.end();
    checked(began, "cuStreamBeginCapture");
  }
}

std::unique_ptr<device::RecordedWork> CudaDevice::end_recording() {
  if (!gate_.here()) return nullptr;
  bind();
  std::vector<std::shared_ptr<device::DeviceBuffer>> buffers = recorded_buffers_.take();
  std::vector<RecordedValue> values;
  values.swap(recorded_values_);
  last_launch_ = {};
  CUgraph graph = nullptr;
  // Fails where something broke the capture (a call the stream cannot capture); the stream
  // captures no more either way.
  const CUresult ended = api_->end_capture(stream_, &graph);
  gate_.end();
  if (ended != CUDA_SUCCESS || graph == nullptr) {
    if (graph != nullptr) api_->graph_destroy(graph);
    return nullptr;
  }
  CUgraphExec exec = nullptr;
  if (api_->graph_instantiate(&exec, graph, 0) != CUDA_SUCCESS) {
    api_->graph_destroy(graph);
    return nullptr;
  }
  auto work = std::make_unique<CudaGraph>(shared_from_this(), graph, exec);
  work->buffers = std::move(buffers);
  work->values = std::move(values);
  return work;
}

std::size_t CudaDevice::recorded_value(std::size_t argument) {
  if (!gate_.here()) throw Error(ErrorCode::internal_error, "CUDA: no launch is being captured");
  // The captured launch is what the stream's work now depends on.
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* last = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  std::size_t count = 0;
  checked(api_->capture_info(stream_, &status, &id, &graph, &last, &edges, &count),
          "cuStreamGetCaptureInfo");
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || count != 1 || last == nullptr ||
      last_launch_.function == nullptr || argument >= last_launch_.values.size())
    throw Error(ErrorCode::internal_error, "CUDA: the captured launch cannot be named");
  recorded_values_.push_back({last[0], last_launch_, argument});
  return recorded_values_.size() - 1;
}

std::unique_ptr<device::DeviceProgram> CudaDevice::load(const std::vector<unsigned char>& binary) {
  usable();
  CUmodule module = nullptr;
  if (api_->module_load(&module, binary.data()) != CUDA_SUCCESS) return nullptr;
  return std::make_unique<CudaProgram>(*api_, module, binary);
}

std::unique_ptr<device::DeviceProgram> CudaDevice::compile(const std::string& source) {
  usable();
  nvrtcProgram program = nullptr;
  if (api_->nvrtc_create(&program, source.c_str(), "kiln.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    throw Error(ErrorCode::out_of_memory, "CUDA: NVRTC could not create a program");
  std::vector<std::string> words;
  for (std::size_t at = 0; at < options_.size();) {
    const std::size_t end = std::min(options_.find(' ', at), options_.size());
    if (end > at) words.push_back(options_.substr(at, end - at));
    at = end + 1;
  }
  std::vector<const char*> options;
  for (const std::string& w : words) options.push_back(w.c_str());
  const nvrtcResult status =
      api_->nvrtc_compile(program, static_cast<int>(options.size()), options.data());
  if (status != NVRTC_SUCCESS) {
    std::size_t size = 0;
    api_->nvrtc_log_size(program, &size);
    std::string log(size, '\0');
    api_->nvrtc_log(program, log.data());
    api_->nvrtc_destroy(&program);
    throw Error(ErrorCode::internal_error, "CUDA: kiln's kernel did not compile for " + name_ +
                                               ": " + log + "\n--- source ---\n" + source);
  }
  std::size_t size = 0;
  api_->nvrtc_cubin_size(program, &size);
  std::vector<unsigned char> cubin(size);
  api_->nvrtc_cubin(program, reinterpret_cast<char*>(cubin.data()));
  api_->nvrtc_destroy(&program);
  CUmodule module = nullptr;
  checked(api_->module_load(&module, cubin.data()), "cuModuleLoadData");
  return std::make_unique<CudaProgram>(*api_, module, std::move(cubin));
}

void CudaDevice::launch(void* entry, std::span<const device::KernelArgument> arguments,
                        std::size_t global, std::size_t local) {
  usable();
  // Each parameter's value where cuLaunchKernel reads it from: device pointers and u64 values.
  std::vector<std::uint64_t> values(arguments.size());
  std::vector<void*> parameters(arguments.size());
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    values[i] = arguments[i].buffer != nullptr
                    ? static_cast<std::uint64_t>(
                          static_cast<const CudaMemory*>(arguments[i].buffer)->handle())
                    : arguments[i].value;
    parameters[i] = &values[i];
  }
  const std::size_t block = local != 0 ? local : std::min<std::size_t>(256, traits_.max_group);
  const std::size_t grid = (global + block - 1) / block;
  if (gate_.here())
    last_launch_ = {static_cast<CUfunction>(entry), static_cast<unsigned>(grid),
                    static_cast<unsigned>(block), values};
  checked(api_->launch(static_cast<CUfunction>(entry), static_cast<unsigned>(grid), 1, 1,
                       static_cast<unsigned>(block), 1, 1, 0, stream_, parameters.data(),
                       nullptr),
          "cuLaunchKernel");
}

}  // namespace kiln::detail::cuda
