// The schedule: the computation a set of targets needs, cut into kernels. Chains of
// elementwise ops become one kernel, elementwise producers are fused into the reductions that
// consume them, and everything else (matmul, indexing, ...) is a kernel of its own. Each place
// where a kernel reads a value from memory instead of computing it has a reason, printed by
// describe() (KILN_DEBUG=1 prints every schedule). The schedule knows nothing of backends.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "graph/node.hpp"

namespace kiln::detail {

// A value a kernel reads: the buffer of `node` through `view` (null: row-major, as it is), the
// map of the view node `through`.
struct KernelInput {
  Node* node;
  const Node* through;
  const ViewMap* view;
  const char* reason;  // why it is read from memory rather than computed in the kernel
};

struct Kernel {
  enum class Kind {
    elementwise,  // `body` computed per element; body.back() == root
    reduce,       // root reduces the value `body` computes (or its input, when body is empty)
    matmul,       // a library call
    materialize,  // root is a view whose values are wanted: copy through the map
    single,       // any other op, run alone
  };
  Kind kind;
  Node* root;
  std::vector<Node*> body;  // fused elementwise nodes, inputs first
  std::vector<KernelInput> inputs;
  // Body nodes other than root whose values are stored too (elementwise kernels only): a
  // kernel that consumes all uses of another kernel's result takes that kernel in, so values
  // such as an optimiser's new state and the new parameter computed from it come from one pass.
  std::vector<Node*> stored;
};

// Whether the fused interpreter evaluates this op per element.
bool is_elementwise(const Node& node);

// What a backend's kernels can compute, which decides what its schedule may fuse. A cut the policy
// makes is printed by describe() with its reason, like every other cut. The defaults are the CPU
// backend's.
struct FusionPolicy {
  bool chains = true;             // elementwise producers computed in their elementwise readers
  bool into_reductions = true;    // elementwise producers computed in the reductions reading them
  bool reordering_views = false;  // producers fused although read through a view that reorders
                                  // elements (the CPU interpreter computes a fused producer in
                                  // its reader's order; a code generator can index instead)
  bool host_callables = true;     // custom_map inside fused kernels (a C++ callable runs on the
                                  // host: a device backend leaves it to the host fallback)
  bool multi_output = true;       // a kernel takes in the producer whose result only it reads
                                  // (with chains only)
  std::size_t max_ops = 0;        // the most ops one kernel computes (0: no limit): a code
                                  // generator's compile time grows with the kernel's length
  bool narrow_types = false;      // kernels of the types stored narrower than computed (f16,
                                  // bf16, bool): without them, a node that has or reads such
                                  // values is a kernel of its own, run by the reference kernel on
                                  // the host
  bool complex_types = false;     // fused kernels of c64 and c128: without them, a node that
                                  // has or reads complex values is a kernel of its own, run by
                                  // the reference kernel on the host (see below)
  bool complex_single_kernels = false;  // without complex_types: the backend's unfused kernels
                                       // are offered complex nodes all the same, and it returns
                                       // unsupported for those it has no kernel of (the host
                                       // then runs them)
  // Without complex_types: the elementwise nodes of complex values that the backend's fused
  // kernels compute all the same (null: none); the others are kernels of their own.
  bool (*complex_elementwise)(const Node& n) = nullptr;
};

// Whether the node's values or its inputs' are of a narrow type (is_narrow: f16, bf16, bool).
bool touches_narrow_types(const Node& n);
// Whether the node's values or its inputs' are complex.
bool touches_complex_types(const Node& n);
// Whether a backend with this policy computes the node inside its fused kernels (by its types).
inline bool fusable_types(const Node& n, const FusionPolicy& policy) {
  return (policy.narrow_types || !touches_narrow_types(n)) &&
         (policy.complex_types || !touches_complex_types(n) ||
          (policy.complex_elementwise != nullptr && policy.complex_elementwise(n)));
}
// Whether the runtime leaves the node to the host without offering it to the backend (inline:
// the runtime asks for every kernel it runs).
inline bool left_to_host(const Node& n, const FusionPolicy& policy) {
  return (!policy.narrow_types && touches_narrow_types(n)) ||
         (!policy.complex_types && !policy.complex_single_kernels && touches_complex_types(n));
}

std::vector<Kernel> schedule(std::span<Node* const> targets, const FusionPolicy& policy = {});
const char* kind_name(Kernel::Kind kind);
std::string describe(const std::vector<Kernel>& kernels);

}  // namespace kiln::detail
