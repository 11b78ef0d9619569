// Causal scaled dot-product attention, backward, FlashAttention-2 style: P is
// recomputed per tile from Q, K and the saved lse, never read from memory. A
// first pass computes D = rowsum(dO * O) per row. Then one block of 4 warps per
// (head, tile of bc keys) keeps K, V and FP32 dK, dV accumulators in shared
// memory and walks the query tiles at or below the diagonal (causal block
// skipping): per tile S = Q K^T and dP = dO V^T (WMMA for halves, FP32 for
// f32), P = exp(scale S - lse), dS = P (dP - D), then dV += P^T dO,
// dK += dS^T Q, and dS K, which is added to dQ with FP32 atomics -- into dQ
// itself for f32, else into an FP32 [B,H,T,D] scratch narrowed by a last pass.
// dQ's summation order over key tiles is therefore not deterministic; dK and dV
// are. Shared memory per block: 128-160 KiB, 58-98 KiB with the compact tiles
// for 99 KiB devices (kernels/attention_tiling.h). HBM traffic per head is
// O(T*D) per key tile's walk: K, V read once, Q, dO, lse, D once per key tile,
// dK, dV written once, dQ atomics once per (query, key) tile pair. Launched by
// attention_backward.cu.
// The kernels live in a header so that tests/kernels/test_attention_simt.cpp can
// compile this very code for the host and run it with one thread per CUDA thread.
#pragma once
#include <cstdint>

#include "kernels/attention_tiling.h"
#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/kernel_macros.cuh"

namespace strata::cuda::attn_kernels {

using namespace attn_tile;
using attn::Tile;

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

template <typename T, int kDMax, int kDFixed, bool kCompact>
__global__ void __launch_bounds__(attn::kThreads) attn_backward_kernel(Params<T> p) {
  constexpr Tile tl = attn::backward_tile(sizeof(T), kDMax, kCompact);
  constexpr attn::BackwardSmem L = attn::backward_smem(tl, sizeof(T));
  STRATA_DYNAMIC_SHARED(unsigned char, smem, 128);
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

}  // namespace strata::cuda::attn_kernels
