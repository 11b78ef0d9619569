// Causal attention written once for the CPU kernel, the CUDA kernels and their
// host tests: the per-element softmax math (a masked score, the online softmax
// recurrence, the log-sum-exp, the probability recomputed from it, dS), and the
// tiling arithmetic of the flash-style CUDA kernels (tile sizes per dtype and head
// dimension, which key tiles a query tile visits under the causal mask, and the
// shared-memory layout each kernel carves). Everything is STRATA_HD and constexpr
// where it can be, so tests/kernels/test_attention_tiling.cpp and
// test_attention_emulation.cpp run on the CPU the very functions the GPU runs.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/scalar_math.h"

namespace strata::attn {

// ---- where a head's rows live ------------------------------------------------
// [B,H,T,D] keeps a head's T rows together (row stride D); [B,T,H,D], the
// layout a [B,T,C] projection's heads already have, interleaves them: row i of
// head h = b H + j starts at ((b T + i) H + j) D. With heads_per_row = H for the
// second layout and 1 for the first, one formula serves both.
struct HeadRows {
  int64_t heads_per_row, t;
  // the offset of the head's row 0, for rows of `width` elements
  STRATA_HD int64_t base(int64_t head, int64_t width) const {
    return (head / heads_per_row) * t * heads_per_row * width + (head % heads_per_row) * width;
  }
  // the distance between the head's consecutive rows
  STRATA_HD int64_t ld(int64_t width) const { return heads_per_row * width; }
};

// ---- online softmax ---------------------------------------------------------
// A query row q sees keys k <= q (and k < t: padding past the sequence end).
// Masked scores are -inf; every function below maps -inf to a zero weight
// without ever forming inf - inf.

STRATA_HD inline float masked_score(float dot, float scale, int64_t q, int64_t k, int64_t t) {
  return (k <= q && k < t && q < t) ? dot * scale : -INFINITY;
}

// exp(s - m), with exp(-inf - m) = 0 also when m itself is -inf (a row with no
// visible key yet: padding rows of the last tile).
STRATA_HD inline float shifted_exp(float s, float m) { return s == -INFINITY ? 0.0f : std::exp(s - m); }

// One tile of the online softmax for one row: the running max m and running sum
// l (of exp(s - m)) absorb a tile whose maximum is tile_max. Returns the factor
// that rescales what was accumulated under the old max (the running output row);
// the caller adds the tile's numerators shifted_exp(s, m) (new m) to l.
STRATA_HD inline float online_rescale(float& m, float& l, float tile_max) {
  float m_new = tile_max > m ? tile_max : m;
  float alpha = shifted_exp(m, m_new);
  m = m_new;
  l *= alpha;
  return alpha;
}

// The row's log-sum-exp once every tile is absorbed (-inf for an empty row).
STRATA_HD inline float row_lse(float m, float l) { return l > 0.0f ? m + std::log(l) : -INFINITY; }

// 1/l for the final output row (0 for an empty row instead of a NaN).
STRATA_HD inline float row_inv_sum(float l) { return l > 0.0f ? 1.0f / l : 0.0f; }

// The probability recomputed in backward from the saved log-sum-exp.
STRATA_HD inline float prob_from_lse(float s, float lse) { return shifted_exp(s, lse); }

// dS = P (dP - D) with D = rowsum(dO * O): the softmax backward of one score.
STRATA_HD inline float score_grad(float p, float dp, float delta) { return p * (dp - delta); }

// ---- tiling -----------------------------------------------------------------

STRATA_HD constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
STRATA_HD constexpr int round_up(int a, int b) { return (a + b - 1) / b * b; }

// Tiles of a kernel: br query rows by bc keys, head dimensions padded to
// multiples of 16 (the Tensor Core tile) and at most dmax.
struct Tile {
  int br, bc, dmax;
};

inline constexpr int kMaxHeadDim = 128;
inline constexpr int kThreads = 128;  // four warps per block, every kernel

// Forward: 64 x 64 tiles for 2-byte dtypes; f32 halves them at dmax 128 so that
// Q, K, V and the FP32 output accumulator still fit beside the score tile. The
// compact tiles fit the 99 KiB of sm_86/sm_89 parts (RTX 30/40, L4, L40S); the
// launchers take them where the device's opt-in limit is below the full ones'.
STRATA_HD constexpr Tile forward_tile(int elem_bytes, int dmax, bool compact = false) {
  if (elem_bytes == 4 && dmax > 64) return Tile{32, 32, dmax};
  return compact ? Tile{32, 64, dmax} : Tile{64, 64, dmax};
}
// Backward holds K, V, their FP32 gradient accumulators, Q, dO, two score tiles
// and a dQ tile: 32 query rows per step beside 64 keys, 32 x 32 for f32 at 128.
STRATA_HD constexpr Tile backward_tile(int elem_bytes, int dmax, bool compact = false) {
  if (compact) return elem_bytes == 4 && dmax > 64 ? Tile{16, 16, dmax} : Tile{32, 32, dmax};
  if (elem_bytes == 4) return dmax > 64 ? Tile{32, 32, dmax} : Tile{32, 64, dmax};
  return dmax > 64 ? Tile{32, 64, dmax} : Tile{64, 64, dmax};
}

// The key tiles query tile i visits: 0 .. forward_kv_tiles(i)-1. Keys past the
// last visible one (the tile's last row, or the sequence end) are skipped.
STRATA_HD constexpr int64_t forward_kv_tiles(int64_t i, int64_t t, Tile tl) {
  int64_t last_row = (i + 1) * tl.br < t ? (i + 1) * tl.br : t;  // one past
  return ceil_div(last_row, tl.bc);
}
// The query tiles key tile j visits in backward: first_q_tile(j) .. q tiles - 1.
STRATA_HD constexpr int64_t backward_first_q_tile(int64_t j, Tile tl) { return j * tl.bc / tl.br; }

// Row strides pad each shared row by 16 bytes (8 halves / 4 floats), which keeps
// WMMA's ldm rule (a multiple of 16 bytes) and staggers rows across banks.
STRATA_HD constexpr int padded_ld(int cols, int elem_bytes) { return cols + 16 / elem_bytes; }
// Regions start on 128-byte boundaries (WMMA needs 32).
STRATA_HD constexpr size_t align_region(size_t bytes) { return (bytes + 127) / 128 * 128; }

// Hands out the next region of `bytes` at offset `at` and moves `at` past it.
STRATA_HD constexpr size_t take_region(size_t& at, size_t bytes) {
  size_t r = at;
  at += align_region(bytes);
  return r;
}

// Forward shared memory, in order: Q [br][ld_d], K [bc][ld_d], V [bc][ld_d] (elem),
// S [br][ld_s] (f32 scores), P [br][ld_p] (elem probabilities), O [br][ld_o] (f32
// accumulator), m, l [br] (f32 running max and sum).
struct ForwardSmem {
  int ld_d, ld_s, ld_p, ld_o;
  size_t q, k, v, s, p, o, m, l, total;
};

STRATA_HD constexpr ForwardSmem forward_smem(Tile tl, int elem_bytes) {
  ForwardSmem f{};
  f.ld_d = padded_ld(tl.dmax, elem_bytes);
  f.ld_s = padded_ld(tl.bc, 4);
  f.ld_p = padded_ld(tl.bc, elem_bytes);
  f.ld_o = padded_ld(tl.dmax, 4);
  size_t at = 0;
  f.q = take_region(at, size_t(tl.br) * f.ld_d * elem_bytes);
  f.k = take_region(at, size_t(tl.bc) * f.ld_d * elem_bytes);
  f.v = take_region(at, size_t(tl.bc) * f.ld_d * elem_bytes);
  f.s = take_region(at, size_t(tl.br) * f.ld_s * 4);
  f.p = take_region(at, size_t(tl.br) * f.ld_p * elem_bytes);
  f.o = take_region(at, size_t(tl.br) * f.ld_o * 4);
  f.m = take_region(at, size_t(tl.br) * 4);
  f.l = take_region(at, size_t(tl.br) * 4);
  f.total = at;
  return f;
}

// Backward shared memory: K, V [bc][ld_d] (elem), dK, dV [bc][ld_o] (f32
// accumulators), Q, dO [br][ld_d] (elem), S, dP [br][ld_s] (f32), P, dS [br][ld_p]
// (elem), dQ [br][ld_o] (f32 partial), lse, delta [br] (f32).
struct BackwardSmem {
  int ld_d, ld_s, ld_p, ld_o;
  size_t k, v, dk, dv, q, dout, s, dp, p, ds, dq, lse, delta, total;
};

STRATA_HD constexpr BackwardSmem backward_smem(Tile tl, int elem_bytes) {
  BackwardSmem b{};
  b.ld_d = padded_ld(tl.dmax, elem_bytes);
  b.ld_s = padded_ld(tl.bc, 4);
  b.ld_p = padded_ld(tl.bc, elem_bytes);
  b.ld_o = padded_ld(tl.dmax, 4);
  size_t at = 0;
  b.k = take_region(at, size_t(tl.bc) * b.ld_d * elem_bytes);
  b.v = take_region(at, size_t(tl.bc) * b.ld_d * elem_bytes);
  b.dk = take_region(at, size_t(tl.bc) * b.ld_o * 4);
  b.dv = take_region(at, size_t(tl.bc) * b.ld_o * 4);
  b.q = take_region(at, size_t(tl.br) * b.ld_d * elem_bytes);
  b.dout = take_region(at, size_t(tl.br) * b.ld_d * elem_bytes);
  b.s = take_region(at, size_t(tl.br) * b.ld_s * 4);
  b.dp = take_region(at, size_t(tl.br) * b.ld_s * 4);
  b.p = take_region(at, size_t(tl.br) * b.ld_p * elem_bytes);
  b.ds = take_region(at, size_t(tl.br) * b.ld_p * elem_bytes);
  b.dq = take_region(at, size_t(tl.br) * b.ld_o * 4);
  b.lse = take_region(at, size_t(tl.br) * 4);
  b.delta = take_region(at, size_t(tl.br) * 4);
  b.total = at;
  return b;
}

// Opt-in shared memory per block (cudaDevAttrMaxSharedMemoryPerBlockOptin).
inline constexpr size_t kSmemLimitSm86 = 101376;  // 99 KiB, sm_86 / sm_89
inline constexpr size_t kSmemLimitSm80 = 166912;  // 163 KiB, A100
inline constexpr size_t kSmemLimitSm90 = 232448;  // 227 KiB, H100/H200

}  // namespace strata::attn
