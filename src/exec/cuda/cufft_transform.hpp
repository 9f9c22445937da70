// The Fourier transforms (the fft row) on a CUDA device through cuFFT: c64 and c128 lines along
// any axis, read as they lie in the node's type, forward and inverse (scaled by 1/n afterwards as
// the reference scales, by a kernel of its own). cuFFT is loaded when the first transform asks
// for it (dlopen); where it is missing, or for inputs read through a view or of another type, the
// generated kernel computes the transform. cuFFT's results agree with the reference's KISS FFT to
// rounding, not bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "exec/cuda/cuda_device.hpp"

namespace kiln::detail {
struct Node;
}

namespace kiln::detail::cuda {

class CufftTransform {
 public:
  explicit CufftTransform(std::shared_ptr<CudaDevice> device) : device_(std::move(device)) {}
  ~CufftTransform();
  CufftTransform(const CufftTransform&) = delete;
  CufftTransform& operator=(const CufftTransform&) = delete;

  // Whether cuFFT computes the fft node (a complex result of lines cuFFT's sizes take, from an
  // input of the same type).
  static bool takes(const Node& root);

  // Queues the node's values into `out` from its contiguous input on the device's stream. False
  // when cuFFT is not installed or refused the plan (the reason in `why`); throws out_of_memory
  // when the device ran out of memory for cuFFT's work area.
  bool run(const Node& root, CUdeviceptr in, CUdeviceptr out, std::string& why);

  // The transforms cuFFT has computed in this process (for tests and KILN_DEBUG).
  static std::uint64_t computed();
  // How many times the plans were destroyed: a recorded graph (recorded_schedule.cpp) that ran
  // one of them is stale after.
  std::uint64_t epoch() const { return epoch_; }

 private:
  std::shared_ptr<CudaDevice> device_;
  std::mutex mutex_;
  // A plan per geometry (type, length, lines per call, their stride) and the work area it needs:
  // planning costs more than many transforms do.
  struct Plan {
    int handle = 0;  // cufftHandle
    std::size_t work = 0;
  };
  std::map<std::string, Plan> plans_;
  std::uint64_t epoch_ = 0;
  std::unique_ptr<device::DeviceProgram> scale_;  // the inverse's 1/n, compiled on first use
};

}  // namespace kiln::detail::cuda
