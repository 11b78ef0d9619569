// Causal scaled dot-product attention, flash style (FlashAttention-2's loop
// order), q, k, v [B,H,T,D] in f32, f16 or bf16, D and Dv <= 128.
// Forward: one block of 4 warps per (head, tile of br query rows). The Q tile
// stays in shared memory while K/V tiles of bc keys stream through it; only the
// key tiles at or left of the diagonal are visited (causal block skipping, the
// heaviest query tiles are scheduled first). Per key tile: S = Q K^T (Tensor
// Core WMMA for halves, FP32 on CUDA cores for f32) into an FP32 tile, an online
// softmax per row in FP32 (running max m and sum l, the numerators P written
// back in the input dtype, the FP32 output accumulator rescaled by exp(m_old -
// m_new)), then O += P V. The output and the row's lse = m + log l are written
// once. Backward (FA2): a pass computes D = rowsum(dO * O) per row; then one
// block per (head, tile of bc keys) keeps K, V and FP32 dK, dV accumulators in
// shared memory and walks the query tiles at or below the diagonal, recomputing
// P = exp(scale Q K^T - lse) and dS = P (dO V^T - D) per tile: dV += P^T dO,
// dK += dS^T Q, and dQ += dS K is added to an FP32 [B,H,T,D] buffer with
// atomics (summation order not deterministic), then narrowed to dQ's dtype.
// The WMMA accumulators are opaque, so every score and output tile goes through
// shared memory (kernels/attention_tiling.h has the layout: at most 160 KiB,
// sized per dtype and head dim against the sm_80 limit); a register-resident
// mma.sync version would save that traffic. HBM traffic per head is O(T*D):
// forward reads Q once and K, V once per query tile that needs them, writes O
// and lse once; backward reads K, V once, Q, dO, lse, D once per key tile.
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "kernels/attention_tiling.h"
#include "kernels/backends.h"
#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/context.h"

namespace strata::cuda {
namespace {

using namespace attn_tile;
using attn::Tile;

template <typename T>
struct Params {
  const T *q, *k, *v, *o, *dout;
  T *out, *dq, *dk, *dv;
  float *lse, *delta, *dq_acc;
  int64_t t;
  int d, dv_dim;
  float scale;
};

// ---- kernels ------------------------------------------------------------------

// kDFixed = 64 or 128 fixes D = Dv at compile time (the fast paths); 0 reads them
// from the parameters (any D, Dv <= kDMax).
template <typename T, int kDMax, int kDFixed>
__global__ void __launch_bounds__(attn::kThreads) attn_forward_kernel(Params<T> p) {
  constexpr Tile tl = attn::forward_tile(sizeof(T), kDMax);
  constexpr attn::ForwardSmem L = attn::forward_smem(tl, sizeof(T));
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem + L.q);
  T* ks = reinterpret_cast<T*>(smem + L.k);
  T* vs = reinterpret_cast<T*>(smem + L.v);
  float* ss = reinterpret_cast<float*>(smem + L.s);
  T* ps = reinterpret_cast<T*>(smem + L.p);
  float* os = reinterpret_cast<float*>(smem + L.o);
  float* ms = reinterpret_cast<float*>(smem + L.m);
  float* ls = reinterpret_cast<float*>(smem + L.l);

  const int d = kDFixed ? kDFixed : p.d, dv = kDFixed ? kDFixed : p.dv_dim;
  const int dp = attn::round_up(d, 16), dvp = attn::round_up(dv, 16);
  const int64_t t = p.t, head = blockIdx.x;
  const int64_t i = gridDim.y - 1 - blockIdx.y;  // the longest rows first
  const int64_t row0 = i * tl.br;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  load_tile(qs, L.ld_d, p.q + head * t * d, row0, tl.br, t, d, dp);
  fill_f32(os, L.ld_o, tl.br, dvp, 0.0f);
  for (int r = threadIdx.x; r < tl.br; r += blockDim.x) ms[r] = -INFINITY, ls[r] = 0.0f;

  const int64_t tiles = attn::forward_kv_tiles(i, t, tl);
  for (int64_t j = 0; j < tiles; ++j) {
    __syncthreads();  // the previous tile's O += P V is done with K, V, P
    load_tile(ks, L.ld_d, p.k + head * t * d, j * tl.bc, tl.bc, t, d, dp);
    load_tile(vs, L.ld_d, p.v + head * t * dv, j * tl.bc, tl.bc, t, dv, dvp);
    __syncthreads();
    block_gemm<T, false, true, false>(qs, L.ld_d, ks, L.ld_d, ss, L.ld_s, tl.br, tl.bc, dp);  // S = Q K^T
    __syncthreads();
    // online softmax: a warp per row, a lane per key column
    for (int r = warp; r < tl.br; r += attn::kThreads / 32) {
      float s[tl.bc / 32], tile_max = -INFINITY;
      for (int u = 0; u < tl.bc / 32; ++u) {
        int c = lane + 32 * u;
        s[u] = attn::masked_score(ss[r * L.ld_s + c], p.scale, row0 + r, j * tl.bc + c, t);
        tile_max = fmaxf(tile_max, s[u]);
      }
      tile_max = warp_max(tile_max);
      float m = ms[r], l = ls[r];
      float alpha = attn::online_rescale(m, l, tile_max);
      float sum = 0.0f;
      for (int u = 0; u < tl.bc / 32; ++u) {
        float e = attn::shifted_exp(s[u], m);
        ps[r * L.ld_p + lane + 32 * u] = from_float<T>(e);
        sum += e;
      }
      sum = warp_sum(sum);
      if (lane == 0) ms[r] = m, ls[r] = l + sum;
      for (int c = lane; c < dvp; c += 32) os[r * L.ld_o + c] *= alpha;
    }
    __syncthreads();
    block_gemm<T, false, false, true>(ps, L.ld_p, vs, L.ld_d, os, L.ld_o, tl.br, dvp, tl.bc);  // O += P V
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < tl.br * dv; idx += blockDim.x) {
    int r = idx / dv, c = idx % dv;
    if (row0 + r < t)
      p.out[(head * t + row0 + r) * dv + c] = from_float<T>(os[r * L.ld_o + c] * attn::row_inv_sum(ls[r]));
  }
  for (int r = threadIdx.x; r < tl.br; r += blockDim.x)
    if (row0 + r < t) p.lse[head * t + row0 + r] = attn::row_lse(ms[r], ls[r]);
}

// delta[row] = sum_c dO[row][c] * O[row][c]: a warp per row.
template <typename T>
__global__ void attn_delta_kernel(const T* out, const T* dout, float* delta, int64_t rows, int dv) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  float acc = 0.0f;
  for (int c = threadIdx.x % 32; c < dv; c += 32)
    acc += to_float(dout[row * dv + c]) * to_float(out[row * dv + c]);
  acc = warp_sum(acc);
  if (threadIdx.x % 32 == 0) delta[row] = acc;
}

template <typename T, int kDMax, int kDFixed>
__global__ void __launch_bounds__(attn::kThreads) attn_backward_kernel(Params<T> p) {
  constexpr Tile tl = attn::backward_tile(sizeof(T), kDMax);
  constexpr attn::BackwardSmem L = attn::backward_smem(tl, sizeof(T));
  extern __shared__ __align__(128) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem + L.k);
  T* vs = reinterpret_cast<T*>(smem + L.v);
  float* dks = reinterpret_cast<float*>(smem + L.dk);
  float* dvs = reinterpret_cast<float*>(smem + L.dv);
  T* qs = reinterpret_cast<T*>(smem + L.q);
  T* dos = reinterpret_cast<T*>(smem + L.dout);
  float* ss = reinterpret_cast<float*>(smem + L.s);
  float* dps = reinterpret_cast<float*>(smem + L.dp);
  T* ps = reinterpret_cast<T*>(smem + L.p);
  T* dss = reinterpret_cast<T*>(smem + L.ds);
  float* dqs = reinterpret_cast<float*>(smem + L.dq);
  float* lse_s = reinterpret_cast<float*>(smem + L.lse);
  float* delta_s = reinterpret_cast<float*>(smem + L.delta);

  const int d = kDFixed ? kDFixed : p.d, dv = kDFixed ? kDFixed : p.dv_dim;
  const int dp = attn::round_up(d, 16), dvp = attn::round_up(dv, 16);
  const int64_t t = p.t, head = blockIdx.x, j = blockIdx.y, key0 = j * tl.bc;

  load_tile(ks, L.ld_d, p.k + head * t * d, key0, tl.bc, t, d, dp);
  load_tile(vs, L.ld_d, p.v + head * t * dv, key0, tl.bc, t, dv, dvp);
  fill_f32(dks, L.ld_o, tl.bc, dp, 0.0f);
  fill_f32(dvs, L.ld_o, tl.bc, dvp, 0.0f);

  const int64_t q_tiles = attn::ceil_div(t, tl.br);
  for (int64_t i = attn::backward_first_q_tile(j, tl); i < q_tiles; ++i) {
    const int64_t row0 = i * tl.br;
    __syncthreads();  // the previous query tile is done with Q, dO, P, dS, dQ
    load_tile(qs, L.ld_d, p.q + head * t * d, row0, tl.br, t, d, dp);
    load_tile(dos, L.ld_d, p.dout + head * t * dv, row0, tl.br, t, dv, dvp);
    for (int r = threadIdx.x; r < tl.br; r += blockDim.x) {
      bool in = row0 + r < t;
      lse_s[r] = in ? p.lse[head * t + row0 + r] : 0.0f;
      delta_s[r] = in ? p.delta[head * t + row0 + r] : 0.0f;
    }
    __syncthreads();
    block_gemm<T, false, true, false>(qs, L.ld_d, ks, L.ld_d, ss, L.ld_s, tl.br, tl.bc, dp);  // S = Q K^T
    block_gemm<T, false, true, false>(dos, L.ld_d, vs, L.ld_d, dps, L.ld_s, tl.br, tl.bc,
                                      dvp);  // dP = dO V^T
    __syncthreads();
    for (int idx = threadIdx.x; idx < tl.br * tl.bc; idx += blockDim.x) {
      int r = idx / tl.bc, c = idx % tl.bc;
      float s = attn::masked_score(ss[r * L.ld_s + c], p.scale, row0 + r, key0 + c, t);
      float pr = attn::prob_from_lse(s, lse_s[r]);
      ps[r * L.ld_p + c] = from_float<T>(pr);
      dss[r * L.ld_p + c] = from_float<T>(attn::score_grad(pr, dps[r * L.ld_s + c], delta_s[r]));
    }
    __syncthreads();
    block_gemm<T, true, false, true>(ps, L.ld_p, dos, L.ld_d, dvs, L.ld_o, tl.bc, dvp,
                                     tl.br);                                                   // dV += P^T dO
    block_gemm<T, true, false, true>(dss, L.ld_p, qs, L.ld_d, dks, L.ld_o, tl.bc, dp, tl.br);  // dK += dS^T Q
    block_gemm<T, false, false, false>(dss, L.ld_p, ks, L.ld_d, dqs, L.ld_o, tl.br, dp, tl.bc);  // dS K
    __syncthreads();
    if (p.dq_acc)
      for (int idx = threadIdx.x; idx < tl.br * d; idx += blockDim.x) {
        int r = idx / d, c = idx % d;
        if (row0 + r < t) atomicAdd(&p.dq_acc[(head * t + row0 + r) * d + c], p.scale * dqs[r * L.ld_o + c]);
      }
  }
  __syncthreads();
  const int width = d > dv ? d : dv;
  for (int idx = threadIdx.x; idx < tl.bc * width; idx += blockDim.x) {
    int r = idx / width, c = idx % width;
    if (key0 + r >= t) continue;
    if (p.dk && c < d) p.dk[(head * t + key0 + r) * d + c] = from_float<T>(p.scale * dks[r * L.ld_o + c]);
    if (p.dv && c < dv) p.dv[(head * t + key0 + r) * dv + c] = from_float<T>(dvs[r * L.ld_o + c]);
  }
}

template <typename T>
__global__ void narrow_kernel(const float* src, T* dst, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = from_float<T>(src[i]);
}

// ---- launchers ----------------------------------------------------------------

struct Geom {
  int64_t heads, t;
  int d, dv;
  float scale;
};

Geom geom(const char* op, const OpAttrs& a, const TensorView* in, const TensorView* out) {
  const Shape &q = in[0].shape, &v = in[2].shape;
  Geom g{q[0] * q[1], q[2], static_cast<int>(q[3]), static_cast<int>(v[3]),
         static_cast<float>(a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(q[3])))};
  if (q[3] > attn::kMaxHeadDim || v[3] > attn::kMaxHeadDim)
    throw Error(std::string(op) + " (CUDA): head dims D=" + std::to_string(q[3]) +
                ", Dv=" + std::to_string(v[3]) + " exceed " + std::to_string(attn::kMaxHeadDim) + " (q " +
                shape_str(q) + ", v " + shape_str(v) + ")");
  if (out[1].dtype != DType::f32)
    throw Error(std::string(op) + " (CUDA): lse must be f32 (stat), got " + dtype_name(out[1].dtype));
  if (attn::ceil_div(g.t, 32) > 65535)
    throw Error(std::string(op) + " (CUDA): T=" + std::to_string(g.t) + " exceeds the grid's tile count");
  return g;
}

template <typename T>
Params<T> params(const Geom& g, const TensorView* in, const TensorView* out) {
  Params<T> p{};
  p.q = in[0].as<const T>(), p.k = in[1].as<const T>(), p.v = in[2].as<const T>();
  p.o = out[0].as<const T>(), p.out = out[0].as<T>(), p.lse = out[1].as<float>();
  p.t = g.t, p.d = g.d, p.dv_dim = g.dv, p.scale = g.scale;
  return p;
}

// Opt in to the shared memory a configuration needs, or say why it cannot run.
template <typename Kernel>
void reserve_smem(Kernel kernel, size_t bytes, const char* what) {
  Context& ctx = context();
  int limit = 0;
  STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx.device));
  if (bytes > static_cast<size_t>(limit))
    throw Error(std::string(what) + " (CUDA): needs " + std::to_string(bytes) +
                " bytes of shared memory, device " + std::to_string(ctx.device) + " allows " +
                std::to_string(limit));
  STRATA_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

template <typename T, int kDMax, int kDFixed>
void launch_forward(const Params<T>& p, int64_t heads) {
  constexpr Tile tl = attn::forward_tile(sizeof(T), kDMax);
  constexpr size_t smem = attn::forward_smem(tl, sizeof(T)).total;
  auto kernel = attn_forward_kernel<T, kDMax, kDFixed>;
  reserve_smem(kernel, smem, "sdpa_forward");
  dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>(attn::ceil_div(p.t, tl.br)));
  kernel<<<grid, attn::kThreads, smem, context().stream>>>(p);
  STRATA_CUDA_LAUNCH_CHECK();
}

template <typename T, int kDMax, int kDFixed>
void launch_backward(const Params<T>& p, int64_t heads) {
  constexpr Tile tl = attn::backward_tile(sizeof(T), kDMax);
  constexpr size_t smem = attn::backward_smem(tl, sizeof(T)).total;
  auto kernel = attn_backward_kernel<T, kDMax, kDFixed>;
  reserve_smem(kernel, smem, "sdpa_backward");
  dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>(attn::ceil_div(p.t, tl.bc)));
  kernel<<<grid, attn::kThreads, smem, context().stream>>>(p);
  STRATA_CUDA_LAUNCH_CHECK();
}

// The fast paths D = Dv = 64 and 128; otherwise the smallest tiles that hold max(D, Dv).
template <typename T, bool kBackward>
void launch(const Params<T>& p, int64_t heads) {
  auto run = [&](auto dmax, auto fixed) {
    if constexpr (kBackward)
      launch_backward<T, decltype(dmax)::value, decltype(fixed)::value>(p, heads);
    else
      launch_forward<T, decltype(dmax)::value, decltype(fixed)::value>(p, heads);
  };
  using I64 = std::integral_constant<int, 64>;
  using I128 = std::integral_constant<int, 128>;
  using I0 = std::integral_constant<int, 0>;
  if (p.d == 64 && p.dv_dim == 64)
    run(I64{}, I64{});
  else if (p.d == 128 && p.dv_dim == 128)
    run(I128{}, I128{});
  else if (p.d <= 64 && p.dv_dim <= 64)
    run(I64{}, I0{});
  else
    run(I128{}, I0{});
}

template <typename T>
void forward_typed(const Geom& g, const TensorView* in, TensorView* out) {
  launch<T, false>(params<T>(g, in, out), g.heads);
}

template <typename T>
void backward_typed(const Geom& g, const TensorView* in, const TensorView* out, const TensorView& gout,
                    TensorView* gin) {
  Params<T> p = params<T>(g, in, out);
  p.dout = gout.as<const T>();
  p.dq = gin[0].as<T>(), p.dk = gin[1].as<T>(), p.dv = gin[2].as<T>();
  cudaStream_t stream = context().stream;
  const int64_t rows = g.heads * g.t;
  Scratch delta(static_cast<size_t>(rows) * sizeof(float));
  p.delta = delta.as<float>();
  attn_delta_kernel<T>
      <<<static_cast<unsigned>(attn::ceil_div(rows, attn::kThreads / 32)), attn::kThreads, 0, stream>>>(
          p.o, p.dout, p.delta, rows, g.dv);
  STRATA_CUDA_LAUNCH_CHECK();
  // dQ is summed over key tiles with FP32 atomics: into dQ itself for f32, else a scratch
  const int64_t nq = rows * g.d;
  constexpr bool kF32 = std::is_same_v<T, float>;
  Scratch dq_acc(p.dq && !kF32 ? static_cast<size_t>(nq) * sizeof(float) : 0);
  if (p.dq) {
    p.dq_acc = kF32 ? reinterpret_cast<float*>(p.dq) : dq_acc.as<float>();
    STRATA_CUDA_CHECK(cudaMemsetAsync(p.dq_acc, 0, static_cast<size_t>(nq) * sizeof(float), stream));
  }
  launch<T, true>(p, g.heads);
  if (p.dq && !kF32) {
    narrow_kernel<T><<<static_cast<unsigned>(attn::ceil_div(nq, 256)), 256, 0, stream>>>(p.dq_acc, p.dq, nq);
    STRATA_CUDA_LAUNCH_CHECK();
  }
}

template <typename Fn>
void by_dtype(const char* op, DType dt, Fn fn) {
  switch (dt) {
    case DType::f32:
      return fn(float{});
    case DType::f16:
      return fn(__half{});
    case DType::bf16:
      return fn(__nv_bfloat16{});
    default:
      throw Error(std::string(op) + " (CUDA): dtype " + dtype_name(dt) +
                  " is not supported (f32, f16, bf16)");
  }
}

}  // namespace

void sdpa_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  Geom g = geom("sdpa_forward", a, in, out);
  if (g.heads * g.t == 0) return;
  by_dtype("sdpa_forward", in[0].dtype, [&](auto tag) { forward_typed<decltype(tag)>(g, in, out); });
}

void sdpa_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                   TensorView* gin) {
  Geom g = geom("sdpa_backward", a, in, out);
  if (g.heads * g.t == 0 || !(gin[0].defined() || gin[1].defined() || gin[2].defined())) return;
  by_dtype("sdpa_backward", in[0].dtype,
           [&](auto tag) { backward_typed<decltype(tag)>(g, in, out, gout, gin); });
}

}  // namespace strata::cuda
