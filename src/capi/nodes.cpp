// C API: nodes and their reference counting. Creating nodes (fCreateGraph, constants, random
// and index nodes), the registry of live nodes, fFreeGraph, fOptimizeMemory and the inverse
// broadcasting mark.
#include <climits>
#include <cstring>
#include <deque>
#include <mutex>
#include <utility>
#include <string>
#include <unordered_set>

#include "capi/capi.hpp"
#include "graph/node.hpp"
#include "graph/op_registry.hpp"
#include "graph/values.hpp"
#include "kiln/ops.hpp"

namespace kiln::capi {

namespace {

// The memory of the most recently freed nodes is held back before it goes to the allocator:
// a freed node passed to a function is then found not live (an INVALID_SELECT) instead of
// landing on a new node that the allocator put at the same address.
constexpr std::size_t kFreedNodesHeld = 1024;

// Every node made here and not freed yet. Guarded by `mutex`, as are the reference counters and
// the held memory of freed nodes.
struct Registry {
  std::mutex mutex;
  std::unordered_set<const FGraphNode*> live;
  std::deque<void*> freed;
};
Registry& registry() {
  // Never destroyed, so that nodes can still be freed while static objects are torn down.
  static Registry* r = new Registry;
  return *r;
}

bool is_live_locked(const FGraphNode* p) { return registry().live.count(p) != 0; }

// Frees `root` (whose counter is 0) and every predecessor whose counter drops to 0 on the way.
void free_locked(FGraphNode* root) {
  std::vector<FGraphNode*> pending{root};
  while (!pending.empty()) {
    FGraphNode* g = pending.back();
    pending.pop_back();
    auto* node = static_cast<CNode*>(g);
    for (FGraphNode* p : node->preds) {
      if (p == nullptr || !is_live_locked(p) || p->reference_counter == 0) continue;
      if (--p->reference_counter == 0) pending.push_back(p);
    }
    registry().live.erase(g);
    node->~CNode();
    auto& freed = registry().freed;
    freed.push_back(node);
    if (freed.size() > kFreedNodesHeld) {
      ::operator delete(freed.front());
      freed.pop_front();
    }
  }
}

}  // namespace

CNode* lookup(const FGraphNode* p) noexcept {
  if (p == nullptr) return nullptr;
  std::lock_guard lock(registry().mutex);
  return is_live_locked(p) ? static_cast<CNode*>(const_cast<FGraphNode*>(p)) : nullptr;
}

CNode& Call::node(const FGraphNode* p, const char* what) {
  if (p == nullptr) throw CError(INVALID_SELECT, std::string(what) + " is NULL");
  CNode* n = lookup(p);
  if (n == nullptr)
    throw CError(INVALID_SELECT, std::string(what) +
                                     " is not a live node (already freed, or not made by flint.h)");
  shapes_.push_back(n->tensor.shape());
  return *n;
}

Tensor Call::operand(const FGraphNode* p, const char* what) {
  CNode& n = node(p, what);
  return n.operation.broadcasting_mode != 0 ? n.tensor.inverse_broadcast() : n.tensor;
}

DType to_dtype(FType t) {
  const int v = static_cast<int>(t);
  if (v < F_INT32 || v > F_FLOAT64)
    throw CError(WRONG_TYPE, "unknown data type " + std::to_string(v) +
                                 " (expected F_INT32, F_INT64, F_FLOAT32 or F_FLOAT64)");
  return static_cast<DType>(v);
}

FType to_ftype(DType t) {
  switch (t) {
    case DType::i32: return F_INT32;
    case DType::i64: return F_INT64;
    case DType::f32: return F_FLOAT32;
    case DType::f64: return F_FLOAT64;
    case DType::f16:
    case DType::bf16:
    case DType::boolean:
    case DType::u8:
    case DType::i8:
    case DType::i16:
    case DType::c64:
    case DType::c128: break;
  }
  throw CError(WRONG_TYPE, std::string("a ") + dtype_name(t) +
                               " tensor: the Flint C API has the types F_INT32, F_INT64, "
                               "F_FLOAT32 and F_FLOAT64 only (convert it to one of them first)");
}

Shape to_shape(const std::size_t* shape, int dimensions, const char* what) {
  if (dimensions < 1)
    throw CError(ILLEGAL_DIMENSIONALITY, std::string(what) + " needs at least 1 dimension, got " +
                                             std::to_string(dimensions));
  if (shape == nullptr) throw CError(INVALID_SELECT, std::string(what) + " is NULL");
  Shape s(static_cast<std::size_t>(dimensions));
  for (int i = 0; i < dimensions; ++i) {
    if (shape[i] > static_cast<std::size_t>(INT64_MAX))
      throw CError(ILLEGAL_DIMENSION, std::string(what) + " has size " + std::to_string(shape[i]) +
                                          " in dimension " + std::to_string(i) + ", too large");
    s[i] = static_cast<std::int64_t>(shape[i]);
  }
  return s;
}

int to_axis(unsigned int axis, const char* what) {
  if (axis > static_cast<unsigned int>(INT_MAX))
    throw CError(ILLEGAL_DIMENSION, std::string(what) + " " + std::to_string(axis) + " too large");
  return static_cast<int>(axis);
}

// From the registry's Flint column: FOTHER for the ops Flint has no type of its own for.
FOperationType op_type_of(const Tensor& t) {
  switch (t.node()->op) {
#define KILN_OP_ROW(name, kind, arity, operands, result, gradient, flint) \
  case kiln::detail::Op::name: return flint;
    KILN_OP_ROWS()
#undef KILN_OP_ROW
  }
  return FOTHER;
}

namespace {
// Guards the result fields of every CNode: several threads may execute the same node.
std::mutex& result_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

void attach_result(CNode& n) {
  const auto& node = n.tensor.node();
  std::lock_guard lock(result_mutex());
  if (!detail::has_values(*node)) throw CError(INTERNAL_ERROR, "the executed node holds no result");
  std::shared_ptr<detail::Buffer> values = detail::host_buffer(*node);  // synchronised
  // Attached already: no write, so a thread reading result_data meanwhile reads a settled value.
  if (n.result_data != nullptr && n.result_buffer == values) return;
  n.result_buffer = std::move(values);
  // The host copy through the read-only accessor: the caller only reads result_data, and a
  // device copy of the values stays valid for the device's next use of them.
  n.result.data = const_cast<void*>(std::as_const(*n.result_buffer).data());
  n.result.num_entries = static_cast<std::size_t>(n.result_buffer->numel());
  n.result_device = n.result_buffer->first_device_copy();
  n.result.mem_id = n.result_device ? static_cast<_cl_mem*>(n.result_device->native_handle())
                                    : nullptr;
  n.result_data = &n.result;
}

FResultData* attached_result(CNode& n) {
  std::lock_guard lock(result_mutex());
  return n.result_data;
}

void attach_store(CNode& n, std::shared_ptr<detail::Buffer> buffer) {
  if (!buffer) throw CError(INTERNAL_ERROR, "a store node without values");
  n.store_buffer = std::move(buffer);
  n.store.data = n.store_buffer->data();
  n.store.num_entries = static_cast<std::size_t>(n.store_buffer->numel());
  n.operation.additional_data = &n.store;
  n.operation.op_type = FSTORE;
}

FGraphNode* make_node(Tensor t, FOperationType op, std::initializer_list<FGraphNode*> preds,
                      std::unique_ptr<CallArguments> arguments) {
  if (t.rank() == 0) t = reshape(t, {1});
  // Flint's comparisons give F_INT32 0/1; kiln's give bool, which the C API does not have.
  if (is_bool(t.dtype())) t = convert(t, DType::i32);
  const bool eager = eager_enabled();
  if (eager) t.eval();
  auto node = std::make_unique<CNode>();
  node->tensor = std::move(t);
  for (auto d : node->tensor.shape()) node->shape.push_back(static_cast<std::size_t>(d));
  node->preds.assign(preds.begin(), preds.end());
  FGraphNode& c = *node;
  c.num_predecessor = static_cast<int>(node->preds.size());
  c.predecessors = node->preds.empty() ? nullptr : node->preds.data();
  c.operation.shape = node->shape.data();
  c.operation.dimensions = static_cast<int>(node->shape.size());
  c.operation.op_type = op;
  c.operation.data_type = to_ftype(node->tensor.dtype());
  c.operation.additional_data = nullptr;
  c.operation.broadcasting_mode = 0;
  c.reference_counter = 0;
  c.result_data = nullptr;
  c.gradient_data = nullptr;
  if (arguments) {
    CallArguments& a = *arguments;
    a.slice = {a.first.data(), a.second.data(), a.third.data()};
    a.extend = {a.sizes.data(), a.third.data()};
    a.window = {a.sizes.data(), a.steps.data()};
    if (op == FSLICE) c.operation.additional_data = &a.slice;
    if (op == FEXTEND) c.operation.additional_data = &a.extend;
    if (op == FSLIDING_WINDOW) c.operation.additional_data = &a.window;
    node->arguments = std::move(arguments);
  }
  if (op == FSTORE) {
    const detail::Node& values = *node->tensor.node();
    attach_store(*node, detail::has_values(values) ? detail::host_buffer(values) : nullptr);
  }
  if (eager) attach_result(*node);

  std::lock_guard lock(registry().mutex);
  registry().live.insert(node.get());
  for (FGraphNode* p : node->preds) ++p->reference_counter;
  return node.release();
}

FGraphNode* make_scalar_node(Tensor t, FOperationType op, FGraphNode* operand, Scalar scalar,
                             ScalarSide side) {
  const Shape& shape = static_cast<CNode*>(operand)->tensor.shape();
  FGraphNode* constant = make_node(full(shape, scalar, scalar.dtype()), FGEN_CONSTANT);
  try {
    return side == ScalarSide::left ? make_node(std::move(t), op, {constant, operand})
                                    : make_node(std::move(t), op, {operand, constant});
  } catch (...) {
    std::lock_guard lock(registry().mutex);
    free_locked(constant);  // nothing refers to it yet
    throw;
  }
}

}  // namespace kiln::capi

using namespace kiln;
using namespace kiln::capi;

extern "C" {

FGraphNode* fCreateGraph(const void* data, const int num_entries, const enum FType data_type,
                         const size_t* shape, const int dimensions) {
  Call call("fCreateGraph");
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    const DType dtype = to_dtype(data_type);
    const Shape s = to_shape(shape, dimensions);
    if (num_entries < 0)
      throw CError(ILLEGAL_DIMENSION, "negative number of entries " + std::to_string(num_entries));
    std::int64_t count = 1;
    bool overflow = false;
    for (auto d : s) overflow |= __builtin_mul_overflow(count, d, &count);
    if (overflow || count != num_entries)
      throw CError(INCOMPATIBLE_SHAPES, std::to_string(num_entries) +
                                            " entries do not fill shape " + shape_to_string(s));
    if (data == nullptr && num_entries > 0) throw CError(INVALID_SELECT, "data is NULL");
    return make_node(Tensor::from_bytes(data, dtype, s), FSTORE);
  });
}

#define KILN_CONSTANT(fn, T, CT)                                                        \
  FGraphNode* fn(const T value, const size_t* shape, const int dimensions) {            \
    Call call(#fn);                                                                     \
    return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {                       \
      const Scalar v(static_cast<CT>(value));                                           \
      return make_node(full(to_shape(shape, dimensions), v, v.dtype()), FGEN_CONSTANT); \
    });                                                                                 \
  }
KILN_CONSTANT(fconstant_i, int, std::int32_t)
KILN_CONSTANT(fconstant_l, long, long)
KILN_CONSTANT(fconstant_f, float, float)
KILN_CONSTANT(fconstant_d, double, double)
#undef KILN_CONSTANT

FGraphNode* frandom(const size_t* shape, const int dimensions) {
  Call call("frandom");
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    return make_node(uniform(to_shape(shape, dimensions), DType::f64), FGEN_RANDOM);
  });
}

FGraphNode* farange(const size_t* shape, const int dimensions, const int ax) {
  Call call("farange");
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    return make_node(arange(to_shape(shape, dimensions), ax), FGEN_ARANGE);
  });
}

void fFreeGraph(FGraphNode* graph) {
  Call call("fFreeGraph");
  guarded_void(call, [&] {
    if (graph == nullptr) throw CError(INVALID_SELECT, "node is NULL");
    std::lock_guard lock(registry().mutex);
    if (!is_live_locked(graph))
      throw CError(INVALID_SELECT,
                   "node is not a live node (already freed, or not made by flint.h)");
    if (graph->reference_counter != 0) {
      log_message(F_WARNING, ("fFreeGraph: the node is still used by " +
                              std::to_string(graph->reference_counter) +
                              " other node(s); it is not freed")
                                 .c_str());
      return;
    }
    free_locked(graph);
  });
}

FGraphNode* fOptimizeMemory(FGraphNode* node) {
  Call call("fOptimizeMemory");
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    CNode& n = call.node(node, "node");
    const auto& kn = n.tensor.node();
    if (attached_result(n) == nullptr || kn->watched.load() || kn->in_gradient_context)
      return node;
    // The result as a leaf: the graph behind the node is released.
    auto leaf = std::make_shared<detail::Node>(detail::Op::store, kn->dtype, kn->shape,
                                               std::vector<detail::NodePtr>{});
    detail::set_host_values(*leaf, n.result_buffer);
    Tensor stored(std::move(leaf));
    std::vector<FGraphNode*> preds;
    preds.reserve(n.preds.size());

    std::lock_guard lock(registry().mutex);
    attach_store(n, n.result_buffer);
    n.tensor = std::move(stored);
    preds.swap(n.preds);
    n.num_predecessor = 0;
    n.predecessors = nullptr;
    for (FGraphNode* p : preds) {
      if (!is_live_locked(p) || p->reference_counter == 0) continue;
      if (--p->reference_counter == 0) free_locked(p);
    }
    return node;
  });
}

void fEnforceInverseBroadcasting(FGraphNode* node) {
  Call call("fEnforceInverseBroadcasting");
  guarded_void(call, [&] { call.node(node, "node").operation.broadcasting_mode = 1; });
}

void fUnenforceInverseBroadcasting(FGraphNode* node) {
  Call call("fUnenforceInverseBroadcasting");
  guarded_void(call, [&] { call.node(node, "node").operation.broadcasting_mode = 0; });
}

}  // extern "C"
