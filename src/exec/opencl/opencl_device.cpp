#include "exec/opencl/opencl_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "kiln/error.hpp"

namespace kiln::detail::opencl {

namespace {

// Freed buffers the pool keeps for reuse, at most; beyond it they go back to the driver.
constexpr std::size_t kMostPooledBytes = std::size_t{1} << 30;

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  clGetDeviceInfo(d, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

struct Candidate {
  cl_device_id device;
  std::size_t platform, index;
  bool gpu;
  std::string name;
};

std::vector<Candidate> all_devices() {
  std::vector<Candidate> out;
  cl_uint platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0) return out;
  std::vector<cl_platform_id> ids(platforms);
  clGetPlatformIDs(platforms, ids.data(), nullptr);
  for (std::size_t p = 0; p < ids.size(); ++p) {
    cl_uint count = 0;
    if (clGetDeviceIDs(ids[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> devices(count);
    clGetDeviceIDs(ids[p], CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr);
    for (std::size_t i = 0; i < devices.size(); ++i) {
      cl_device_type type = 0;
      clGetDeviceInfo(devices[i], CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      out.push_back({devices[i], p, i, (type & CL_DEVICE_TYPE_GPU) != 0,
                     device_string(devices[i], CL_DEVICE_NAME)});
    }
  }
  return out;
}

// Exiting with work still queued: PoCL builds a kernel's code in its own threads when the kernel
// first runs, with LLVM, and a program that exits during such a build has LLVM's function-local
// statics destroyed under it (a crash inside the code generator). Exit handlers run in the
// reverse order of their registration, statics' destructors among them, so a handler that
// finishes every live queue runs before those statics go if it was registered after they were
// made. The statics are made by the first builds (on the calling thread) and by the first run
// (on the driver's threads), so the device waits for its first kernel and registers the handler
// then; it registers it again after builds and waits each time the number of programs built has
// doubled, so that exit handlers stay few.
struct LiveQueues {
  std::mutex mutex;
  std::vector<cl_command_queue> queues;
  std::size_t programs_at_registration = 0;
  bool registered = false;
};
LiveQueues& live_queues() {
  static auto* live = new LiveQueues;  // never destroyed: the exit handler reads it
  return *live;
}
void finish_live_queues() {
  LiveQueues& live = live_queues();
  std::lock_guard lock(live.mutex);
  for (cl_command_queue q : live.queues) clFinish(q);
}
void finish_at_exit(std::size_t programs_built, bool always = false) {
  LiveQueues& live = live_queues();
  std::lock_guard lock(live.mutex);
  if (!always && live.registered && programs_built < 2 * live.programs_at_registration) return;
  if (std::atexit(finish_live_queues) == 0) {
    live.registered = true;
    live.programs_at_registration = programs_built;
  }
}

}  // namespace

std::vector<std::string> device_list() {
  std::vector<std::string> out;
  for (const Candidate& c : all_devices()) {
    cl_device_type type = 0;
    clGetDeviceInfo(c.device, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    const char* kind = (type & CL_DEVICE_TYPE_GPU) != 0           ? "GPU"
                       : (type & CL_DEVICE_TYPE_CPU) != 0         ? "CPU"
                       : (type & CL_DEVICE_TYPE_ACCELERATOR) != 0 ? "accelerator"
                                                                  : "other";
    out.push_back(std::to_string(c.platform) + ":" + std::to_string(c.index) + " " + c.name + " (" +
                  kind + "), " + device_string(c.device, CL_DEVICE_VERSION));
  }
  return out;
}

const char* status_name(cl_int status) {
  switch (status) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "CL_INVALID_PROGRAM_EXECUTABLE";
    default: return "an OpenCL error";
  }
}

void check(cl_int status, const char* call) {
  if (status == CL_SUCCESS) return;
  const std::string what =
      std::string(call) + " failed: " + status_name(status) + " (" + std::to_string(status) + ")";
  if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
      status == CL_OUT_OF_HOST_MEMORY || status == CL_INVALID_BUFFER_SIZE)
    throw Error(ErrorCode::out_of_memory, "OpenCL: " + what);
  throw Error(ErrorCode::device_error, "OpenCL: " + what);
}

void OpenClDevice::usable() const {
  if (lost())
    throw Error(ErrorCode::device_error,
                "OpenCL: the device " + name_ +
                    " is lost (it reported CL_DEVICE_NOT_AVAILABLE): values that lived only on it "
                    "are gone; host copies stay readable and other executors still work");
}

void OpenClDevice::checked(cl_int status, const char* call) {
  if (status == CL_DEVICE_NOT_AVAILABLE) {
    lost_.store(true, std::memory_order_release);
    usable();
  }
  check(status, call);
}

ClMemory::~ClMemory() { device_->give_back(mem_, bytes_); }
const Device& ClMemory::device() const { return *device_; }
void ClMemory::download(void* to, std::size_t bytes) const { device_->download(*this, to, bytes); }

std::shared_ptr<OpenClDevice> OpenClDevice::open() {
  const std::vector<Candidate> devices = all_devices();
  if (devices.empty())
    throw Error(ErrorCode::device_error,
                "OpenCL: no platform with a device (is an ICD such as pocl-opencl-icd installed?)");
  const Candidate* chosen = nullptr;
  if (const char* want = std::getenv("KILN_OPENCL_DEVICE"); want != nullptr && *want != '\0') {
    const std::string w(want);
    for (const Candidate& c : devices)
      if (c.name.find(w) != std::string::npos ||
          w == std::to_string(c.platform) + ":" + std::to_string(c.index)) {
        chosen = &c;
        break;
      }
    if (chosen == nullptr)
      throw Error(ErrorCode::device_error, "OpenCL: no device matches KILN_OPENCL_DEVICE=" + w);
  } else {
    for (const Candidate& c : devices)
      if (c.gpu) {
        chosen = &c;
        break;
      }
    if (chosen == nullptr) chosen = &devices.front();
  }
  std::shared_ptr<OpenClDevice> d(new OpenClDevice());
  d->device_ = chosen->device;
  d->name_ = chosen->name;
  d->driver_ = device_string(d->device_, CL_DRIVER_VERSION);
  // The driver's version and the OpenCL version it implements: both decide a program's binary.
  d->driver_ += ", " + device_string(d->device_, CL_DEVICE_VERSION);
  cl_int status = CL_SUCCESS;
  d->context_ = clCreateContext(nullptr, 1, &d->device_, nullptr, nullptr, &status);
  check(status, "clCreateContext");
  d->queue_ = clCreateCommandQueue(d->context_, d->device_, 0, &status);
  check(status, "clCreateCommandQueue");
  {
    LiveQueues& live = live_queues();
    std::lock_guard lock(live.mutex);
    live.queues.push_back(d->queue_);
  }
  const std::string extensions = device_string(d->device_, CL_DEVICE_EXTENSIONS);
  d->traits_.fp64 = extensions.find("cl_khr_fp64") != std::string::npos;
  clGetDeviceInfo(d->device_, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->traits_.max_group,
                  &d->traits_.max_group, nullptr);
  clGetDeviceInfo(d->device_, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc_, &d->max_alloc_,
                  nullptr);
  cl_device_type type = 0;
  clGetDeviceInfo(d->device_, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
  d->traits_.gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  cl_ulong local_bytes = 0;
  if (clGetDeviceInfo(d->device_, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_bytes, &local_bytes,
                      nullptr) == CL_SUCCESS &&
      local_bytes > 0)
    d->traits_.local_bytes = static_cast<std::size_t>(
        std::min<cl_ulong>(local_bytes, DeviceTraits::kMostLocalBytes));
  // Division and square root of f32 correctly rounded where the device can (OpenCL allows
  // 2.5 ulp otherwise); no -cl-fast-relaxed-math, no -cl-mad-enable: every kernel rounds as the
  // reference does.
  cl_device_fp_config single = 0;
  clGetDeviceInfo(d->device_, CL_DEVICE_SINGLE_FP_CONFIG, sizeof single, &single, nullptr);
  d->options_ = std::string(kOpenClC.compile_options);
  if ((single & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0)
    d->options_ += " -cl-fp32-correctly-rounded-divide-sqrt";
  return d;
}

OpenClDevice::~OpenClDevice() {
  if (queue_ != nullptr) {
    {
      LiveQueues& live = live_queues();
      std::lock_guard lock(live.mutex);
      std::erase(live.queues, queue_);
    }
    clFinish(queue_);  // work still queued (results nobody read) finishes first
  }
  release_pool();
  if (queue_ != nullptr) clReleaseCommandQueue(queue_);
  if (context_ != nullptr) clReleaseContext(context_);
}

std::size_t OpenClDevice::bytes_of(DType dtype, std::int64_t numel) const {
  const std::uint64_t most = max_alloc_ / size_of(dtype);
  if (numel < 0 || static_cast<std::uint64_t>(numel) > most)
    throw Error(ErrorCode::out_of_memory,
                "OpenCL: " + std::to_string(numel) + " " + dtype_name(dtype) +
                    " values exceed the largest buffer " + name_ + " allocates (" +
                    std::to_string(max_alloc_) + " bytes)");
  return static_cast<std::size_t>(numel) * size_of(dtype);
}

std::shared_ptr<device::DeviceBuffer> OpenClDevice::allocate(std::size_t bytes) {
  usable();
  const auto gate = gate_.pass();
  // Sizes round up to 256 bytes, so that buffers of nearby sizes share the pool.
  const std::size_t size = std::max<std::size_t>(256, (bytes + 255) / 256 * 256);
  if (gate_.here()) {
    if (auto again = recorded_buffers_.reuse(size)) return again;
    return recorded_buffers_.add(unrecorded_allocation(size));
  }
  return unrecorded_allocation(size);
}

std::shared_ptr<device::DeviceBuffer> OpenClDevice::unrecorded_allocation(std::size_t size) {
  {
    std::lock_guard lock(pool_mutex_);
    auto it = pool_.find(size);
    if (it != pool_.end()) {
      cl_mem mem = it->second;
      pool_.erase(it);
      pooled_bytes_ -= size;
      return std::make_shared<ClMemory>(shared_from_this(), mem, size);
    }
  }
  for (int attempt = 0;; ++attempt) {
    cl_int status = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, size, nullptr, &status);
    if (status == CL_SUCCESS) return std::make_shared<ClMemory>(shared_from_this(), mem, size);
    if (attempt == 0 && (status == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                         status == CL_OUT_OF_RESOURCES || status == CL_OUT_OF_HOST_MEMORY)) {
      release_pool();  // what the pool keeps may be what is missing
      continue;
    }
    checked(status, ("clCreateBuffer of " + std::to_string(size) + " bytes on " + name_).c_str());
  }
}

void OpenClDevice::give_back(cl_mem mem, std::size_t bytes) {
  {
    std::lock_guard lock(pool_mutex_);
    if (pooled_bytes_ + bytes <= kMostPooledBytes) {
      pool_.emplace(bytes, mem);
      pooled_bytes_ += bytes;
      return;
    }
  }
  releases_.fetch_add(1);  // before the handle can come back (set_arguments_)
  clReleaseMemObject(mem);
}

void OpenClDevice::release_pool() {
  std::lock_guard lock(pool_mutex_);
  releases_.fetch_add(1);
  for (auto& [size, mem] : pool_) clReleaseMemObject(mem);
  pool_.clear();
  pooled_bytes_ = 0;
}

void OpenClDevice::upload(const device::DeviceBuffer& to, const void* from, std::size_t bytes) {
  usable();
  const auto gate = gate_.pass();
  not_while_recording("an upload");
  if (bytes == 0) return;
  checked(clEnqueueWriteBuffer(queue_, static_cast<const ClMemory&>(to).handle(), CL_TRUE, 0, bytes, from, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
}

void OpenClDevice::download(const device::DeviceBuffer& from, void* to, std::size_t bytes) {
  usable();
  const auto gate = gate_.pass();
  not_while_recording("a download");
  if (bytes == 0) return;
  checked(clEnqueueReadBuffer(queue_, static_cast<const ClMemory&>(from).handle(), CL_TRUE, 0, bytes, to, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
  finish_at_exit(programs_made_.load(std::memory_order_relaxed));
}

void OpenClDevice::finish() {
  usable();
  const auto gate = gate_.pass();
  not_while_recording("a wait for the queue");
  queued_ = 0;
  checked(clFinish(queue_), "clFinish");
  finish_at_exit(programs_made_.load(std::memory_order_relaxed));
}

namespace {

// A built program and the kernels made of it, released with it.
class ClProgram final : public device::DeviceProgram {
 public:
  explicit ClProgram(cl_program program) : program_(program) {}
  ~ClProgram() override {
    for (auto& [entry, kernel] : kernels_) clReleaseKernel(kernel);
    clReleaseProgram(program_);
  }
  ClProgram(const ClProgram&) = delete;
  ClProgram& operator=(const ClProgram&) = delete;

  void* entry(const std::string& name) override {
    auto found = kernels_.find(name);
    if (found != kernels_.end()) return found->second;
    cl_int status = CL_SUCCESS;
    cl_kernel made = clCreateKernel(program_, name.c_str(), &status);
    check(status, "clCreateKernel");
    return kernels_.emplace(name, made).first->second;
  }

  std::vector<unsigned char> binary() const override {
    std::size_t size = 0;
    if (clGetProgramInfo(program_, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) !=
            CL_SUCCESS ||
        size == 0)
      return {};
    std::vector<unsigned char> bytes(size);
    unsigned char* at = bytes.data();
    if (clGetProgramInfo(program_, CL_PROGRAM_BINARIES, sizeof at, &at, nullptr) != CL_SUCCESS)
      return {};
    return bytes;
  }

 private:
  cl_program program_;
  std::map<std::string, cl_kernel> kernels_;
};

}  // namespace

void OpenClDevice::built() {
  finish_at_exit(programs_made_.fetch_add(1, std::memory_order_relaxed) + 1);
}

std::unique_ptr<device::DeviceProgram> OpenClDevice::load(
    const std::vector<unsigned char>& binary) {
  // A binary still goes through clBuildProgram (OpenCL's rule).
  usable();
  const unsigned char* bytes = binary.data();
  const std::size_t size = binary.size();
  cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
  cl_program program =
      clCreateProgramWithBinary(context_, 1, &device_, &size, &bytes, &binary_status, &status);
  if (status == CL_SUCCESS && binary_status == CL_SUCCESS &&
      clBuildProgram(program, 1, &device_, options_.c_str(), nullptr, nullptr) == CL_SUCCESS) {
    built();
    return std::make_unique<ClProgram>(program);
  }
  if (program != nullptr) clReleaseProgram(program);
  return nullptr;
}

std::unique_ptr<device::DeviceProgram> OpenClDevice::compile(const std::string& source) {
  usable();
  const char* text = source.c_str();
  const std::size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context_, 1, &text, &length, &status);
  check(status, "clCreateProgramWithSource");
  status = clBuildProgram(program, 1, &device_, options_.c_str(), nullptr, nullptr);
  if (status != CL_SUCCESS) {
    std::size_t size = 0;
    clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    clReleaseProgram(program);
    throw Error(ErrorCode::internal_error, "OpenCL: kiln's kernel did not build on " + name_ +
                                               ": " + log + "\n--- source ---\n" + source);
  }
  built();
  return std::make_unique<ClProgram>(program);
}

void OpenClDevice::copy(const device::DeviceBuffer& from, const device::DeviceBuffer& to,
                        std::size_t bytes) {
  usable();
  if (bytes == 0) return;
  if (gate_.here()) {
    recording_->add_copy(from, to, bytes);
    return;
  }
  checked(clEnqueueCopyBuffer(queue_, static_cast<const ClMemory&>(from).handle(),
                              static_cast<const ClMemory&>(to).handle(), 0, 0, bytes, 0, nullptr,
                              nullptr),
          "clEnqueueCopyBuffer");
  enqueued();
}

void OpenClDevice::begin_recording() {
  usable();
  if (!gate_.begin())
    throw Error(ErrorCode::internal_error, "OpenCL: a recording began inside another");
  recording_ = std::make_unique<device::LaunchList>(*this);
}

std::unique_ptr<device::RecordedWork> OpenClDevice::end_recording() {
  if (!gate_.here()) return nullptr;
  std::unique_ptr<device::RecordedWork> work = std::move(recording_);
  work->buffers = recorded_buffers_.take();
  gate_.end();
  return work;
}

std::size_t OpenClDevice::recorded_value(std::size_t argument) {
  if (!gate_.here()) throw Error(ErrorCode::internal_error, "OpenCL: no launch is being recorded");
  return recording_->value(argument);
}

void OpenClDevice::not_while_recording(const char* what) {
  if (gate_.here())
    throw Error(ErrorCode::internal_error,
                std::string("OpenCL: ") + what + " while recording a schedule's launches");
}

void OpenClDevice::launch(void* entry, std::span<const device::KernelArgument> arguments,
                          std::size_t global, std::size_t local) {
  usable();
  if (gate_.here()) {
    recording_->add_launch(entry, arguments, global, local);
    return;
  }
  auto* kernel = static_cast<cl_kernel>(entry);
  SetArguments& set = set_arguments_[kernel];
  if (const std::uint64_t releases = releases_.load(); set.releases != releases) {
    set.values.clear();
    set.releases = releases;
  }
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const device::KernelArgument& a = arguments[i];
    cl_mem handle =
        a.buffer != nullptr ? static_cast<const ClMemory*>(a.buffer)->handle() : nullptr;
    const std::uint64_t value =
        a.buffer != nullptr ? reinterpret_cast<std::uintptr_t>(handle) : a.value;
    if (i < set.values.size() && set.values[i] == value) continue;
    const auto at = static_cast<cl_uint>(i);
    if (a.buffer != nullptr) {
      check(clSetKernelArg(kernel, at, sizeof handle, &handle), "clSetKernelArg");
    } else {
      const cl_ulong number = a.value;
      check(clSetKernelArg(kernel, at, sizeof number, &number), "clSetKernelArg");
    }
    if (i < set.values.size()) set.values[i] = value;
    else set.values.push_back(value);
  }
  checked(clEnqueueNDRangeKernel(queue_, kernel, 1, nullptr, &global, local ? &local : nullptr, 0,
                                 nullptr, nullptr),
          "clEnqueueNDRangeKernel");
  enqueued();
}

void OpenClDevice::enqueued() {
  not_while_recording("a library's command");
  if (!first_kernel_waited_) {
    first_kernel_waited_ = true;
    finish();
    finish_at_exit(programs_made_.load(std::memory_order_relaxed), /*always=*/true);
    return;
  }
  // The host does not wait for kernels; a loop of small evaluations that reads nothing back
  // would queue commands (and the driver's memory for them) without bound. Every so many
  // kernels the host waits for the queue to drain.
  if (++queued_ >= kMostQueued) finish();
}

}  // namespace kiln::detail::opencl
