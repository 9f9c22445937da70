#include "exec/cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::detail {

namespace {

int default_threads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// One parallel_for call. Workers hold it by shared_ptr, so a worker that wakes late finds its
// counter exhausted instead of touching a newer job.
struct Job {
  const std::function<void(std::int64_t, std::int64_t)>* body;
  std::int64_t count, pieces;
  std::uint64_t id;
  std::atomic<std::int64_t> next{0};
  std::int64_t done = 0;  // guarded by the pool's mutex
  std::exception_ptr error;
};

// Workers wait on a condition variable for a job, take pieces from the job's counter, and go
// back to sleep; nothing spins.
class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  int threads() const { return threads_; }
  void resize(int threads) {
    std::lock_guard one_job_at_a_time(job_mutex_);
    stop_workers();
    threads_ = std::max(1, threads);
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { work(); });
  }

  void run(std::int64_t count, std::int64_t grain,
           const std::function<void(std::int64_t, std::int64_t)>& body) {
    const std::int64_t by_grain = std::max<std::int64_t>(1, count / std::max<std::int64_t>(grain, 1));
    const std::int64_t pieces = std::min<std::int64_t>(threads_ * 4, by_grain);
    if (pieces <= 1 || threads_ == 1) {
      body(0, count);
      return;
    }
    std::lock_guard one_job_at_a_time(job_mutex_);
    auto job = std::make_shared<Job>();
    job->body = &body;
    job->count = count;
    job->pieces = pieces;
    job->id = ++jobs_started_;
    {
      std::lock_guard lock(mutex_);
      job_ = job;
    }
    wake_.notify_all();
    take_pieces(*job);
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return job->done == job->pieces; });
    job_.reset();
    if (job->error) std::rethrow_exception(job->error);
  }

  ~Pool() { stop_workers(); }

 private:
  Pool() { resize(default_threads()); }

  void take_pieces(Job& job) {
    for (;;) {
      const std::int64_t piece = job.next.fetch_add(1);
      if (piece >= job.pieces) return;
      const std::int64_t begin = job.count * piece / job.pieces;
      const std::int64_t end = job.count * (piece + 1) / job.pieces;
      std::exception_ptr error;
      try {
        (*job.body)(begin, end);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(mutex_);
      if (error && !job.error) job.error = error;
      if (++job.done == job.pieces) finished_.notify_all();
    }
  }

  void work() {
    std::uint64_t last = 0;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || (job_ && job_->id != last); });
        if (stopping_) return;
        job = job_;
        last = job->id;
      }
      take_pieces(*job);
    }
  }

  void stop_workers() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
    stopping_ = false;
  }

  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex job_mutex_, mutex_;
  std::condition_variable wake_, finished_;
  std::shared_ptr<Job> job_;
  std::uint64_t jobs_started_ = 0;
  bool stopping_ = false;
};

}  // namespace

void parallel_for(std::int64_t count, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (count <= 0) return;
  Pool::instance().run(count, grain, body);
}

int thread_count() { return Pool::instance().threads(); }
void set_thread_count(int threads) { Pool::instance().resize(threads); }

}  // namespace kiln::detail
