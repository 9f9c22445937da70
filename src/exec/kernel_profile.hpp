// The runtime's side of profiling (kiln/profile.hpp): while a kiln::Profile records, or under
// KILN_PROFILE=1 (a profile of the whole program, printed at exit), every kernel the runtime runs
// is timed and added to the recording profiles, grouped by what it computes.
#pragma once

#include <chrono>
#include <string_view>

#include "exec/fusion.hpp"

namespace kiln::detail {

bool profiling_enabled();

// Adds a kernel that `backend` ran in `seconds` (with the reference kernel where
// `reference_fallback`) to every recording profile.
void profile_kernel(const Kernel& kernel, std::string_view backend, double seconds,
                    bool reference_fallback = false);
// Adds time spent finding or making schedules.
void profile_scheduling(double seconds);

// Times a scope when profiling is on; costs one branch and an atomic load when it is off.
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
