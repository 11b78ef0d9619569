// Host checks of the index arithmetic the CUDA pooling and embedding kernels run:
// clipped pool windows and the gather form of pool backward (which outputs hold
// an input cell) against brute force over many geometries, and the sort keys
// of the deterministic embedding backward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "kernels/cuda/embedding_sort.h"
#include "kernels/cuda/pool_window.h"

namespace strata {
namespace {

struct Axis {
  int64_t n, k, s, p;
  int64_t out() const { return (n + 2 * p - k) / s + 1; }  // as kernels/shape/pool.cpp
};

std::vector<Axis> axes() {
  std::vector<Axis> r;
  for (int64_t n = 1; n <= 9; ++n)
    for (int64_t k = 1; k <= 5; ++k)
      for (int64_t s = 1; s <= 4; ++s)
        for (int64_t p = 0; 2 * p <= k; ++p)
          if (n + 2 * p >= k) r.push_back({n, k, s, p});
  return r;
}

TEST(PoolWindow, IsTheWindowClippedToTheUnpaddedCells) {
  for (const Axis& a : axes())
    for (int64_t i = 0; i < a.out(); ++i) {
      std::vector<int64_t> cells;
      for (int64_t t = 0; t < a.k; ++t) {
        int64_t r = i * a.s - a.p + t;
        if (r >= 0 && r < a.n) cells.push_back(r);
      }
      cuda::Span w = cuda::pool_window(i, a.n, a.k, a.s, a.p);
      ASSERT_FALSE(cells.empty());  // the shape rule 2p <= k keeps every window non-empty
      EXPECT_EQ(w.begin, cells.front()) << a.n << " " << a.k << " " << a.s << " " << a.p << " i " << i;
      EXPECT_EQ(w.end, cells.back() + 1) << a.n << " " << a.k << " " << a.s << " " << a.p << " i " << i;
    }
}

TEST(PoolWindow, WindowsHoldingACellAreExactlyThoseThatContainIt) {
  for (const Axis& a : axes())
    for (int64_t r = 0; r < a.n; ++r) {
      std::vector<int64_t> want;
      for (int64_t i = 0; i < a.out(); ++i) {
        cuda::Span w = cuda::pool_window(i, a.n, a.k, a.s, a.p);
        if (r >= w.begin && r < w.end) want.push_back(i);
      }
      cuda::Span h = cuda::windows_holding(r, a.k, a.s, a.p, a.out());
      std::vector<int64_t> got;
      for (int64_t i = h.begin; i < h.end; ++i) got.push_back(i);
      EXPECT_EQ(got, want) << "n " << a.n << " k " << a.k << " s " << a.s << " p " << a.p << " r " << r;
    }
}

TEST(EmbeddingSort, KeysKeepValidIdsAndSendTheRestPastTheTable) {
  EXPECT_EQ(cuda::embedding_sort_key(0, 10), 0u);
  EXPECT_EQ(cuda::embedding_sort_key(9, 10), 9u);
  EXPECT_EQ(cuda::embedding_sort_key(10, 10), 10u);
  EXPECT_EQ(cuda::embedding_sort_key(-1, 10), 10u);
  EXPECT_EQ(cuda::embedding_sort_key(int64_t{1} << 40, 10), 10u);
}

TEST(EmbeddingSort, BitsHoldEveryKeyAndNoMore) {
  for (int64_t rows :
       std::vector<int64_t>{1, 2, 3, 7, 8, 255, 256, 50257, 65535, 65536, 1 << 20, (int64_t{1} << 31) + 5}) {
    int b = cuda::embedding_sort_bits(rows);
    EXPECT_GT(int64_t{1} << b, rows) << rows;        // the sentinel key `rows` fits
    EXPECT_LE(int64_t{1} << (b - 1), rows) << rows;  // one bit fewer would not
  }
}

// The run-per-id sum the segment kernel does, on keys sorted stably by the
// sort's bit range, equals the naive scatter-add for random ids with bad ones.
TEST(EmbeddingSort, StableSortedRunsGiveTheScatterSum) {
  std::mt19937_64 rng(4);
  const int64_t V = 37, count = 500;
  std::uniform_int_distribution<int64_t> u(-3, V + 2);
  std::vector<int64_t> ids(count);
  for (auto& id : ids) id = u(rng);
  std::vector<double> g(count);
  for (int64_t i = 0; i < count; ++i) g[i] = static_cast<double>(i % 7) - 3;
  std::map<int64_t, double> want;
  for (int64_t i = 0; i < count; ++i)
    if (ids[i] >= 0 && ids[i] < V) want[ids[i]] += g[i];
  std::vector<std::pair<uint32_t, int64_t>> kp;
  int bits = cuda::embedding_sort_bits(V);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t k = cuda::embedding_sort_key(ids[i], V);
    ASSERT_LT(k, 1u << bits);
    kp.push_back({k, i});
  }
  std::stable_sort(kp.begin(), kp.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::map<int64_t, double> got;
  for (size_t s = 0; s < kp.size(); ++s) {
    if (kp[s].first == V || (s > 0 && kp[s - 1].first == kp[s].first)) continue;
    double acc = 0;
    for (size_t k = s; k < kp.size() && kp[k].first == kp[s].first; ++k) acc += g[kp[k].second];
    got[kp[s].first] = acc;
  }
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace strata
