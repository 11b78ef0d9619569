// CUDA dropout: one grid-stride pass that draws u = math::uniform01(seed, i) per
// element -- the counter-based RNG every backend shares, so the mask is a pure
// function of (seed, index) whatever the launch shape -- and writes the scale
// mask (0 or 1/(1-p), in the input's dtype) and y = x * mask. The draw is
// compared with p in double, as the CPU and reference kernels do, so all three
// drop the same elements. Eval or p = 0 writes a mask of ones and copies x.
// Backward is one pass g * mask (the stored, possibly rounded mask, as on the CPU).
// Each pass reads each input once and writes each output once.
#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/launch_shape.h"
#include "kernels/scalar_math.h"

namespace strata::cuda {
namespace {

// ---- kernels -------------------------------------------------------------------

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, T* mask, int64_t n, bool active, double p, float keep_scale,
                               uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float m = !active                                                                    ? 1.0f
              : static_cast<double>(math::uniform01(seed, static_cast<uint64_t>(i))) < p ? 0.0f
                                                                                         : keep_scale;
    store(mask, i, m);
    store(y, i, load(x, i) * m);
  }
}

template <typename T>
__global__ void mask_grad_kernel(const T* g, const T* mask, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(dx, i, load(g, i) * load(mask, i));
}

unsigned blocks(int64_t n) {
  return static_cast<unsigned>(launch::blocks_for(n, launch::grid_cap(context().sm_count)));
}

}  // namespace

// ---- launchers -------------------------------------------------------------------

void dropout_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  int64_t n = in[0].numel();
  if (n == 0) return;
  bool active = a.training && a.p > 0;
  float keep_scale = a.p < 1 ? static_cast<float>(1 / (1 - a.p)) : 0.0f;
  dispatch_float(in[0].dtype, "cuda dropout_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(blocks(n), launch::kThreads, 0, context().stream, dropout_kernel)
    (data_as<const T>(in[0]), data_as<T>(out[0]), data_as<T>(out[1]), n, active, a.p, keep_scale, a.seed);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

void dropout_backward(const OpAttrs&, const TensorView*, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (!gin[0].defined() || g.numel() == 0) return;
  dispatch_float(g.dtype, "cuda dropout_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(blocks(g.numel()), launch::kThreads, 0, context().stream, mask_grad_kernel)
    (data_as<const T>(g), data_as<const T>(out[1]), data_as<T>(gin[0]), g.numel());
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::cuda
