// The gradient mode: whether the nodes this thread builds are kept for differentiation. It lives
// below the front end and autodiff because node construction reads it and autodiff sets it.
#pragma once

namespace kiln::detail {

// Whether this thread is inside a gradient context (kiln::GradientContext or the C API's
// fStartGradientContext).
bool gradient_context_active();

}  // namespace kiln::detail
