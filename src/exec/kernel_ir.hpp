// The linear IR of a fused elementwise kernel, shared by every backend: a list of loads (a value
// read from memory into a register) and steps (an op from registers into a register), in an
// order where every value is computed before it is read. Registers are reused once their value
// is dead, so a fused chain of any length needs only a few. The CPU executor interprets it chunk
// by chunk; a code generator renders each step from the registry's C template and each load as
// index arithmetic over its view.
//
// A kernel names nodes by their positions in the graph's structure (schedule_cache.hpp), so the
// schedule cache keeps it for every later graph of the same structure.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "graph/node.hpp"
#include "graph/view.hpp"

namespace kiln::detail {

class GraphStructure;

struct IrStep {
  Op op = Op::store;
  DType dtype = DType::f32;      // the type of the values in its register: the node's type, or
                                 // f32 for a 16-bit float node (arithmetic_type)
  DType rounds_to = DType::f32;  // the node's type: where it is a 16-bit float, the values are
                                 // rounded to it in the register (and stored as it)
  DType compute = DType::f32;    // the type the op computes in
  int arity = 0;
  int args[3] = {};              // registers
  DType arg_types[3] = {};       // the types of the values in them
  std::shared_ptr<const CustomKernel> custom;  // custom_map
  // Which of its own loops a backend runs the step with, chosen by the backend after lowering
  // (0: its general path).
  std::uint8_t loop = 0;
};

struct IrInstruction {
  int load = -1;  // an index into KernelIr::loads, or -1 for a step
  IrStep step;
  int out = 0;     // register
  int store = -1;  // for a step whose node the kernel also stores: its index in Kernel::stored
};

// A value read from memory: the buffer of the node at position `node` of the graph's structure,
// through the map of the view node at `through` (or -1: as it is).
struct IrLoad {
  int node;
  int through;
  DType type;  // the type in the register: the buffer's, or f32 for a 16-bit float buffer
  bool constant;  // one value broadcast everywhere: its register is filled once, never reused
  // The view's map prepared once (coalesced into one strided layer), when the backend made one.
  std::shared_ptr<const ViewLayer> layer;
};

struct KernelIr {
  std::vector<IrLoad> loads;
  std::vector<IrInstruction> code;
  int registers = 0;
  int result = -1;  // register
};

// What a backend says about a value read from memory (`data`, read through the view node
// `view`, or as it is when null): whether it is one value broadcast everywhere, and the view's
// prepared map, if the backend makes one.
struct LoadFacts {
  bool constant = false;
  std::shared_ptr<const ViewLayer> layer;
};
using DescribeLoad = std::function<LoadFacts(const Node& data, const Node* view)>;

// The type an elementwise node computes in, from the types of its operands' registers.
DType compute_type(const Node& n, const DType* arg_types);

// Lowers the fused nodes `body` (inputs first) into `ir`; the values they read from memory must
// be computed already. At most 16 constant loads get registers of their own.
void lower_kernel(const std::vector<Node*>& body, const std::vector<Node*>& stored,
                  const GraphStructure& structure, const DescribeLoad& describe, KernelIr& ir);

}  // namespace kiln::detail
