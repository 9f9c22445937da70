// 2-D convolutions and both their gradients on a CUDA device through cuDNN: f32 (exact f32
// arithmetic, no TF32) and f64 over NCHW values, with deterministic algorithms only, so the same
// input gives the same bits on every run. cuDNN is loaded when the first convolution asks for it
// (dlopen); where it is missing, or for inputs read through a view, the generated kernel computes
// the convolution.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "exec/cuda/cuda_device.hpp"

namespace kiln::detail {
struct Node;
}

namespace kiln::detail::cuda {

class CudnnConvolution {
 public:
  explicit CudnnConvolution(std::shared_ptr<CudaDevice> device) : device_(std::move(device)) {}
  ~CudnnConvolution();
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;

  // Whether cuDNN computes the node (conv2d, conv2d_grad_input or conv2d_grad_weight of f32 or
  // f64 values whose sizes fit cuDNN's int).
  static bool takes(const Node& root);

  // Queues the node's values into `out` (contiguous NCHW, or OIHW for the weight gradient) from its
  // two contiguous operands, in the node's input order. False when cuDNN is not installed or has no
  // deterministic algorithm for it (the reason in `why`); throws out_of_memory when the device ran
  // out of memory for the result or cuDNN's workspace.
  bool run(const Node& root, CUdeviceptr first, CUdeviceptr second, CUdeviceptr out,
           std::string& why);

  // The convolutions cuDNN has computed in this process (for tests and KILN_DEBUG).
  static std::uint64_t computed();

 private:
  std::shared_ptr<CudaDevice> device_;
  void* handle_ = nullptr;  // cudnnHandle_t, made on first use
  std::mutex mutex_;
  // The algorithm chosen for each geometry (op, type, then N C H W O kH kW sH sW pH pW dH dW) and
  // the workspace it needs: asking cuDNN costs more than many convolutions do.
  struct Choice {
    int algorithm = -1;
    std::size_t workspace = 0;
  };
  std::map<std::string, Choice> choices_;
};

}  // namespace kiln::detail::cuda
