// CPU threading for the hot kernels: one process-wide pool of worker threads
// (the count is a setting; the default is the number of cores). Why not OpenMP:
// libgomp's workers spin at every region boundary, and on a busy machine (the
// loader's own threads, other jobs, CI) a spinning thread holds a core the
// straggler needs -- measured here, a 200-step MLP run took 7.0 s with OpenMP's
// default wait policy and 0.9 s with passive waiting. The pool spins briefly,
// then sleeps on a condition variable.
#pragma once
#include <cstdint>
#include <functional>

namespace strata {

void set_num_threads(int n);  // n <= 0: number of cores
int num_threads();
// The compute threads for one of `local_ranks` processes on a node: the cores
// this process may run on when something (taskset, mpirun --bind-to) has
// narrowed them; otherwise the machine's cores shared among the local ranks,
// at least 1. trainer.threads 0's count.
int threads_per_local_rank(int local_ranks);
// True on a pool worker or inside a parallel_run (nested calls run serially).
bool in_parallel();

// Runs fn(chunk) for every chunk in [0, chunks), spread over the pool; the
// caller takes part. Returns when all are done; rethrows the first exception.
void parallel_run(int64_t chunks, const std::function<void(int64_t)>& fn);

// Calls fn(begin, end) on disjoint chunks of [0, n) in parallel; chunks hold at
// least `grain` items so that small ops stay on one thread.
template <typename Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  if (threads <= 1 || n <= grain || in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
  int64_t chunks = (n + grain - 1) / grain;
  if (chunks > threads) chunks = threads;
  int64_t step = (n + chunks - 1) / chunks;
  parallel_run(chunks, [&](int64_t c) {
    int64_t b = c * step, e = b + step < n ? b + step : n;
    if (b < e) fn(b, e);
  });
}

}  // namespace strata
