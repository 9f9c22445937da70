/// @file
/// kiln::distributed: data-parallel training across processes and machines on MPI. The same
/// program runs as N processes (ranks), started by the cluster's launcher:
///
///   mpirun -np 4 ./train            # OpenMPI, one machine or a hostfile's machines
///   srun -n 4 ./train               # Slurm
///
///   namespace dist = kiln::distributed;
///   dist::init();                                        // joins the launcher's world
///   nn::DistributedDataParallel ddp(model);              // parameters from rank 0
///   data::DataLoader loader(train, {.batch_size = 64,
///       .sampler = data::DistributedSampler::make(n, {.num_replicas = dist::world_size(),
///                                                      .rank = dist::rank()})});
///   ...
///   { GradientContext c; loss = nn::cross_entropy(ddp(x), y); }
///   ddp.backward(loss);   // gradients averaged across ranks, communication overlapping compute
///   opt.step();           // the same update on every rank
///
/// Collectives are eager: each evaluates its operand and communicates when it is called, and
/// returns a new tensor (kiln's tensors are immutable). A collective is a rendezvous between
/// processes that must happen at the same place in every rank's sequence, while kiln evaluates a
/// lazy node when (and if) something reads it, which differs between ranks (rank 0 prints a loss,
/// the others do not). The *_async forms give back a Work handle at once, so communication
/// overlaps the computation that follows; DistributedDataParallel uses them to reduce each bucket
/// of gradients while the backward pass computes the next.
///
/// Every collective first exchanges a small header (which collective, dtype, shape, root) so that
/// ranks calling different collectives, or with tensors of different shapes or dtypes, fail on
/// every rank with an error naming the ranks and their shapes (incompatible_shapes) instead of
/// corrupting memory or hanging. A rank that never joins or never reaches a collective makes the
/// others fail after the timeout (io_error); the process group is then unusable and the program
/// should exit (the launcher ends the other ranks).
///
/// Without MPI at build time (libopenmpi-dev), available() is false and init() throws
/// io_error saying so.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "kiln/nn.hpp"
#include "kiln/tensor.hpp"

namespace kiln::distributed {

/// Whether this build of kiln has the MPI process group.
bool available();
/// Whether the environment names a launcher's world (mpirun's OMPI_COMM_WORLD_SIZE, PMI_SIZE,
/// Slurm's SLURM_NTASKS under srun): a program that also runs alone asks this before init().
bool launched();

struct InitOptions {
  /// How long init and every collective wait for the other ranks before failing (io_error).
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

/// Joins the world the launcher started (a process started without a launcher is a world of
/// one). Throws io_error without MPI, when called twice, after finalize(), or when the other
/// ranks do not join within the timeout.
void init(const InitOptions& options = {});
bool is_initialized();
/// Leaves the world: waits for this rank's outstanding collectives, then MPI_Finalize (which
/// waits for every rank to finalize). Called at exit if the program does not. Once finalized,
/// MPI cannot start again in this process. After a failure (a timeout) it leaves MPI as it is,
/// so that the process can exit and the launcher ends the job.
void finalize();

/// This process's rank in [0, world_size()) and the number of processes (io_error before init).
int rank();
int world_size();
/// The timeout of the following collectives.
void set_timeout(std::chrono::milliseconds timeout);

/// Returns when every rank has called it.
void barrier();

enum class ReduceOp { sum, mean, max, min };

/// A collective in flight. wait() returns its result (rethrowing its error); the handle may be
/// copied, and dropped without waiting (the collective still completes, in order).
class Work {
 public:
  Work() = default;
  bool defined() const { return state_ != nullptr; }
  /// Whether the result is ready (wait() then returns at once).
  bool completed() const;
  /// Blocks until the collective is done and returns its result.
  Tensor wait() const;

  struct State;
  explicit Work(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

/// The element-wise reduction of `t` over all ranks, on every rank. Every dtype: sum and mean of
/// floats and complex values, sum/max/min of integers, and of booleans as or (sum, max) and and
/// (min); f16 and bf16 are reduced in f32 and rounded once. Mean is of floating types only
/// (wrong_type otherwise). Same shape and dtype on every rank.
Tensor all_reduce(const Tensor& t, ReduceOp op = ReduceOp::sum);
Work all_reduce_async(const Tensor& t, ReduceOp op = ReduceOp::sum);
/// Rank `root`'s tensor on every rank; the others pass a tensor of the same shape and dtype
/// (its values are not read).
Tensor broadcast(const Tensor& t, int root = 0);
Work broadcast_async(const Tensor& t, int root = 0);
/// Every rank's tensor, concatenated along a new first dimension in rank order:
/// [world_size, ...t's shape] (PyTorch's all_gather_into_tensor of stacked inputs).
Tensor all_gather(const Tensor& t);
Work all_gather_async(const Tensor& t);
/// The reduction of `t` over all ranks, split along dimension 0 into world_size() blocks, of
/// which this rank gets block rank(): t's first dimension must divide by world_size().
Tensor reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::sum);
Work reduce_scatter_async(const Tensor& t, ReduceOp op = ReduceOp::sum);

}  // namespace kiln::distributed

namespace kiln::nn {

struct DistributedDataParallelOptions {
  /// The gradients of parameters are reduced in buckets of about this many megabytes (2^20
  /// bytes), in reverse order of the parameters (the order the backward pass computes them);
  /// PyTorch's default. A parameter larger than this is a bucket of its own.
  double bucket_cap_mb = 25.0;
  /// The first bucket (the last layers' gradients, computed first) is smaller, as in PyTorch, so
  /// that communication starts early in the backward pass.
  double first_bucket_cap_mb = 1.0;
  /// Start each bucket's reduction as soon as the backward pass has computed its gradients, so
  /// that communication overlaps the rest of the pass; false reduces every bucket after it.
  bool overlap = true;
  /// Before each forward, give every rank rank 0's module buffers (BatchNorm's running
  /// statistics), as PyTorch does.
  bool broadcast_buffers = true;
};

/// Data-parallel training of `module` (PyTorch's DistributedDataParallel): every rank holds the
/// whole model and trains on its own part of each batch. Construction gives every rank rank 0's
/// parameters and buffers; backward(loss) computes this rank's gradients, averages them over the
/// ranks, and leaves the average as each parameter's accumulated gradient (grad()), so that the
/// optimiser's step() makes the same update on every rank and the parameters stay bit-identical.
/// Gradients of a parameter that the loss does not use are zero on that rank and still averaged.
/// Needs distributed::init() first; the module must outlive this object and every rank must
/// build the same module (the same parameters in the same order, checked: incompatible_shapes).
class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(Module& module, DistributedDataParallelOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  Module& module() const { return module_; }
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }
  /// As loss.backward() on one process: evaluates loss (a one-element tensor built in a
  /// GradientContext) and the gradients of the trained parameters, reduced to their mean over
  /// the ranks and added to each parameter's grad(). Afterwards loss.item() costs nothing.
  void backward(const Tensor& loss);
  /// Buckets of the last backward(), and the seconds it waited for communication after its
  /// gradients were computed (what the overlap did not hide).
  std::size_t buckets() const;
  double last_wait_seconds() const;

 private:
  struct State;
  Module& module_;
  DistributedDataParallelOptions options_;
  std::unique_ptr<State> s_;
};

/// save_checkpoint on rank 0 only, then a barrier: when it returns on any rank, the file is
/// complete (write it to storage every rank can read to resume with load_checkpoint on each).
void save_checkpoint_on_rank0(const Module& module, const Optimizer& optimizer,
                              const std::string& path,
                              const std::vector<std::pair<std::string, Tensor>>& extra = {});

}  // namespace kiln::nn
