// kiln::distributed's tensor functions: each checks its operand, evaluates it, queues the
// collective on the process group (world.hpp) and hands back a Work whose result is a new leaf.
#include <cstdlib>
#include <mutex>

#include "api/builder.hpp"
#include "distributed/world.hpp"
#include "graph/buffer.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"
#include "kiln/distributed.hpp"
#include "kiln/error.hpp"
#include "kiln/ops.hpp"

namespace kiln::distributed {

namespace detail {
const char* collective_name(Collective c) {
  switch (c) {
    case Collective::barrier: return "barrier";
    case Collective::all_reduce: return "all_reduce";
    case Collective::broadcast: return "broadcast";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
  }
  return "collective";
}
}  // namespace detail

struct Work::State {
  std::shared_future<void> done;
  std::shared_ptr<kiln::detail::Buffer> output;
  DType user_dtype = DType::f32;
  Shape result_shape;
  std::mutex mutex;
  Tensor value;  // made by the first wait()
};

bool Work::completed() const {
  if (!state_) return false;
  return state_->done.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

Tensor Work::wait() const {
  if (!state_) throw Error(ErrorCode::invalid_select, "distributed::Work::wait: an empty handle");
  state_->done.get();  // the collective's error, if any, on every wait
  std::lock_guard lock(state_->mutex);
  if (!state_->value.defined() && state_->output) {
    auto leaf = std::make_shared<kiln::detail::Node>(kiln::detail::Op::store, state_->output->dtype(),
                                                     state_->result_shape,
                                                     std::vector<kiln::detail::NodePtr>{});
    kiln::detail::set_host_values(*leaf, state_->output);
    Tensor t(std::move(leaf));
    state_->value = t.dtype() == state_->user_dtype ? t : convert(t, state_->user_dtype);
  }
  return state_->value;
}

bool available() { return detail::world_available(); }

bool launched() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

void init(const InitOptions& options) { detail::world_init(options.timeout); }
bool is_initialized() { return detail::world_initialized(); }
void finalize() { detail::world_finalize(); }
int rank() { return detail::world_rank("rank"); }
int world_size() { return detail::world_size("world_size"); }
void set_timeout(std::chrono::milliseconds timeout) { detail::world_set_timeout(timeout); }

void barrier() {
  auto t = std::make_shared<detail::Transfer>();
  t->kind = detail::Collective::barrier;
  t->op_name = "barrier";
  detail::world_submit(std::move(t)).get();
}

namespace {

using detail::Collective;

const char* reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::mean: return "mean";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

// The reductions MPI can do on each type (mean: a sum divided afterwards).
void check_reduction(const char* op, const Tensor& t, ReduceOp reduce) {
  const DType d = t.dtype();
  const bool refused = (reduce == ReduceOp::mean && !is_inexact(d)) ||
                       (is_complex(d) && (reduce == ReduceOp::max || reduce == ReduceOp::min));
  if (refused)
    kiln::detail::fail(ErrorCode::wrong_type, std::string("distributed::") + op,
                       std::string("no ") + reduce_name(reduce) + " of " + dtype_name(d) +
                           " values (" + shape_to_string(t.shape()) + ")");
}

Work submit(Collective kind, const char* op, const Tensor& t, ReduceOp reduce, int root) {
  const std::string name = std::string("distributed::") + op;
  kiln::detail::node_of(t, name);
  const int ranks = detail::world_size(op);
  auto transfer = std::make_shared<detail::Transfer>();
  transfer->kind = kind;
  transfer->op_name = op;
  transfer->user_dtype = t.dtype();
  transfer->user_shape = t.shape();
  transfer->reduce = reduce;
  transfer->root = root;
  // 16-bit floats are reduced in f32, so sums of many ranks round once.
  const bool widen = is_narrow_float(t.dtype()) &&
                     (kind == Collective::all_reduce || kind == Collective::reduce_scatter);
  const Tensor operand = widen ? convert(t, DType::f32) : t;
  operand.eval();
  std::shared_ptr<kiln::detail::Buffer> input = kiln::detail::host_buffer(*operand.node());
  transfer->wire_dtype = operand.dtype();
  transfer->count = operand.numel();
  auto state = std::make_shared<Work::State>();
  state->user_dtype = t.dtype();
  std::int64_t out_count = transfer->count;
  state->result_shape = t.shape();
  if (kind == Collective::all_gather) {
    out_count = transfer->count * ranks;
    state->result_shape.insert(state->result_shape.begin(), ranks);
  } else if (kind == Collective::reduce_scatter) {
    if (t.rank() == 0 || t.shape()[0] % ranks != 0)
      kiln::detail::fail(ErrorCode::incompatible_shapes, name,
                         "the first dimension of " + shape_to_string(t.shape()) +
                             " must divide by the world size " + std::to_string(ranks));
    out_count = transfer->count / ranks;
    state->result_shape[0] /= ranks;
  }
  state->output = std::make_shared<kiln::detail::Buffer>(operand.dtype(), out_count);
  // The operand's buffer is read on the communication thread; its graph node may go.
  const void* bytes = input->data();
  transfer->input = std::shared_ptr<const void>(input, bytes);
  transfer->output = std::shared_ptr<void>(state->output, state->output->data());
  state->done = detail::world_submit(std::move(transfer));
  return Work(std::move(state));
}

}  // namespace

Work all_reduce_async(const Tensor& t, ReduceOp op) {
  kiln::detail::node_of(t, "distributed::all_reduce");
  check_reduction("all_reduce", t, op);
  return submit(Collective::all_reduce, "all_reduce", t, op, 0);
}
Tensor all_reduce(const Tensor& t, ReduceOp op) { return all_reduce_async(t, op).wait(); }

Work broadcast_async(const Tensor& t, int root) {
  const int ranks = detail::world_size("broadcast");
  if (root < 0 || root >= ranks)
    kiln::detail::fail(ErrorCode::invalid_select, "distributed::broadcast",
                       "root " + std::to_string(root) + " outside the world of " +
                           std::to_string(ranks) + " ranks");
  return submit(Collective::broadcast, "broadcast", t, ReduceOp::sum, root);
}
Tensor broadcast(const Tensor& t, int root) { return broadcast_async(t, root).wait(); }

Work all_gather_async(const Tensor& t) {
  return submit(Collective::all_gather, "all_gather", t, ReduceOp::sum, 0);
}
Tensor all_gather(const Tensor& t) { return all_gather_async(t).wait(); }

Work reduce_scatter_async(const Tensor& t, ReduceOp op) {
  kiln::detail::node_of(t, "distributed::reduce_scatter");
  check_reduction("reduce_scatter", t, op);
  return submit(Collective::reduce_scatter, "reduce_scatter", t, op, 0);
}
Tensor reduce_scatter(const Tensor& t, ReduceOp op) { return reduce_scatter_async(t, op).wait(); }

}  // namespace kiln::distributed
