/// @file
/// Profiling: where the time of a run of evaluations goes, kernel by kernel (cl-waffe2's
/// proceed-bench). KILN_PROFILE=1 prints the same table for the whole program at exit.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/types.hpp"

namespace kiln {

/// One kind of kernel of a profile: the kernels with the same kind, ops, type, shape, backend
/// and boundary, summed over their calls.
struct KernelStats {
  std::string kind;                ///< elementwise, reduce, matmul, materialize or single
  std::string op;                  ///< the op of the kernel's result
  std::vector<std::string> fused;  ///< the ops it computes, inputs first (empty: only `op`)
  DType dtype = DType::f32;        ///< of the result
  Shape shape;                     ///< of the result
  std::string backend;             ///< the executor that ran it ("cpu", "opencl")
  bool reference = false;          ///< run with the reference kernel (the backend has none)
  std::string boundary;            ///< why it reads its inputs from memory instead of computing
                                   /// them (the schedule's reasons, as KILN_DEBUG prints them)
  long calls = 0;
  double seconds = 0;  ///< over all calls
  double bytes = 0;    ///< per call: the inputs read (at most the elements of what is read) and
                       /// the results written
  double flops = 0;    ///< per call, where kiln knows it (elementwise, reductions, matmul,
                       /// convolution); 0 otherwise
  double share = 0;    ///< of the profile's kernel time, 0 to 1

  double mean_seconds() const { return calls > 0 ? seconds / calls : 0; }
  double gbytes_per_second() const { return seconds > 0 ? bytes * calls / seconds * 1e-9 : 0; }
  double gflops() const { return seconds > 0 ? flops * calls / seconds * 1e-9 : 0; }
};

/// Records every kernel that the runtime-based executors (cpu, opencl) run on any thread while it
/// records: from construction until stop() or destruction. Profiles may overlap; each sees the
/// kernels of its own time. Timing adds a clock read per kernel while any profile records, nothing
/// otherwise. A device backend's time is the host's wait for the kernel where the backend waits
/// (the OpenCL backend queues kernels; its times are those of queueing and of the reads that wait).
class Profile {
 public:
  Profile();
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  void stop();
  bool recording() const;
  /// The kernels, the most time first, and the totals.
  std::vector<KernelStats> kernels() const;
  double kernel_seconds() const;
  double scheduling_seconds() const;  ///< building, hashing and finding (or making) schedules
  /// A table: one line per kernel kind with ms, share, calls, us per call, GB/s, GFLOP/s, the
  /// backend, the kernel and its boundary.
  std::string table() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

std::ostream& operator<<(std::ostream& os, const Profile& profile);

}  // namespace kiln
