// Constants shared between graphs. `x = x + 1.0f` in a loop would build a new leaf for 1.0f and
// a new broadcast view of it every time; instead each thread keeps the constants that scalar
// operands create, and one broadcast view of each per shape, and reuses them. Only constants
// kiln creates for a Scalar operand are shared: a tensor a user holds is never replaced. Graphs
// stay immutable: a shared view evaluated by itself (reached through graph introspection) gets
// values like any node, and the cache lets go of it.
#pragma once

#include "kiln/tensor.hpp"

namespace kiln::detail {

// Both return references into this thread's cache rather than copies: copying a handle costs an
// atomic increment and decrement, a noticeable part of building a tiny op. A reference is valid
// until the next call of either function on this thread; callers copy what they keep.

// A 0-d leaf holding `value`, shared by every scalar operand of that value and type.
const Tensor& shared_constant(Scalar value);
// `t` broadcast to `shape`, shared, when `t` is a shared constant; else null.
const Tensor* shared_broadcast(const Tensor& t, const Shape& shape, bool inverse);

}  // namespace kiln::detail
