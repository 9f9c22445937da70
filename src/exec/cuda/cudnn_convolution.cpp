#include "exec/cuda/cudnn_convolution.hpp"

#include <cudnn.h>

#include <atomic>
#include <limits>
#include <string>
#include <vector>

#include "exec/window2d.hpp"
#include "exec/cuda/loaded_library.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"

namespace kiln::detail::cuda {

namespace {

struct CudnnApi {
  decltype(&::cudnnCreate) create;
  decltype(&::cudnnDestroy) destroy;
  decltype(&::cudnnSetStream) set_stream;
  decltype(&::cudnnCreateTensorDescriptor) create_tensor;
  decltype(&::cudnnSetTensor4dDescriptor) set_tensor;
  decltype(&::cudnnDestroyTensorDescriptor) destroy_tensor;
  decltype(&::cudnnCreateFilterDescriptor) create_filter;
  decltype(&::cudnnSetFilter4dDescriptor) set_filter;
  decltype(&::cudnnDestroyFilterDescriptor) destroy_filter;
  decltype(&::cudnnCreateConvolutionDescriptor) create_convolution;
  decltype(&::cudnnSetConvolution2dDescriptor) set_convolution;
  decltype(&::cudnnSetConvolutionMathType) set_math_type;
  decltype(&::cudnnDestroyConvolutionDescriptor) destroy_convolution;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7) forward_algorithms;
  decltype(&::cudnnGetConvolutionForwardWorkspaceSize) forward_workspace;
  decltype(&::cudnnConvolutionForward) forward;
  decltype(&::cudnnGetConvolutionBackwardDataAlgorithm_v7) data_algorithms;
  decltype(&::cudnnGetConvolutionBackwardDataWorkspaceSize) data_workspace;
  decltype(&::cudnnConvolutionBackwardData) backward_data;
  decltype(&::cudnnGetConvolutionBackwardFilterAlgorithm_v7) filter_algorithms;
  decltype(&::cudnnGetConvolutionBackwardFilterWorkspaceSize) filter_workspace;
  decltype(&::cudnnConvolutionBackwardFilter) backward_filter;
  decltype(&::cudnnGetErrorString) error_string;
};

// Loaded once per process; null (with the reason) where cuDNN is not installed.
const CudnnApi* cudnn_api(std::string& why) {
  static std::string missing;
  static const CudnnApi* api = []() -> const CudnnApi* {
    void* library = open_library({"libcudnn.so.9"});
    if (library == nullptr) {
      missing = "cuDNN 9 (libcudnn.so.9) is not installed here";
      return nullptr;
    }
    static CudnnApi a{};
    const auto resolve = [&](const char* symbol, auto& into) {
      return cuda::resolve(library, symbol, into, missing);
    };
    const bool all =
        resolve("cudnnCreate", a.create) && resolve("cudnnDestroy", a.destroy) &&
        resolve("cudnnSetStream", a.set_stream) &&
        resolve("cudnnCreateTensorDescriptor", a.create_tensor) &&
        resolve("cudnnSetTensor4dDescriptor", a.set_tensor) &&
        resolve("cudnnDestroyTensorDescriptor", a.destroy_tensor) &&
        resolve("cudnnCreateFilterDescriptor", a.create_filter) &&
        resolve("cudnnSetFilter4dDescriptor", a.set_filter) &&
        resolve("cudnnDestroyFilterDescriptor", a.destroy_filter) &&
        resolve("cudnnCreateConvolutionDescriptor", a.create_convolution) &&
        resolve("cudnnSetConvolution2dDescriptor", a.set_convolution) &&
        resolve("cudnnSetConvolutionMathType", a.set_math_type) &&
        resolve("cudnnDestroyConvolutionDescriptor", a.destroy_convolution) &&
        resolve("cudnnGetConvolutionForwardAlgorithm_v7", a.forward_algorithms) &&
        resolve("cudnnGetConvolutionForwardWorkspaceSize", a.forward_workspace) &&
        resolve("cudnnConvolutionForward", a.forward) &&
        resolve("cudnnGetConvolutionBackwardDataAlgorithm_v7", a.data_algorithms) &&
        resolve("cudnnGetConvolutionBackwardDataWorkspaceSize", a.data_workspace) &&
        resolve("cudnnConvolutionBackwardData", a.backward_data) &&
        resolve("cudnnGetConvolutionBackwardFilterAlgorithm_v7", a.filter_algorithms) &&
        resolve("cudnnGetConvolutionBackwardFilterWorkspaceSize", a.filter_workspace) &&
        resolve("cudnnConvolutionBackwardFilter", a.backward_filter) &&
        resolve("cudnnGetErrorString", a.error_string);
    return all ? &a : nullptr;
  }();
  if (api == nullptr) why = missing;
  return api;
}

std::atomic<std::uint64_t> convolutions{0};

// The most workspace an algorithm may ask for; a hungrier one is passed over.
constexpr std::size_t kMostWorkspace = std::size_t{1} << 30;

// The descriptors of one convolution, destroyed with it.
struct Descriptors {
  const CudnnApi& api;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;

  Descriptors(const CudnnApi& a, const Window2d& g, cudnnDataType_t type) : api(a) {
    const auto i = [](std::int64_t v) { return static_cast<int>(v); };
    const auto step = [&](cudnnStatus_t s) {
      if (status == CUDNN_STATUS_SUCCESS) status = s;
    };
    step(api.create_tensor(&x));
    step(api.create_tensor(&y));
    step(api.create_filter(&w));
    step(api.create_convolution(&conv));
    if (status != CUDNN_STATUS_SUCCESS) return;
    step(api.set_tensor(x, CUDNN_TENSOR_NCHW, type, i(g.n), i(g.c), i(g.h), i(g.w)));
    step(api.set_tensor(y, CUDNN_TENSOR_NCHW, type, i(g.n), i(g.o), i(g.oh), i(g.ow)));
    step(api.set_filter(w, type, CUDNN_TENSOR_NCHW, i(g.o), i(g.c), i(g.kh), i(g.kw)));
    step(api.set_convolution(conv, i(g.ph), i(g.pw), i(g.sh), i(g.sw), i(g.dh), i(g.dw),
                             CUDNN_CROSS_CORRELATION, type));
    // Exact f32 arithmetic: no TF32 tensor cores (they keep 10 bits of the mantissa).
    step(api.set_math_type(conv, CUDNN_FMA_MATH));
  }
  ~Descriptors() {
    if (conv) api.destroy_convolution(conv);
    if (w) api.destroy_filter(w);
    if (y) api.destroy_tensor(y);
    if (x) api.destroy_tensor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

// The first algorithm of cuDNN's ranking that is deterministic, does not use tensor cores and
// needs at most kMostWorkspace bytes, or -1.
template <class Perf> int deterministic_choice(const Perf* perf, int count) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC &&
        perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
        perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
        perf[i].memory <= kMostWorkspace)
      return static_cast<int>(perf[i].algo);
  return -1;
}

}  // namespace

bool CudnnConvolution::takes(const Node& root) {
  if (root.op != Op::conv2d && root.op != Op::conv2d_grad_input &&
      root.op != Op::conv2d_grad_weight)
    return false;
  if (root.dtype != DType::f32 && root.dtype != DType::f64) return false;
  for (const auto& in : root.inputs)
    if (in->dtype != root.dtype) return false;
  if (root.numel() == 0) return false;
  const Window2d g = window2d_of(root);
  constexpr auto most = static_cast<std::int64_t>(std::numeric_limits<int>::max());
  for (std::int64_t v : {g.n, g.c, g.h, g.w, g.o, g.oh, g.ow, g.kh, g.kw})
    if (v <= 0 || v > most) return false;
  // cuDNN indexes each tensor with int.
  return g.n * g.c * g.h * g.w <= most && g.n * g.o * g.oh * g.ow <= most &&
         g.o * g.c * g.kh * g.kw <= most;
}

CudnnConvolution::~CudnnConvolution() {
  std::string why;
  if (handle_ != nullptr) {
    device_->bind();
    cudnn_api(why)->destroy(static_cast<cudnnHandle_t>(handle_));
  }
}

bool CudnnConvolution::run(const Node& root, CUdeviceptr first, CUdeviceptr second,
                           CUdeviceptr out, std::string& why) {
  const CudnnApi* api = cudnn_api(why);
  if (api == nullptr) return false;
  std::lock_guard lock(mutex_);
  device_->usable();
  if (handle_ == nullptr) {
    cudnnHandle_t handle = nullptr;
    if (api->create(&handle) != CUDNN_STATUS_SUCCESS) {
      why = "cudnnCreate failed";
      return false;
    }
    handle_ = handle;
    api->set_stream(handle, device_->stream());
  }
  const auto handle = static_cast<cudnnHandle_t>(handle_);
  const Window2d g = window2d_of(root);
  const bool f64 = root.dtype == DType::f64;
  Descriptors dd(*api, g, f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
  const auto failed = [&](cudnnStatus_t status, std::string_view what) {
    if (status == CUDNN_STATUS_ALLOC_FAILED)
      throw Error(ErrorCode::out_of_memory,
                  "CUDA: cuDNN ran out of memory in " + std::string(what) + " for " +
                      std::string(root.info().name) + " " + shape_to_string(root.shape));
    why = std::string(what) + ": " + api->error_string(status);
    return false;
  };
  if (dd.status != CUDNN_STATUS_SUCCESS) return failed(dd.status, "the descriptors");

  // The algorithm, chosen once per geometry from cuDNN's heuristics.
  std::string key = std::to_string(static_cast<int>(root.op)) + (f64 ? "d" : "f");
  for (std::int64_t v : {g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw}) {
    key += ' ';
    key += std::to_string(v);
  }
  Choice choice;
  if (auto found = choices_.find(key); found != choices_.end()) {
    choice = found->second;
  } else {
    constexpr int kMost = 16;
    int count = 0;
    cudnnStatus_t status;
    if (root.op == Op::conv2d) {
      cudnnConvolutionFwdAlgoPerf_t perf[kMost];
      status = api->forward_algorithms(handle, dd.x, dd.w, dd.conv, dd.y, kMost, &count, perf);
      choice.algorithm = deterministic_choice(perf, count);
      if (status == CUDNN_STATUS_SUCCESS && choice.algorithm >= 0)
        status = api->forward_workspace(
            handle, dd.x, dd.w, dd.conv, dd.y,
            static_cast<cudnnConvolutionFwdAlgo_t>(choice.algorithm), &choice.workspace);
    } else if (root.op == Op::conv2d_grad_input) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMost];
      status = api->data_algorithms(handle, dd.w, dd.y, dd.conv, dd.x, kMost, &count, perf);
      choice.algorithm = deterministic_choice(perf, count);
      if (status == CUDNN_STATUS_SUCCESS && choice.algorithm >= 0)
        status = api->data_workspace(
            handle, dd.w, dd.y, dd.conv, dd.x,
            static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algorithm), &choice.workspace);
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMost];
      status = api->filter_algorithms(handle, dd.x, dd.y, dd.conv, dd.w, kMost, &count, perf);
      choice.algorithm = deterministic_choice(perf, count);
      if (status == CUDNN_STATUS_SUCCESS && choice.algorithm >= 0)
        status = api->filter_workspace(
            handle, dd.x, dd.y, dd.conv, dd.w,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algorithm), &choice.workspace);
    }
    if (status != CUDNN_STATUS_SUCCESS) return failed(status, "choosing an algorithm");
    choices_.emplace(key, choice);
  }
  const int algorithm = choice.algorithm;
  if (algorithm < 0) {
    why = "cuDNN offers no deterministic algorithm within 1 GiB of workspace";
    return false;
  }
  const std::size_t bytes = choice.workspace;
  cudnnStatus_t status;
  // From the device's pool: work queued later on the same stream may reuse it only after this.
  const auto workspace = bytes > 0 ? device_->allocate(bytes) : nullptr;
  void* space = workspace ? workspace->native_handle() : nullptr;

  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  const auto at = [](CUdeviceptr p) { return reinterpret_cast<void*>(p); };
  if (root.op == Op::conv2d)  // x, w -> y
    status = api->forward(handle, one, dd.x, at(first), dd.w, at(second), dd.conv,
                          static_cast<cudnnConvolutionFwdAlgo_t>(algorithm), space, bytes, zero,
                          dd.y, at(out));
  else if (root.op == Op::conv2d_grad_input)  // dy, w -> dx
    status = api->backward_data(handle, one, dd.w, at(second), dd.y, at(first), dd.conv,
                                static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm), space,
                                bytes, zero, dd.x, at(out));
  else  // x, dy -> dw
    status = api->backward_filter(handle, one, dd.x, at(first), dd.y, at(second), dd.conv,
                                  static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm), space,
                                  bytes, zero, dd.w, at(out));
  if (status != CUDNN_STATUS_SUCCESS) return failed(status, root.info().name);
  convolutions.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::uint64_t CudnnConvolution::computed() { return convolutions.load(std::memory_order_relaxed); }

}  // namespace kiln::detail::cuda
