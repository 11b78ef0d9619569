// Causal scaled dot-product attention, forward, flash style (FlashAttention-2's
// loop order); q, k [B,H,T,D], v [B,H,T,Dv] in f32, f16 or bf16, D, Dv <= 128.
// One block of 4 warps per (head, tile of br query rows). The Q tile stays in
// shared memory while K/V tiles of bc keys stream through it; only the key tiles
// at or left of the diagonal are visited (causal block skipping; the longest
// query tiles are scheduled first). Per key tile: S = Q K^T (Tensor Core WMMA,
// FP32 accumulate, for halves; FP32 on CUDA cores for f32) into an FP32 tile, an
// online softmax per row in FP32 (a warp per row: running max m and sum l, the
// numerators P written back in the input dtype, the FP32 output accumulator
// rescaled by exp(m_old - m_new)), then O += P V. O and the row's lse = m + log l
// are written once. WMMA accumulators are opaque, so scores and the output
// accumulator go through shared memory (layout and budget in
// kernels/attention_tiling.h: 70-110 KiB per block, 44-75 KiB with the compact
// tiles); a register-resident mma.sync version would save that traffic. HBM
// traffic per head is O(T*D): Q read once, each K/V tile once per query tile
// that needs it, O and lse written once; no T x T tensor reaches global memory.
// Launched by attention.cu; the backward is attention_backward_kernel.cuh.
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

// kDFixed = 64 or 128 fixes D = Dv at compile time (the fast paths); 0 reads them
// from the parameters (any D, Dv <= kDMax).
template <typename T, int kDMax, int kDFixed, bool kCompact>
__global__ void __launch_bounds__(attn::kThreads) attn_forward_kernel(Params<T> p) {
  constexpr Tile tl = attn::forward_tile(sizeof(T), kDMax, kCompact);
  constexpr attn::ForwardSmem L = attn::forward_smem(tl, sizeof(T));
  STRATA_DYNAMIC_SHARED(unsigned char, smem, 128);
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

}  // namespace strata::cuda::attn_kernels
