/// @file
/// Gradient contexts (kiln/autodiff.hpp includes this header): whether the nodes a thread builds
/// are kept for differentiation.
#pragma once

namespace kiln {

/// While at least one GradientContext lives on a thread, the nodes that thread builds are
/// differentiable (the mode is per thread, as PyTorch's grad mode).
class GradientContext {
 public:
  GradientContext();
  ~GradientContext();
  GradientContext(const GradientContext&) = delete;
  GradientContext& operator=(const GradientContext&) = delete;
};
/// libtorch's NoGradGuard: while it lives, this thread records nothing for differentiation, even
/// inside a GradientContext (a GradientContext opened within the guard records again). On its
/// end the thread's contexts are as they were.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  int saved_;
};
bool in_gradient_context();
/// The same as a GradientContext's constructor and destructor, for code without scopes (C API).
void start_gradient_context();
void stop_gradient_context();

}  // namespace kiln
