// CPU threading for the hot kernels (OpenMP). The thread count is one process-wide
// setting; the default is the number of cores.
#pragma once
#include <cstdint>

namespace strata {

void set_num_threads(int n);  // n <= 0: number of cores
int num_threads();

// Calls fn(begin, end) on disjoint chunks of [0, n) in parallel; chunks hold at
// least `grain` items so that small ops stay on one thread.
template <typename Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  if (threads <= 1 || n <= grain) {
    fn(int64_t{0}, n);
    return;
  }
  int64_t chunks = (n + grain - 1) / grain;
  if (chunks > threads) chunks = threads;
  int64_t step = (n + chunks - 1) / chunks;
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t b = c * step, e = b + step < n ? b + step : n;
    if (b < e) fn(b, e);
  }
}

}  // namespace strata
