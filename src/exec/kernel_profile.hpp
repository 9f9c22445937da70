// KILN_PROFILE=1: time every kernel an executor runs and print, when the program exits, where the
// time went, grouped by what the kernel computes (kind, root op, dtype, shape, fused ops). It is
// how one finds which kernels of a training step are worth making faster.
#pragma once

#include <chrono>

#include "exec/fusion.hpp"

namespace kiln::detail {

bool profiling_enabled();

// Adds `seconds` to the kernel's group; "scheduling" and other non-kernel work use `label`. A
// kernel that a fast executor ran with the reference kernel (`reference_fallback`) is grouped
// apart and labelled so.
void profile_kernel(const Kernel& kernel, double seconds, bool reference_fallback = false);
void profile_label(const char* label, double seconds);

// Times a scope when profiling is on; costs one branch when it is off.
class ProfileTimer {
 public:
  ProfileTimer() : on_(profiling_enabled()) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  bool on() const { return on_; }

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::detail
