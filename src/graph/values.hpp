// Where the layers above the runtime get and put a node's values. A node's values are host
// memory today (Node::result); a device backend's results will be synchronised to the host
// here, so host-only code (reading values from C++ or C, printing, the C API's result data, index
// checks at build time, optimisers) asks through these functions and never reads Node::result
// itself.
#pragma once

#include <memory>

#include "graph/buffer.hpp"
#include "graph/node.hpp"

namespace kiln::detail {

// Whether the node holds its values (an evaluated node or a leaf).
inline bool has_values(const Node& n) { return n.result != nullptr; }

// The values in host memory, synchronised with the device that computed them. The node must
// hold values (internal_error otherwise: callers evaluate first).
const Buffer& host_values(const Node& n);
// The same as a shared handle, for holders that outlive the call (the C API's result_data, a
// detached leaf).
std::shared_ptr<Buffer> host_buffer(const Node& n);

// The node's storage as it is, on whichever device holds it: for handing values from one node to
// another without a transfer (a compiled function binds its arguments and states with it). Null
// when the node holds no values; setting null releases them.
inline const std::shared_ptr<Buffer>& storage_of(const Node& n) { return n.result; }
inline void set_storage(Node& n, std::shared_ptr<Buffer> storage) { n.result = std::move(storage); }

// Gives a leaf its values (creation from host data, loading files).
void set_host_values(Node& n, std::shared_ptr<Buffer> values);

}  // namespace kiln::detail
