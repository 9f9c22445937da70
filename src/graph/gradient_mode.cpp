// Gradient contexts, per thread as PyTorch's grad mode: a context on one thread does not change
// how another thread's graphs are built (outside a context, deep graphs are evaluated as they
// grow; inside, they are kept whole).
#include "graph/gradient_mode.hpp"

#include "kiln/gradient_mode.hpp"

namespace kiln {

namespace {
// initial-exec: read for every node built (see graph_lock.cpp).
thread_local int context_depth __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace

GradientContext::GradientContext() { start_gradient_context(); }
GradientContext::~GradientContext() { stop_gradient_context(); }
bool in_gradient_context() { return context_depth > 0; }
void start_gradient_context() { ++context_depth; }
void stop_gradient_context() {
  if (context_depth > 0) --context_depth;
}
NoGradGuard::NoGradGuard() : saved_(context_depth) { context_depth = 0; }
NoGradGuard::~NoGradGuard() { context_depth = saved_; }
bool detail::gradient_context_active() { return context_depth > 0; }

}  // namespace kiln
