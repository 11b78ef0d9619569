// Pooling on CUDA, NCHW, f32/f16/bf16 storage with FP32 arithmetic. Forward of
// max and avg pooling is one thread per output cell reading its clipped window
// (pool_window.h) from L1/L2: x is read about (kernel/stride)^2 times from cache,
// y written once; max keeps the first maximum in row-major window order (the
// reference's tie rule) and saves its flat index in the plane as i64. Backward is
// a gather, one thread per input cell: it sums, in ascending output order, dy of
// the outputs whose windows hold the cell (for max: whose argmax is the cell; for
// avg: divided by each window's count of unpadded cells). So every dx cell is
// written exactly once, without a zeroing pass or atomics, deterministically,
// and in the same order as the CPU kernels add. global_avg_pool2d reduces each
// [H*W] plane with a warp or a block (row_launch.h); its backward spreads
// dy / (H*W) over the plane.
#include <algorithm>
#include <cstdint>

#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/pool_window.h"
#include "kernels/cuda/row_launch.h"
#include "kernels/cuda/row_reduce.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

struct Geom {
  int64_t planes, h, w, ho, wo, kh, kw, sh, sw, ph, pw;
};

Geom geom(const OpAttrs& a, const TensorView& x, const TensorView& y) {
  return {x.size(0) * x.size(1), x.size(2),   x.size(3),   y.size(2),    y.size(3),   a.kernel[0],
          a.kernel[1],           a.stride[0], a.stride[1], a.padding[0], a.padding[1]};
}

unsigned grid_for(int64_t items) {
  return static_cast<unsigned>(std::min<int64_t>((items + kThreads - 1) / kThreads, int64_t{1} << 20));
}

#define STRATA_GRID_STRIDE(i, n)                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// ---------------------------------------------------------------- kernels

// y, argmax [planes, ho, wo] from x [planes, h, w]
template <typename T>
__global__ void max_pool_forward_kernel(const T* x, T* y, int64_t* argmax, Geom g) {
  int64_t oplane = g.ho * g.wo;
  STRATA_GRID_STRIDE(e, g.planes * oplane) {
    int64_t p = e / oplane, o = e % oplane;
    Span rs = pool_window(o / g.wo, g.h, g.kh, g.sh, g.ph), cs = pool_window(o % g.wo, g.w, g.kw, g.sw, g.pw);
    const T* xp = x + p * g.h * g.w;
    int64_t best = rs.begin * g.w + cs.begin;
    float bv = load(xp, best);
    for (int64_t r = rs.begin; r < rs.end; ++r)
      for (int64_t c = cs.begin; c < cs.end; ++c) {
        float v = load(xp, r * g.w + c);
        if (v > bv) {
          bv = v;
          best = r * g.w + c;
        }
      }
    store(y, e, bv);
    argmax[e] = best;
  }
}

// dx [planes, h, w] = sum of dy over the outputs whose argmax is the cell
template <typename T>
__global__ void max_pool_backward_kernel(const T* dy, const int64_t* argmax, T* dx, Geom g) {
  int64_t plane = g.h * g.w, oplane = g.ho * g.wo;
  STRATA_GRID_STRIDE(e, g.planes * plane) {
    int64_t p = e / plane, cell = e % plane;
    Span is = windows_holding(cell / g.w, g.kh, g.sh, g.ph, g.ho);
    Span js = windows_holding(cell % g.w, g.kw, g.sw, g.pw, g.wo);
    float acc = 0;
    for (int64_t i = is.begin; i < is.end; ++i)
      for (int64_t j = js.begin; j < js.end; ++j) {
        int64_t o = p * oplane + i * g.wo + j;
        if (argmax[o] == cell) acc += load(dy, o);
      }
    store(dx, e, acc);
  }
}

template <typename T>
__global__ void avg_pool_forward_kernel(const T* x, T* y, Geom g) {
  int64_t oplane = g.ho * g.wo;
  STRATA_GRID_STRIDE(e, g.planes * oplane) {
    int64_t p = e / oplane, o = e % oplane;
    Span rs = pool_window(o / g.wo, g.h, g.kh, g.sh, g.ph), cs = pool_window(o % g.wo, g.w, g.kw, g.sw, g.pw);
    const T* xp = x + p * g.h * g.w;
    float s = 0;
    for (int64_t r = rs.begin; r < rs.end; ++r)
      for (int64_t c = cs.begin; c < cs.end; ++c) s += load(xp, r * g.w + c);
    store(y, e, s / static_cast<float>((rs.end - rs.begin) * (cs.end - cs.begin)));
  }
}

// dx [planes, h, w] = sum over the windows holding the cell of dy / (unpadded cells of the window)
template <typename T>
__global__ void avg_pool_backward_kernel(const T* dy, T* dx, Geom g) {
  int64_t plane = g.h * g.w, oplane = g.ho * g.wo;
  STRATA_GRID_STRIDE(e, g.planes * plane) {
    int64_t p = e / plane, r = (e % plane) / g.w, c = e % g.w;
    Span is = windows_holding(r, g.kh, g.sh, g.ph, g.ho), js = windows_holding(c, g.kw, g.sw, g.pw, g.wo);
    float acc = 0;
    for (int64_t i = is.begin; i < is.end; ++i) {
      Span rs = pool_window(i, g.h, g.kh, g.sh, g.ph);
      for (int64_t j = js.begin; j < js.end; ++j) {
        Span cs = pool_window(j, g.w, g.kw, g.sw, g.pw);
        float count = static_cast<float>((rs.end - rs.begin) * (cs.end - cs.begin));
        acc += load(dy, p * oplane + i * g.wo + j) / count;
      }
    }
    store(dx, e, acc);
  }
}

// y [planes] = mean of x [planes, plane]
template <typename T>
__global__ void global_avg_forward_kernel(const T* x, T* y, int64_t planes, int64_t plane, int tpr) {
  int lane;
  int64_t row = group_row(planes, tpr, &lane);
  if (row < 0) return;
  float acc = 0;
  for (int64_t j = lane; j < plane; j += tpr) acc += load(x, row * plane + j);
  acc = row_sum(acc, tpr);
  if (lane == 0) store(y, row, acc / static_cast<float>(plane));
}

template <typename T>
__global__ void global_avg_backward_kernel(const T* dy, T* dx, int64_t planes, int64_t plane) {
  STRATA_GRID_STRIDE(e, planes * plane) { store(dx, e, load(dy, e / plane) / static_cast<float>(plane)); }
}

#undef STRATA_GRID_STRIDE

}  // namespace

// ---------------------------------------------------------------- launchers

void max_pool2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  Geom g = geom(a, in[0], out[0]);
  if (out[0].numel() == 0) return;
  dispatch_float(in[0].dtype, "cuda max_pool2d x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(grid_for(out[0].numel()), kThreads, 0, context().stream, max_pool_forward_kernel<T>)
    (in[0].as<const T>(), out[0].as<T>(), out[1].as<int64_t>(), g);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

void max_pool2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                         const TensorView& gout, TensorView* gin) {
  if (!gin[0].defined() || gin[0].numel() == 0) return;
  Geom g = geom(a, in[0], out[0]);
  dispatch_float(gin[0].dtype, "cuda max_pool2d dx", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(grid_for(gin[0].numel()), kThreads, 0, context().stream, max_pool_backward_kernel<T>)
    (gout.as<const T>(), out[1].as<const int64_t>(), gin[0].as<T>(), g);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

void avg_pool2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  Geom g = geom(a, in[0], out[0]);
  if (out[0].numel() == 0) return;
  dispatch_float(in[0].dtype, "cuda avg_pool2d x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(grid_for(out[0].numel()), kThreads, 0, context().stream, avg_pool_forward_kernel<T>)
    (in[0].as<const T>(), out[0].as<T>(), g);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

void avg_pool2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                         const TensorView& gout, TensorView* gin) {
  if (!gin[0].defined() || gin[0].numel() == 0) return;
  Geom g = geom(a, in[0], out[0]);
  dispatch_float(gin[0].dtype, "cuda avg_pool2d dx", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(grid_for(gin[0].numel()), kThreads, 0, context().stream, avg_pool_backward_kernel<T>)
    (gout.as<const T>(), gin[0].as<T>(), g);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

void global_avg_pool2d_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  int64_t planes = out[0].numel(), plane = in[0].size(2) * in[0].size(3);
  if (planes == 0) return;
  RowLaunch l = row_launch(planes, plane, "cuda global_avg_pool2d");
  dispatch_float(in[0].dtype, "cuda global_avg_pool2d x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(static_cast<unsigned>(l.grid), l.block, 0, context().stream, global_avg_forward_kernel<T>)
    (in[0].as<const T>(), out[0].as<T>(), planes, plane, l.threads_per_row);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

void global_avg_pool2d_backward(const OpAttrs&, const TensorView* in, const TensorView*,
                                const TensorView& gout, TensorView* gin) {
  if (!gin[0].defined() || gin[0].numel() == 0) return;
  int64_t planes = gout.numel(), plane = in[0].size(2) * in[0].size(3);
  dispatch_float(gin[0].dtype, "cuda global_avg_pool2d dx", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(grid_for(gin[0].numel()), kThreads, 0, context().stream, global_avg_backward_kernel<T>)
    (gout.as<const T>(), gin[0].as<T>(), planes, plane);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::cuda
