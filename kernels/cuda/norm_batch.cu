// batch_norm on CUDA, x[N, C, S...] in f32/f16/bf16 viewed as [N, C, S]; gamma,
// beta and the running statistics each in x's dtype or f32; saved mean/invstd f32.
// Training: two deterministic channel reductions (channel_reduce.cuh) -- the sum
// around the channel's first element, then the centred sum of squares around the
// f32 mean (the CPU takes both in one pass around a value of the channel) --
// whose second finish step also writes invstd and updates the running statistics
// in place (momentum, unbiased variance; kernels/norm_math.h); then one
// elementwise pass y = (x - mean) invstd gamma + beta (max(0, .) with a fused
// ReLU). Traffic: x read three times, y written once. Eval: a per-channel kernel
// takes mean/invstd from the running statistics, then the same elementwise pass.
// Backward: one reduction of (g, g xhat) per channel gives dbeta/dgamma and the
// two means that dx needs, then one elementwise pass for dx (x and g read twice);
// a fused ReLU zeroes g where the pre-activation, recomputed from x, was <= 0, so
// y is never read. A fused 2x2 max pool (OpAttrs::max_pool_2x2): the forward's
// elementwise pass is one thread per pooled output, reading its window and
// writing only the quarter-size y and the index in the plane of the window's
// first maximum; backward, each element's g is the pooled gradient when it is
// its window's saved maximum (through the ReLU's mask), else 0, so no
// full-size gradient is ever stored. FP32 arithmetic throughout.
#include <string>

#include "kernels/backends.h"
#include "kernels/cuda/channel_reduce.cuh"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/norm_math.h"
#include "kernels/pool_math.h"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

struct NCS {
  int64_t N, C, S;
  explicit NCS(const Shape& s)
      : N(s[0]), C(s[1]), S(s[0] != 0 && s[1] != 0 ? shape_numel(s) / (s[0] * s[1]) : 0) {}
  STRATA_HD int64_t numel() const { return N * C * S; }
};

// A fused 2x2 max pool's planes: x's h x w, y's ho x wo (pool false: none).
struct Pool2x2 {
  bool pool;
  int64_t h, w, ho, wo;
  Pool2x2(const OpAttrs& a, const Shape& s)
      : pool(a.max_pool_2x2),
        h(pool ? s[2] : 0),
        w(pool ? s[3] : 0),
        ho(pool ? s[2] / 2 : 0),
        wo(pool ? s[3] / 2 : 0) {}
};

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65536 * 32 ? b : 65536 * 32);  // grid-stride loops cover the rest
}

// ---------------------------------------------------------------- kernels

// The channel's sum is taken around its first element K = x[0, c, 0]: x - K is
// exact in f32 when x and K are within a factor two of each other, and small,
// so the sum keeps the bits a sum of x around a large mean would round away
// (x near 100 lost ~3e-5 of y's precision that way; the CPU kernel shifts too).
template <typename T>
struct SumX {
  const T* x;
  int64_t S;
  __device__ void operator()(int64_t i, int64_t c, float (&acc)[1]) const {
    acc[0] += to_float(x[i]) - to_float(x[c * S]);
  }
};

template <typename T>
struct StoreMean {
  float* mean;
  float count;
  const T* x;
  int64_t S;
  __device__ void operator()(int64_t c, const float (&s)[1]) const {
    mean[c] = count > 0 ? to_float(x[c * S]) + s[0] / count : s[0] / count;
  }
};

template <typename T>
struct SumSquaredDeviation {
  const T* x;
  const float* mean;
  __device__ void operator()(int64_t i, int64_t c, float (&acc)[1]) const {
    float d = to_float(x[i]) - mean[c];
    acc[0] += d * d;
  }
};

struct FinishTrainingStats {
  const float* mean;
  float* invstd;
  AnyFloat running_mean, running_var;
  double count, eps, momentum;
  __device__ void operator()(int64_t c, const float (&m2)[1]) const {
    invstd[c] = norm::invstd_from_m2(m2[0], count, eps);
    running_mean.store(c, norm::running_mean_update(running_mean.load(c), mean[c], momentum));
    running_var.store(c, norm::running_var_update(running_var.load(c), m2[0], count, momentum));
  }
};

__global__ void eval_stats_kernel(int64_t C, AnyFloat running_mean, AnyFloat running_var, double eps,
                                  float* mean, float* invstd) {
  int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  mean[c] = running_mean.load(c);
  invstd[c] = norm::invstd_from_m2(running_var.load(c), 1.0, eps);
}

// The per-channel affine map of batch_norm (kernels/norm_math.h), the same on
// the forward pass and when the backward recomputes a fused ReLU's mask.
__device__ inline norm::ScaleShift affine_of(int64_t c, const float* mean, const float* invstd,
                                             AnyFloat gamma, AnyFloat beta) {
  return norm::batch_norm_scale_shift(gamma.load(c), beta.load(c), mean[c], invstd[c]);
}

template <typename T>
__global__ void normalize_kernel(NCS g, const T* x, const float* mean, const float* invstd, AnyFloat gamma,
                                 AnyFloat beta, bool relu, T* y) {
  int64_t n = g.numel();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t c = channel_of(i, g.C, g.S);
    float pre = norm::batch_norm_affine(to_float(x[i]), affine_of(c, mean, invstd, gamma, beta));
    y[i] = from_float<T>(norm::batch_norm_out(pre, relu));
  }
}

// One thread per pooled output: the window's maximum of bn(x), through the ReLU.
template <typename T>
__global__ void normalize_pool_kernel(NCS g, Pool2x2 q, const T* x, const float* mean, const float* invstd,
                                      AnyFloat gamma, AnyFloat beta, bool relu, T* y, int32_t* at) {
  int64_t n = g.N * g.C * q.ho * q.wo;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t plane = i / (q.ho * q.wo), o = i % (q.ho * q.wo);
    int64_t corner = 2 * (o / q.wo) * q.w + 2 * (o % q.wo);  // the window's top left in the plane
    const T* top = x + plane * g.S + corner;
    norm::ScaleShift s = affine_of(plane % g.C, mean, invstd, gamma, beta);
    auto m = pool::window_max_2x2(
        norm::batch_norm_affine(to_float(top[0]), s), norm::batch_norm_affine(to_float(top[1]), s),
        norm::batch_norm_affine(to_float(top[q.w]), s), norm::batch_norm_affine(to_float(top[q.w + 1]), s),
        static_cast<int32_t>(q.w));
    y[i] = from_float<T>(norm::batch_norm_out(m.value, relu));
    at[i] = static_cast<int32_t>(corner) + m.offset;
  }
}

// The gradient of bn's output at element i of x (channel c, value xi): g through
// the fused ReLU's mask; with a fused pool, g is the pooled gradient where i is
// its window's saved maximum, 0 elsewhere (cells outside every window included).
template <typename T>
struct GradOfOutput {
  NCS g;
  Pool2x2 q;
  const T *x, *go;
  const int32_t* at;  // with a pool: each window's maximum's index in its plane
  const float *mean, *invstd;
  AnyFloat gamma, beta;
  bool relu;
  __device__ float operator()(int64_t i, int64_t c, float xi) const {
    float pre = norm::batch_norm_affine(xi, affine_of(c, mean, invstd, gamma, beta));
    if (!q.pool) return norm::batch_norm_grad_through_relu(to_float(go[i]), pre, relu);
    int64_t plane = i / g.S, k = i % g.S, r = k / q.w, col = k % q.w;
    if (r >= 2 * q.ho || col >= 2 * q.wo) return 0.0f;
    int64_t window = (plane * q.ho + r / 2) * q.wo + col / 2;
    if (at[window] != k) return 0.0f;
    return norm::batch_norm_grad_through_relu(to_float(go[window]), pre, relu);
  }
};

// acc = (sum g, sum g xhat) per channel
template <typename T>
struct SumGradients {
  GradOfOutput<T> grad;
  __device__ void operator()(int64_t i, int64_t c, float (&acc)[2]) const {
    float xi = to_float(grad.x[i]);
    float go = grad(i, c, xi);
    acc[0] += go;
    acc[1] += go * ((xi - grad.mean[c]) * grad.invstd[c]);
  }
};

struct FinishGradients {
  AnyFloat dgamma, dbeta;  // data == nullptr: not wanted
  float* sums;             // [C, 2] for the dx pass
  __device__ void operator()(int64_t c, const float (&s)[2]) const {
    if (dbeta.data) dbeta.store(c, s[0]);
    if (dgamma.data) dgamma.store(c, s[1]);
    sums[2 * c] = s[0];
    sums[2 * c + 1] = s[1];
  }
};

template <typename T>
__global__ void dx_kernel(GradOfOutput<T> grad, const float* sums, float count, bool training, T* dx) {
  int64_t n = grad.g.numel();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t c = channel_of(i, grad.g.C, grad.g.S);
    float xi = to_float(grad.x[i]), is = grad.invstd[c], xhat = (xi - grad.mean[c]) * is;
    float ge = grad(i, c, xi);
    float mg = training ? sums[2 * c] / count : 0.0f, mgx = training ? sums[2 * c + 1] / count : 0.0f;
    dx[i] = from_float<T>(norm::batch_norm_dx(ge, xhat, grad.gamma.load(c) * is, mg, mgx, training));
  }
}

// ---------------------------------------------------------------- launchers

float* stat_ptr(const TensorView& v, const char* what) {
  if (v.dtype != DType::f32)
    throw Error(std::string("batch_norm: ") + what + " must be f32 on CUDA (stat_dtype), got " +
                dtype_name(v.dtype));
  return v.as<float>();
}

}  // namespace

void batch_norm_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  NCS g(in[0].shape);
  if (g.C == 0) return;
  const char* op = "batch_norm";
  AnyFloat gamma = any_float(in[1].data, in[1].dtype, op, "gamma");
  AnyFloat beta = any_float(in[2].data, in[2].dtype, op, "beta");
  AnyFloat rm = any_float(in[3].data, in[3].dtype, op, "running_mean");
  AnyFloat rv = any_float(in[4].data, in[4].dtype, op, "running_var");
  float *mean = stat_ptr(out[1], "mean"), *invstd = stat_ptr(out[2], "invstd");
  cudaStream_t stream = context().stream;
  dispatch_float(in[0].dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in[0].as<const T>();
    if (a.training) {
      float count = static_cast<float>(g.N * g.S);
      channel_reduce<1>(g.N, g.C, g.S, SumX<T>{x, g.S}, StoreMean<T>{mean, count, x, g.S});
      channel_reduce<1>(
          g.N, g.C, g.S, SumSquaredDeviation<T>{x, mean},
          FinishTrainingStats{mean, invstd, rm, rv, static_cast<double>(g.N * g.S), a.eps, a.momentum});
    } else {
      STRATA_LAUNCH(blocks_for(g.C), kThreads, 0, stream, eval_stats_kernel)
      (g.C, rm, rv, a.eps, mean, invstd);
      STRATA_CUDA_LAUNCH_CHECK();
    }
    if (g.numel() == 0) return;
    Pool2x2 q(a, in[0].shape);
    if (q.pool) STRATA_LAUNCH(blocks_for(out[0].numel()), kThreads, 0, stream, normalize_pool_kernel<T>)
    (g, q, x, mean, invstd, gamma, beta, a.relu, out[0].as<T>(), out[3].as<int32_t>());
    else STRATA_LAUNCH(blocks_for(g.numel()), kThreads, 0, stream, normalize_kernel<T>)(
        g, x, mean, invstd, gamma, beta, a.relu, out[0].as<T>());
    STRATA_CUDA_LAUNCH_CHECK();
  });
}

void batch_norm_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                         const TensorView& gout, TensorView* gin) {
  NCS g(in[0].shape);
  if (g.C == 0) return;
  const char* op = "batch_norm";
  const float *mean = stat_ptr(out[1], "mean"), *invstd = stat_ptr(out[2], "invstd");
  AnyFloat gamma = any_float(in[1].data, in[1].dtype, op, "gamma");
  AnyFloat beta = any_float(in[2].data, in[2].dtype, op, "beta");
  AnyFloat dgamma{nullptr, DType::f32}, dbeta{nullptr, DType::f32};
  if (gin[1].defined()) dgamma = any_float(gin[1].data, gin[1].dtype, op, "grad of gamma");
  if (gin[2].defined()) dbeta = any_float(gin[2].data, gin[2].dtype, op, "grad of beta");
  bool need_sums = gin[1].defined() || gin[2].defined() || (gin[0].defined() && a.training);
  if (gout.dtype != in[0].dtype || (gin[0].defined() && gin[0].dtype != in[0].dtype))
    throw Error(std::string("batch_norm backward: grad dtypes must be the input's ") +
                dtype_name(in[0].dtype));
  dispatch_float(in[0].dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = in[0].as<const T>(), *go = gout.as<const T>();
    Scratch sums(static_cast<size_t>(2 * g.C) * sizeof(float));
    GradOfOutput<T> grad{
        g, Pool2x2(a, in[0].shape), x, go, out[3].as<const int32_t>(), mean, invstd, gamma, beta, a.relu};
    if (need_sums)
      channel_reduce<2>(g.N, g.C, g.S, SumGradients<T>{grad},
                        FinishGradients{dgamma, dbeta, sums.as<float>()});
    if (!gin[0].defined() || g.numel() == 0) return;
    STRATA_LAUNCH(blocks_for(g.numel()), kThreads, 0, context().stream, dx_kernel<T>)
    (grad, sums.as<float>(), static_cast<float>(g.N * g.S), a.training, gin[0].as<T>());
    STRATA_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace strata::cuda
