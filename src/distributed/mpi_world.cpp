// The process group on MPI. One thread of each process (the communication thread) initialises
// MPI, runs every collective and finalises MPI, so MPI needs no more than MPI_THREAD_FUNNELED and
// the caller's threads never block inside MPI: they queue a collective and wait on its future
// (or go on computing, which is how a data-parallel step overlaps communication).
//
// Each collective runs as non-blocking MPI calls polled until done or until the timeout, so a
// rank that stopped makes the others fail instead of hang. Before any data moves, the ranks
// exchange a header (collective, dtype, shape, root, reduction) and compare it, so a mismatch is
// an error on every rank, and no rank sends bytes another rank did not size its buffer for.
// MPI's C interface only (the deprecated C++ bindings need a library of their own).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <complex>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distributed/world.hpp"
#include "kiln/error.hpp"

namespace kiln::distributed::detail {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(ErrorCode code, const std::string& op, const std::string& what) {
  throw Error(code, "distributed::" + op + ": " + what);
}

std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void check(int code, const std::string& op, const char* call) {
  if (code != MPI_SUCCESS) fail(ErrorCode::io_error, op, std::string(call) + " failed: " + mpi_message(code));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::f16:
    case DType::bf16: return MPI_UINT16_T;  // moved, never reduced (collectives.cpp widens them)
    case DType::boolean: return MPI_C_BOOL;
    case DType::u8: return MPI_UINT8_T;
    case DType::i8: return MPI_INT8_T;
    case DType::i16: return MPI_INT16_T;
    case DType::c64: return MPI_C_FLOAT_COMPLEX;
    case DType::c128: return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op, DType t) {
  if (t == DType::boolean) return op == ReduceOp::min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_SUM;
}

template <class T> void scale(void* data, std::int64_t n, double factor) {
  T* v = static_cast<T*>(data);
  for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(v[i] * static_cast<typename T::value_type>(factor));
}
template <class T> void scale_real(void* data, std::int64_t n, double factor) {
  T* v = static_cast<T*>(data);
  for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(v[i] * static_cast<T>(factor));
}

// The mean is the sum divided by the number of ranks, on every rank the same way.
void divide(void* data, DType t, std::int64_t n, int ranks) {
  const double factor = 1.0 / ranks;
  switch (t) {
    case DType::f32: scale_real<float>(data, n, factor); break;
    case DType::f64: scale_real<double>(data, n, factor); break;
    case DType::c64: scale<std::complex<float>>(data, n, factor); break;
    case DType::c128: scale<std::complex<double>>(data, n, factor); break;
    default: break;  // refused before it was queued
  }
}

// What every rank sends before a collective: enough to tell that all of them called the same one
// on tensors of one shape and dtype.
constexpr int header_length = 16;
constexpr int header_dims = 9;
using Header = std::array<std::int64_t, header_length>;

Header header_of(const Transfer& t) {
  Header h{};
  h[0] = static_cast<std::int64_t>(t.kind);
  h[1] = static_cast<std::int64_t>(t.user_dtype);
  h[2] = static_cast<std::int64_t>(t.reduce);
  h[3] = t.root;
  h[4] = static_cast<std::int64_t>(t.user_shape.size());
  h[5] = t.count;
  // A tensor of more dimensions than the header holds is compared through its element count and
  // a hash of the rest.
  std::uint64_t rest = 0;
  for (std::size_t d = 0; d < t.user_shape.size(); ++d) {
    if (d < header_dims - 1) h[6 + d] = t.user_shape[d];
    else rest = rest * 1000003u + static_cast<std::uint64_t>(t.user_shape[d]) + 1;
  }
  h[6 + header_dims - 1] = static_cast<std::int64_t>(rest);
  return h;
}

std::string describe(const Header& h) {
  const auto kind = static_cast<Collective>(h[0]);
  std::string s = collective_name(kind);
  if (kind == Collective::barrier) return s;
  s += " of ";
  s += dtype_name(static_cast<DType>(h[1]));
  Shape shape;
  for (std::int64_t d = 0; d < std::min<std::int64_t>(h[4], header_dims - 1); ++d)
    shape.push_back(h[6 + d]);
  s += ' ';
  s += shape_to_string(shape);
  if (h[4] > header_dims - 1) s += " (" + std::to_string(h[4]) + " dimensions)";
  if (kind == Collective::broadcast) s += " from rank " + std::to_string(h[3]);
  return s;
}

class World {
 public:
  static World& instance() {
    static World world;
    return world;
  }

  ~World() {
    // A program that returns from main without finalize(): MPI is finalised here, as MPI requires.
    try {
      finalize();
    } catch (...) {
      // At exit there is nobody to tell; the launcher reports a rank that did not finalise.
    }
  }

  void init(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (state_ == State::running) fail(ErrorCode::io_error, "init", "already initialised");
    if (state_ != State::fresh)
      fail(ErrorCode::io_error, "init",
           "the process group was finalised or failed, and MPI cannot start twice in a process");
    timeout_ms_.store(timeout.count());
    state_ = State::starting;
    lock.unlock();
    std::promise<void> started;
    std::future<void> joined = started.get_future();
    thread_ = std::thread([this, promise = std::move(started)]() mutable { run(std::move(promise)); });
    if (joined.wait_for(timeout) == std::future_status::timeout) {
      // MPI_Init waits for every rank of the job; the thread stays in it, left to the exit.
      lock.lock();
      state_ = State::abandoned;
      lock.unlock();
      thread_.detach();
      fail(ErrorCode::io_error, "init",
           "not every rank joined within " + std::to_string(timeout.count()) +
               " ms (a rank did not start, crashed, or has not reached init()); the launcher "
               "ends the job when this process exits");
    }
    try {
      joined.get();
    } catch (...) {
      thread_.join();
      lock.lock();
      state_ = State::failed;
      throw;
    }
  }

  bool initialized() {
    std::lock_guard lock(mutex_);
    return state_ == State::running || state_ == State::broken;
  }

  void finalize() {
    std::unique_lock lock(mutex_);
    if (state_ != State::running && state_ != State::broken) return;
    stopping_ = true;
    state_ = State::finalized;
    lock.unlock();
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  int rank(const char* op) {
    running_or_fail(op);
    return rank_;
  }
  int size(const char* op) {
    running_or_fail(op);
    return size_;
  }
  void set_timeout(std::chrono::milliseconds t) {
    if (t.count() <= 0) fail(ErrorCode::invalid_select, "set_timeout", "the timeout must be positive");
    timeout_ms_.store(t.count());
  }

  std::shared_future<void> submit(std::shared_ptr<Transfer> t) {
    Job job{std::move(t), {}};
    std::shared_future<void> done = job.done.get_future().share();
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::running && state_ != State::broken)
        fail(ErrorCode::io_error, job.transfer->op_name, not_running());
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    return done;
  }

 private:
  enum class State { fresh, starting, running, broken, finalized, failed, abandoned };
  struct Job {
    std::shared_ptr<Transfer> transfer;
    std::promise<void> done;
  };

  std::string not_running() const {
    switch (state_) {
      case State::fresh:
      case State::starting: return "the process group is not initialised (call distributed::init() first)";
      case State::finalized: return "the process group was finalised";
      default: return "the process group failed earlier: " + broken_;
    }
  }
  void running_or_fail(const char* op) {
    std::lock_guard lock(mutex_);
    if (state_ != State::running && state_ != State::broken) fail(ErrorCode::io_error, op, not_running());
  }

  // The communication thread: MPI from start to end.
  void run(std::promise<void> started) {
    try {
      start_mpi();
    } catch (...) {
      started.set_exception(std::current_exception());
      return;
    }
    {
      std::lock_guard lock(mutex_);
      if (state_ == State::abandoned) return;  // init() gave up on this process group
      state_ = State::running;
    }
    started.set_value();
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
        if (queue_.empty()) break;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        std::string failure;
        {
          std::lock_guard lock(mutex_);
          failure = broken_;
        }
        if (!failure.empty())
          fail(ErrorCode::io_error, job.transfer->op_name,
               "the process group failed earlier: " + failure);
        execute(*job.transfer);
        job.done.set_value();
      } catch (...) {
        job.done.set_exception(std::current_exception());
      }
    }
    bool healthy;
    {
      std::lock_guard lock(mutex_);
      healthy = broken_.empty();
    }
    // After a failure, collectives may still be pending against ranks that are gone: finalising
    // would wait for them. The process exits without, and the launcher ends the job.
    if (healthy && owns_mpi_) {
      MPI_Comm_free(&comm_);
      MPI_Finalize();
    }
  }

  void start_mpi() {
    int already = 0;
    MPI_Initialized(&already);
    if (already) {
      // The program started MPI itself; kiln calls it from its own thread, which needs
      // MPI_THREAD_MULTIPLE.
      int provided = 0;
      MPI_Query_thread(&provided);
      if (provided < MPI_THREAD_MULTIPLE)
        fail(ErrorCode::io_error, "init",
             "MPI was initialised by the program without MPI_THREAD_MULTIPLE; let kiln initialise "
             "it (distributed::init() before any MPI call) or ask for MPI_THREAD_MULTIPLE");
      owns_mpi_ = false;
    } else {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init", "MPI_Init_thread");
      owns_mpi_ = true;
    }
    // kiln's collectives on a communicator of their own: the program's MPI messages never mix.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "init", "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  // Polls until the request is complete; past the deadline the process group is broken.
  void complete(MPI_Request& request, const Transfer& t, Clock::time_point deadline,
                const char* stage) {
    for (int round = 0;; ++round) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), t.op_name, "MPI_Test");
      if (done) return;
      if (Clock::now() > deadline) {
        const std::string what =
            std::string(stage) + " did not complete within " +
            std::to_string(timeout_ms_.load()) + " ms: rank " + std::to_string(rank_) + " of " +
            std::to_string(size_) +
            " waited for ranks that stopped, are stuck, or called collectives in another order; "
            "the process group cannot be used any more";
        {
          std::lock_guard lock(mutex_);
          broken_ = "distributed::" + std::string(t.op_name) + ": " + what;
        }
        fail(ErrorCode::io_error, t.op_name, what);
      }
      // Yield first (a short collective ends within microseconds), then sleep: the compute
      // threads of this rank keep the cores while a long transfer is in flight.
      if (round < 64) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(round < 2000 ? 20 : 200));
    }
  }

  void agree(const Transfer& t, Clock::time_point deadline) {
    const Header mine = header_of(t);
    std::vector<std::int64_t> all(static_cast<std::size_t>(header_length) * size_);
    MPI_Request request;
    check(MPI_Iallgather(mine.data(), header_length, MPI_INT64_T, all.data(), header_length,
                         MPI_INT64_T, comm_, &request),
          t.op_name, "MPI_Iallgather");
    complete(request, t, deadline, "the rendezvous (the exchange of shapes)");
    for (int r = 0; r < size_; ++r) {
      Header theirs;
      std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(r) * header_length, header_length,
                  theirs.begin());
      if (theirs == mine) continue;
      fail(ErrorCode::incompatible_shapes, t.op_name,
           "the ranks disagree: rank " + std::to_string(rank_) + " called " + describe(mine) +
               ", rank " + std::to_string(r) + " called " + describe(theirs));
    }
  }

  void execute(Transfer& t) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_.load());
    agree(t, deadline);
    const MPI_Datatype type = mpi_type(t.wire_dtype);
    const std::size_t element = size_of(t.wire_dtype);
    const auto* in = static_cast<const char*>(t.input.get());
    auto* out = static_cast<char*>(t.output.get());
    MPI_Request request;
    switch (t.kind) {
      case Collective::barrier:
        check(MPI_Ibarrier(comm_, &request), t.op_name, "MPI_Ibarrier");
        complete(request, t, deadline, "the barrier");
        return;
      case Collective::all_reduce:
      case Collective::broadcast: {
        // MPI counts are int: a large tensor goes in pieces.
        constexpr std::int64_t piece = std::int64_t{1} << 30;
        if (t.kind == Collective::broadcast && rank_ == t.root)
          std::memcpy(out, in, static_cast<std::size_t>(t.count) * element);
        for (std::int64_t first = 0; first < t.count; first += piece) {
          const int n = static_cast<int>(std::min(piece, t.count - first));
          const std::size_t at = static_cast<std::size_t>(first) * element;
          if (t.kind == Collective::all_reduce)
            check(MPI_Iallreduce(in + at, out + at, n, type, mpi_op(t.reduce, t.wire_dtype), comm_,
                                 &request),
                  t.op_name, "MPI_Iallreduce");
          else
            check(MPI_Ibcast(out + at, n, type, t.root, comm_, &request), t.op_name, "MPI_Ibcast");
          complete(request, t, deadline, "the transfer");
        }
        if (t.kind == Collective::all_reduce && t.reduce == ReduceOp::mean)
          divide(out, t.wire_dtype, t.count, size_);
        return;
      }
      case Collective::all_gather:
      case Collective::reduce_scatter: {
        const std::int64_t block = t.kind == Collective::all_gather ? t.count : t.count / size_;
        if (block > INT_MAX)
          fail(ErrorCode::invalid_select, t.op_name,
               "more than 2^31 - 1 elements per rank (" + std::to_string(block) + ")");
        if (t.kind == Collective::all_gather)
          check(MPI_Iallgather(in, static_cast<int>(block), type, out, static_cast<int>(block),
                               type, comm_, &request),
                t.op_name, "MPI_Iallgather");
        else
          check(MPI_Ireduce_scatter_block(in, out, static_cast<int>(block), type,
                                          mpi_op(t.reduce, t.wire_dtype), comm_, &request),
                t.op_name, "MPI_Ireduce_scatter_block");
        complete(request, t, deadline, "the transfer");
        if (t.kind == Collective::reduce_scatter && t.reduce == ReduceOp::mean)
          divide(out, t.wire_dtype, block, size_);
        return;
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  State state_ = State::fresh;
  bool stopping_ = false;
  std::string broken_;  // why the process group failed; empty while it works
  std::thread thread_;
  std::atomic<std::int64_t> timeout_ms_{300000};
  bool owns_mpi_ = false;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

bool world_available() { return true; }
void world_init(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) fail(ErrorCode::invalid_select, "init", "the timeout must be positive");
  World::instance().init(timeout);
}
bool world_initialized() { return World::instance().initialized(); }
void world_finalize() { World::instance().finalize(); }
int world_rank(const char* op) { return World::instance().rank(op); }
int world_size(const char* op) { return World::instance().size(op); }
void world_set_timeout(std::chrono::milliseconds timeout) { World::instance().set_timeout(timeout); }
std::shared_future<void> world_submit(std::shared_ptr<Transfer> t) {
  return World::instance().submit(std::move(t));
}

}  // namespace kiln::distributed::detail
