/// @file
/// Anomaly mode, as PyTorch's torch.autograd.detect_anomaly: while it is on, every evaluation
/// checks the floating values it computed, and when one holds NaN it finds the first op (forward
/// or gradient) that made NaN from inputs without any, and throws kiln::Error(illegal_derive)
/// naming that op, its type and shape, its inputs', and the op the user called when a composite
/// built it. Values with infinity but no NaN are looked into the same way, for the first op that
/// made infinity from finite inputs (log(0), an overflow); an infinity that inputs or constants
/// hold (a mask's -inf, max-pooling's padding) is no anomaly. Slow (values are read back and the
/// path to them is computed again with the reference executor): a tool for finding where a NaN
/// comes from.
#pragma once

namespace kiln {

/// Turns anomaly mode on or off for the whole process.
void detect_anomaly(bool on);
/// Whether anomaly mode is on (detect_anomaly(true), or a DetectAnomalyGuard lives).
bool anomaly_detection_enabled();

/// Anomaly mode while it lives (libtorch's torch::autograd::DetectAnomalyGuard).
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;
};

}  // namespace kiln
