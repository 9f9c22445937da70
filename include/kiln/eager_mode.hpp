/// @file
/// Eager execution (what Flint's fEnableEagerExecution gives C code), per thread.
#pragma once

namespace kiln {

/// While at least one EagerMode lives on a thread, every op that thread builds is evaluated at
/// once; views stay views (they copy nothing and are read when the next op is evaluated), and
/// gradients() returns evaluated gradients. An error in the values (an index out of range, a
/// matrix that is not positive definite) is then thrown by the op that caused it, and every
/// intermediate can be inspected in a debugger. The price is fusion: each op is a kernel of its
/// own with its own pass over memory, so lazy evaluation stays the default.
class EagerMode {
 public:
  EagerMode();
  ~EagerMode();
  EagerMode(const EagerMode&) = delete;
  EagerMode& operator=(const EagerMode&) = delete;
};
bool in_eager_mode();

}  // namespace kiln
