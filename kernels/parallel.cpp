#include "kernels/parallel.h"

#include <omp.h>

#include <Eigen/Core>
#include <atomic>
#include <thread>

namespace strata {

namespace {
std::atomic<int> g_threads{0};
}

void set_num_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  g_threads = n;
  omp_set_num_threads(n);
  Eigen::setNbThreads(n);
}

int num_threads() {
  int n = g_threads.load();
  if (n == 0) {
    set_num_threads(0);
    n = g_threads.load();
  }
  return n;
}

}  // namespace strata
