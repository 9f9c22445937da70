#include "kiln/eager_mode.hpp"

namespace kiln {

namespace {
// initial-exec: read for every node built (see graph_lock.cpp).
thread_local int eager_depth __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace

EagerMode::EagerMode() { ++eager_depth; }
EagerMode::~EagerMode() { --eager_depth; }
bool in_eager_mode() { return eager_depth > 0; }

}  // namespace kiln
