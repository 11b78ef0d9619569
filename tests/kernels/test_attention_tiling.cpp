// The CUDA attention kernels' arithmetic, checked on the CPU: which tiles the
// causal loops visit, the shared-memory layouts against the devices' limits, and
// the online-softmax recurrence over tiles (the very attn:: functions the kernels
// call) against a plain softmax. test_attention_emulation.cpp runs the kernels'
// whole tile loops on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention_tiling.h"

namespace strata::attn {
namespace {

std::vector<Tile> forward_tiles() {
  std::vector<Tile> ts;
  for (int bytes : {2, 4})
    for (int dmax : {64, 128})
      for (bool compact : {false, true}) ts.push_back(forward_tile(bytes, dmax, compact));
  return ts;
}
std::vector<Tile> all_tiles() {
  std::vector<Tile> ts = forward_tiles();
  for (int bytes : {2, 4})
    for (int dmax : {64, 128})
      for (bool compact : {false, true}) ts.push_back(backward_tile(bytes, dmax, compact));
  return ts;
}

// A pair (query q, key k) is visible when k <= q < t.
bool tile_pair_visible(int64_t i, int64_t j, int64_t t, Tile tl) {
  for (int64_t q = i * tl.br; q < std::min(t, (i + 1) * tl.br); ++q)
    for (int64_t k = j * tl.bc; k < std::min(t, (j + 1) * tl.bc); ++k)
      if (k <= q) return true;
  return false;
}

TEST(AttentionTiling, CausalLoopsVisitExactlyTheTilesWithVisiblePairs) {
  std::vector<Tile> tiles = all_tiles();
  tiles.push_back({16, 48, 64});  // br < bc, and bc no multiple of br
  tiles.push_back({48, 16, 64});  // br > bc: rows that see nothing of a visited key tile
  for (Tile tl : tiles)
    for (int64_t t : {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129, 200}) {
      int64_t nq = ceil_div(t, tl.br), nk = ceil_div(t, tl.bc);
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t j = 0; j < nk; ++j) {
          bool visible = tile_pair_visible(i, j, t, tl);
          std::string where = "br " + std::to_string(tl.br) + " bc " + std::to_string(tl.bc) + " t " +
                              std::to_string(t) + " tile (" + std::to_string(i) + "," + std::to_string(j) +
                              ")";
          EXPECT_EQ(j < forward_kv_tiles(i, t, tl), visible) << "forward, " << where;
          EXPECT_EQ(i >= backward_first_q_tile(j, tl), visible) << "backward, " << where;
        }
    }
}

TEST(AttentionTiling, TileShapesSuitTheKernels) {
  for (Tile tl : all_tiles()) {
    EXPECT_EQ(tl.br % 16, 0);  // WMMA tiles
    EXPECT_EQ(tl.bc % 16, 0);
    EXPECT_EQ(tl.dmax % 16, 0);
    EXPECT_LE(tl.dmax, kMaxHeadDim);
  }
  for (Tile tl : forward_tiles()) EXPECT_EQ(tl.bc % 32, 0);  // the softmax: a lane per key column
}

template <typename Layout>
void check_regions(const std::vector<std::pair<size_t, size_t>>& regions, const Layout& lay, const char* what,
                   size_t limit) {
  size_t end = 0;
  for (auto [at, bytes] : regions) {
    EXPECT_EQ(at % 128, 0u) << what;
    EXPECT_GE(at, end) << what << ": regions overlap";
    end = at + bytes;
  }
  EXPECT_LE(end, lay.total) << what;
  EXPECT_LE(lay.total, limit) << what << " needs " << lay.total << " bytes, the device allows " << limit;
}

// Full tiles fit sm_80 (and so sm_90); compact ones the 99 KiB of sm_86/sm_89.
TEST(AttentionTiling, SharedMemoryLayoutsFitAndAlign) {
  for (int e : {2, 4})
    for (int dmax : {64, 128})
      for (bool compact : {false, true}) {
        const size_t limit = compact ? kSmemLimitSm86 : kSmemLimitSm80;
        SCOPED_TRACE("elem bytes " + std::to_string(e) + " dmax " + std::to_string(dmax) +
                     (compact ? " compact" : ""));
        Tile f = forward_tile(e, dmax, compact);
        ForwardSmem F = forward_smem(f, e);
        EXPECT_EQ(F.ld_d * e % 16, 0) << "WMMA ldm must be a multiple of 16 bytes";
        EXPECT_EQ(F.ld_p * e % 16, 0);
        EXPECT_EQ(F.ld_s * 4 % 16, 0);
        EXPECT_EQ(F.ld_o * 4 % 16, 0);
        EXPECT_GE(F.ld_d, dmax);
        check_regions({{F.q, size_t(f.br) * F.ld_d * e},
                       {F.k, size_t(f.bc) * F.ld_d * e},
                       {F.v, size_t(f.bc) * F.ld_d * e},
                       {F.s, size_t(f.br) * F.ld_s * 4},
                       {F.p, size_t(f.br) * F.ld_p * e},
                       {F.o, size_t(f.br) * F.ld_o * 4},
                       {F.m, size_t(f.br) * 4},
                       {F.l, size_t(f.br) * 4}},
                      F, "forward", limit);
        Tile b = backward_tile(e, dmax, compact);
        BackwardSmem B = backward_smem(b, e);
        EXPECT_EQ(B.ld_d * e % 16, 0);
        EXPECT_EQ(B.ld_p * e % 16, 0);
        check_regions({{B.k, size_t(b.bc) * B.ld_d * e},
                       {B.v, size_t(b.bc) * B.ld_d * e},
                       {B.dk, size_t(b.bc) * B.ld_o * 4},
                       {B.dv, size_t(b.bc) * B.ld_o * 4},
                       {B.q, size_t(b.br) * B.ld_d * e},
                       {B.dout, size_t(b.br) * B.ld_d * e},
                       {B.s, size_t(b.br) * B.ld_s * 4},
                       {B.dp, size_t(b.br) * B.ld_s * 4},
                       {B.p, size_t(b.br) * B.ld_p * e},
                       {B.ds, size_t(b.br) * B.ld_p * e},
                       {B.dq, size_t(b.br) * B.ld_o * 4},
                       {B.lse, size_t(b.br) * 4},
                       {B.delta, size_t(b.br) * 4}},
                      B, "backward", limit);
      }
}

TEST(AttentionTiling, OnlineSoftmaxOverTilesMatchesPlainSoftmax) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-8, 8);
  for (int bc : {32, 64})
    for (int n : {1, 7, 32, 33, 64, 65, 150}) {
      std::vector<float> s(static_cast<size_t>(n)), w(s.size());
      for (auto& x : s) x = static_cast<float>(u(rng));
      for (auto& x : w) x = static_cast<float>(u(rng));
      // running max/sum and a running weighted sum, tile by tile, as the kernel's rows
      float m = -INFINITY, l = 0, acc = 0;
      for (int j0 = 0; j0 < n; j0 += bc) {
        float tile_max = -INFINITY;
        for (int c = j0; c < std::min(n, j0 + bc); ++c) tile_max = std::max(tile_max, s[c]);
        acc *= online_rescale(m, l, tile_max);
        for (int c = j0; c < j0 + bc; ++c) {  // the tile's padding columns are masked
          float e = shifted_exp(c < n ? s[c] : -INFINITY, m);
          l += e;
          acc += e * (c < n ? w[c] : 0.0f);
        }
      }
      double mx = *std::max_element(s.begin(), s.end()), sum = 0, ref = 0;
      for (float x : s) sum += std::exp(x - mx);
      for (int c = 0; c < n; ++c) ref += std::exp(s[c] - mx) / sum * w[c];
      double lse = mx + std::log(sum);
      EXPECT_NEAR(row_lse(m, l), lse, 1e-5 * std::max(1.0, std::fabs(lse))) << "n " << n << " bc " << bc;
      EXPECT_NEAR(acc * row_inv_sum(l), ref, 1e-5 * 8) << "n " << n << " bc " << bc;
      double back = 0;  // backward's probabilities from the lse sum to 1
      for (int c = 0; c < n; ++c) back += prob_from_lse(s[c], row_lse(m, l));
      EXPECT_NEAR(back, 1.0, 1e-5);
    }
  float m = -INFINITY, l = 0;  // a row that sees no key (padding): no NaN, weight 0
  EXPECT_EQ(online_rescale(m, l, -INFINITY), 0.0f);
  EXPECT_EQ(shifted_exp(-INFINITY, m), 0.0f);
  EXPECT_EQ(row_inv_sum(l), 0.0f);
  EXPECT_EQ(row_lse(m, l), -INFINITY);
}

}  // namespace
}  // namespace strata::attn
