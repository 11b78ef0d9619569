// CUDA metric ops (kernels/metric_ops.h). Both are tiny and stay on the compute
// stream, so a task's sums are queued behind the forward that produced them and
// nothing waits for them until the trainer reads the accumulators.
//  - add_scaled: one thread, one read of x and a read-modify-write of acc.
//  - count_hits: one block of 256 threads walks the rows (a thread per row, the
//    C scores of its row read once: B*C loads, a few KB for a training batch),
//    and block_sum adds the 0/1 hits in a fixed order, so the count needs no
//    atomics. A label outside [0, C) counts as a miss (the host path names it;
//    cross_entropy has refused such a batch before this runs).
#include <cuda_runtime.h>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/metric_math.h"
#include "kernels/metric_ops_backends.h"

namespace strata::cuda_metric {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void add_scaled_kernel(const T* x, double alpha, double* acc) {
  *acc += alpha * static_cast<double>(cuda::load(x, 0));
}

__global__ void add_scaled_f64_kernel(const double* x, double alpha, double* acc) { *acc += alpha * *x; }

template <typename T>
__global__ void count_hits_kernel(const T* logits, const int64_t* labels, int64_t rows, int64_t classes,
                                  double* top1, double* top5) {
  double hits1 = 0, hits5 = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    const int64_t label = labels[i];
    if (label < 0 || label >= classes) continue;
    const T* row = logits + i * classes;
    const int64_t above = math::classes_above([&](int64_t j) { return cuda::load(row, j); }, classes, label);
    hits1 += above == 0 ? 1.0 : 0.0;
    hits5 += above < 5 ? 1.0 : 0.0;
  }
  hits1 = cuda::block_sum(hits1);
  hits5 = cuda::block_sum(hits5);
  if (threadIdx.x == 0) {
    *top1 += hits1;
    if (top5) *top5 += hits5;
  }
}

}  // namespace

void add_scaled(const TensorView& x, double alpha, const TensorView& acc) {
  cudaStream_t s = cuda::context().stream;
  double* a = static_cast<double*>(acc.data);
  if (x.dtype == DType::f64) {
    STRATA_LAUNCH(1, 1, 0, s, add_scaled_f64_kernel)(static_cast<const double*>(x.data), alpha, a);
  } else {
    cuda::dispatch_float(x.dtype, "cuda_metric::add_scaled", [&](auto tag) {
      using T = typename decltype(tag)::type;
      STRATA_LAUNCH(1, 1, 0, s, add_scaled_kernel<T>)(static_cast<const T*>(x.data), alpha, a);
    });
  }
  STRATA_CUDA_CHECK(cudaGetLastError());
}

void count_hits(const TensorView& logits, const TensorView& labels, const TensorView& top1,
                const TensorView& top5) {
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  if (rows == 0) return;
  cudaStream_t s = cuda::context().stream;
  double* t5 = top5.defined() ? static_cast<double*>(top5.data) : nullptr;
  cuda::dispatch_float(logits.dtype, "cuda_metric::count_hits", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(1, kThreads, 0, s, count_hits_kernel<T>)
    (static_cast<const T*>(logits.data), static_cast<const int64_t*>(labels.data), rows, classes,
     static_cast<double*>(top1.data), t5);
  });
  STRATA_CUDA_CHECK(cudaGetLastError());
}

void register_kernels(MetricOpStubs& s) {
  s.add_scaled.set(Device::cuda, &add_scaled);
  s.count_hits.set(Device::cuda, &count_hits);
}

}  // namespace strata::cuda_metric
