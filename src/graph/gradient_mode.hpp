// The gradient mode: whether the nodes this thread builds are kept for differentiation. It lives
// below the front end and autodiff because node construction reads it and autodiff sets it.
#pragma once

#include "kiln/gradient_mode.hpp"

namespace kiln::detail {

// Whether this thread is inside a gradient context (kiln::GradientContext or the C API's
// fStartGradientContext).
bool gradient_context_active();

// While one lives, this thread builds outside any gradient context (a module's running
// statistics are state, not part of the graph that gradients flow through): the public
// NoGradGuard.
using GradientContextPause = kiln::NoGradGuard;

}  // namespace kiln::detail
