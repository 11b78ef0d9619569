// The worker pool behind parallel_run. A job is published under the mutex with a
// new generation number; workers (and the caller) take chunks from an atomic
// counter. run() returns only when every chunk is done and no worker still holds
// the job, so the next job can never be confused with this one.
#include "kernels/runtime/parallel.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define STRATA_PAUSE() _mm_pause()
#else
#define STRATA_PAUSE() ((void)0)
#endif

namespace strata {
namespace {

thread_local bool t_in_parallel = false;
constexpr int kSpins = 4000;  // about 20-40 us of pause before sleeping

class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
      ++generation_;
    }
    cv_work_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int size() const { return static_cast<int>(threads_.size()) + 1; }

  void run(int64_t chunks, const std::function<void(int64_t)>& fn) {
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (!busy.owns_lock()) {  // another thread is using the pool: do it here
      for (int64_t c = 0; c < chunks; ++c) fn(c);
      return;
    }
    {
      std::lock_guard<std::mutex> l(m_);
      job_ = &fn;
      chunks_ = chunks;
      next_.store(0);
      done_.store(0);
      error_ = nullptr;
      ++generation_;
      gen_atomic_.store(generation_, std::memory_order_release);
    }
    cv_work_.notify_all();
    t_in_parallel = true;
    take_chunks(fn, chunks);
    t_in_parallel = false;
    for (int s = 0; s < kSpins && !finished(chunks); ++s) STRATA_PAUSE();
    std::exception_ptr e;
    {
      // Workers join a job only under m_ while job_ is set, so once this holds m_
      // with nobody active and clears job_, no worker can touch fn any more.
      std::unique_lock<std::mutex> l(m_);
      cv_done_.wait(l, [&] { return finished(chunks); });
      job_ = nullptr;
      e = error_;
    }
    if (e) std::rethrow_exception(e);
  }

 private:
  bool finished(int64_t chunks) const { return done_.load() == chunks && active_.load() == 0; }

  void take_chunks(const std::function<void(int64_t)>& fn, int64_t chunks) {
    for (int64_t c; (c = next_.fetch_add(1)) < chunks;) {
      try {
        fn(c);
      } catch (...) {
        std::lock_guard<std::mutex> l(m_);
        if (!error_) error_ = std::current_exception();
      }
      if (done_.fetch_add(1) + 1 == chunks) {
        std::lock_guard<std::mutex> l(m_);
        cv_done_.notify_all();
      }
    }
  }

  void work() {
    t_in_parallel = true;
    uint64_t seen = 0;
    for (;;) {
      for (int s = 0; s < kSpins && gen_atomic_.load(std::memory_order_acquire) == seen; ++s) STRATA_PAUSE();
      const std::function<void(int64_t)>* job;
      int64_t chunks;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_work_.wait(l, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
        if (!job_) continue;  // the job already finished
        job = job_;
        chunks = chunks_;
        active_.fetch_add(1);
      }
      take_chunks(*job, chunks);
      if (active_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> l(m_);
        cv_done_.notify_all();
      }
    }
  }

  std::vector<std::thread> threads_;
  std::mutex m_, run_mutex_;
  std::condition_variable cv_work_, cv_done_;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> gen_atomic_{0};
  bool stop_ = false;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0}, done_{0};
  std::atomic<int> active_{0};
  std::exception_ptr error_;
};

std::mutex g_pool_mutex;
std::unique_ptr<Pool> g_pool;
std::atomic<int> g_threads{0};

int default_threads() {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  return n > 0 ? n : 1;
}

Pool& pool() {
  std::lock_guard<std::mutex> l(g_pool_mutex);
  int n = g_threads.load();
  if (n == 0) g_threads = n = default_threads();
  if (!g_pool || g_pool->size() != n) g_pool = std::make_unique<Pool>(n - 1);
  return *g_pool;
}

}  // namespace

void set_num_threads(int n) {
  if (n <= 0) n = default_threads();
  std::lock_guard<std::mutex> l(g_pool_mutex);
  g_threads = n;
}

int threads_per_local_rank(int local_ranks) {
  const int cores = default_threads();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < cores)
    return CPU_COUNT(&set);  // already this rank's share
  return std::max(1, cores / std::max(1, local_ranks));
}

int num_threads() {
  int n = g_threads.load();
  return n > 0 ? n : default_threads();
}

bool in_parallel() { return t_in_parallel; }

void parallel_run(int64_t chunks, const std::function<void(int64_t)>& fn) {
  if (chunks <= 0) return;
  if (chunks == 1 || in_parallel() || num_threads() <= 1) {
    for (int64_t c = 0; c < chunks; ++c) fn(c);
    return;
  }
  pool().run(chunks, fn);
}

}  // namespace strata
