// The host-side launch arithmetic of the CUDA kernels (kernels/launch_shape.h),
// checked on the CPU against independent computations: broadcast maps against
// kernels/broadcast.h's broadcast_offset, reduction plans against a direct
// coordinate walk (every input element lands in the right output exactly once),
// strided maps against explicit strides, grid sizes, column splits and
// multi-tensor chunks for coverage without overlap.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/error.h"
#include "kernels/broadcast.h"
#include "kernels/launch_shape.h"

namespace strata::launch {
namespace {

// Random shape of rank [0, max_rank] with extents in [1, 4] (some 1s to broadcast).
Shape random_shape(std::mt19937& rng, int max_rank) {
  Shape s(std::uniform_int_distribution<int>(0, max_rank)(rng));
  for (auto& d : s) d = std::uniform_int_distribution<int>(1, 4)(rng);
  return s;
}

TEST(LaunchShape, BlocksCoverOrHitTheCap) {
  for (int64_t n : {0, 1, 255, 256, 257, 100000, 1 << 30}) {
    for (int per : {1, 4, 8}) {
      int64_t cap = grid_cap(132, kThreads);
      int64_t b = blocks_for(n, cap, kThreads, per);
      if (n == 0) {
        EXPECT_EQ(b, 0);
        continue;
      }
      EXPECT_LE(b, cap);
      EXPECT_GE(b, 1);
      // either every item has its own slot, or the grid is capped and strides
      if (b < cap) {
        EXPECT_GE(b * kThreads * per, n);
        EXPECT_LT((b - 1) * kThreads * per, n);
      }
    }
  }
  EXPECT_EQ(grid_cap(132, 256, 4), 132 * 8 * 4);
}

TEST(LaunchShape, BroadcastMapMatchesBroadcastOffset) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    Shape a = random_shape(rng, 6), b = random_shape(rng, 6);
    // make b broadcastable to a's trailing dims by copying or setting 1
    for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
      int64_t& db = b[b.size() - 1 - k];
      int64_t da = a[a.size() - 1 - k];
      if (db != da && db != 1 && da != 1) db = rng() % 2 ? 1 : da;
    }
    if (trial % 2) std::swap(a, b);
    BroadcastPlan p = broadcast_plan(a, b, "test");
    BinaryMap m = pack_broadcast(p, "test");
    EXPECT_LE(m.ndim, static_cast<int>(p.out.size()));
    int64_t n = shape_numel(p.out);
    for (int64_t i = 0; i < n; ++i) {
      int64_t oa, ob;
      m.offsets(i, oa, ob);
      ASSERT_EQ(oa, broadcast_offset(p.out, p.stride_a, i))
          << shape_str(a) << " " << shape_str(b) << " i=" << i;
      ASSERT_EQ(ob, broadcast_offset(p.out, p.stride_b, i))
          << shape_str(a) << " " << shape_str(b) << " i=" << i;
    }
  }
}

TEST(LaunchShape, CollapseMergesContiguousAndDropsOnes) {
  // a bias [C] added to [N, T, C]: the output and x collapse to one dimension,
  // the bias keeps a broadcast outer dimension
  BinaryMap m = pack_broadcast(broadcast_plan({2, 3, 5}, {5}, "test"), "test");
  ASSERT_EQ(m.ndim, 2);
  EXPECT_EQ(m.size[0], 6);
  EXPECT_EQ(m.size[1], 5);
  EXPECT_EQ(m.stride_b[0], 0);
  EXPECT_EQ(m.stride_b[1], 1);
  EXPECT_EQ(m.stride_a[0], 5);
  IndexMap c = pack_index({1, 4, 1, 3}, {99, 3, 77, 1}, "test");
  ASSERT_EQ(c.ndim, 1);
  EXPECT_EQ(c.size[0], 12);
  EXPECT_EQ(c.stride[0], 1);
}

TEST(LaunchShape, StridedMapMatchesExplicitStrides) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 500; ++trial) {
    Shape s = random_shape(rng, 7);
    // strides of a permuted / sliced parent: random positive multiples
    std::vector<int64_t> st(s.size());
    for (auto& v : st) v = std::uniform_int_distribution<int>(0, 20)(rng);
    IndexMap m = pack_index(s, st, "test");
    int64_t n = shape_numel(s);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0, rem = i;
      for (size_t d = s.size(); d-- > 0;) {
        off += (rem % s[d]) * st[d];
        rem /= s[d];
      }
      ASSERT_EQ(m.offset(i), off) << shape_str(s) << " i=" << i;
    }
  }
}

TEST(LaunchShape, TooManyDimensionsIsANamedError) {
  Shape s(10, 2);
  std::vector<int64_t> st(10);
  for (size_t d = 0; d < 10; ++d) st[d] = static_cast<int64_t>(3 * (10 - d) * (10 - d));  // never mergeable
  try {
    pack_index(s, st, "cuda permute");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda permute"), std::string::npos) << e.what();
  }
}

// Output flat index of input element i (coordinates with reduced ones dropped).
int64_t output_index(const Shape& in, const std::vector<bool>& red, int64_t i) {
  int64_t o = 0, mul = 1;
  for (size_t d = in.size(); d-- > 0;) {
    int64_t c = i % in[d];
    i /= in[d];
    if (red[d]) continue;
    o += c * mul;
    mul *= in[d];
  }
  return o;
}

TEST(LaunchShape, ReducePlanVisitsEachElementOnceInItsOutput) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 1000; ++trial) {
    Shape in = random_shape(rng, 6);
    std::vector<bool> red(in.size());
    for (size_t d = 0; d < in.size(); ++d) red[d] = rng() % 2;
    ReducePlan p = reduce_plan(in, red, "test");
    int64_t n = shape_numel(in), n_out = 1, count = 1;
    for (size_t d = 0; d < in.size(); ++d) (red[d] ? count : n_out) *= in[d];
    ASSERT_EQ(p.n_out, n_out);
    ASSERT_EQ(p.count, count);
    std::vector<int> seen(static_cast<size_t>(n), 0);
    for (int64_t o = 0; o < p.n_out; ++o)
      for (int64_t r = 0; r < p.count; ++r) {
        int64_t off = p.kept.offset(o) + p.reduced.offset(r);
        ASSERT_GE(off, 0);
        ASSERT_LT(off, n);
        ++seen[static_cast<size_t>(off)];
        ASSERT_EQ(output_index(in, red, off), o) << shape_str(in) << " o=" << o << " r=" << r;
      }
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], 1) << shape_str(in);
    // inner_kept: the last non-1 dimension is kept
    int last = -1;
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] != 1) last = static_cast<int>(d);
    EXPECT_EQ(p.inner_kept, last >= 0 && !red[static_cast<size_t>(last)]) << shape_str(in);
  }
}

TEST(LaunchShape, BroadcastReducePlanSumsTheGradientOfABroadcast) {
  // the gradient of b [3, 1] broadcast into [2, 3, 4]: out (o) is b's flat index
  ReducePlan p = broadcast_reduce_plan({2, 3, 4}, {3, 1}, "test");
  EXPECT_EQ(p.n_out, 3);
  EXPECT_EQ(p.count, 8);
  EXPECT_FALSE(p.inner_kept);
  BroadcastPlan b = broadcast_plan({2, 3, 4}, {3, 1}, "test");
  for (int64_t o = 0; o < p.n_out; ++o)
    for (int64_t r = 0; r < p.count; ++r)
      EXPECT_EQ(broadcast_offset(b.out, b.stride_b, p.kept.offset(o) + p.reduced.offset(r)), o);
  // an operand with the full shape reduces nothing
  ReducePlan same = broadcast_reduce_plan({2, 3}, {2, 3}, "test");
  EXPECT_EQ(same.count, 1);
  EXPECT_EQ(same.n_out, 6);
}

TEST(LaunchShape, ColumnSplitsCoverTheRangeInOrder) {
  for (int64_t n_out : {1, 7, 768, 100000})
    for (int64_t count : {1, 31, 32, 33, 1000, 8192, 1000003}) {
      int64_t s = column_splits(n_out, count, 132 * 2048);
      ASSERT_GE(s, 1);
      ASSERT_LE(s, 256);
      if (s > 1) {
        EXPECT_GE(count / s, 32) << n_out << " " << count;
        EXPECT_LE((s - 1) * n_out, 132 * 2048 + n_out);
      }
      int64_t expect_begin = 0;
      for (int64_t k = 0; k < s; ++k) {
        int64_t b, e;
        split_range(count, s, k, b, e);
        ASSERT_EQ(b, expect_begin);
        ASSERT_GE(e, b);
        expect_begin = e;
      }
      EXPECT_EQ(expect_begin, count);
    }
  // few outputs and long columns split; many outputs do not
  EXPECT_GT(column_splits(768, 8192, 132 * 2048), 1);
  EXPECT_EQ(column_splits(1 << 20, 8192, 132 * 2048), 1);
}

TEST(LaunchShape, RowSplitsFillTheGpuOnlyWhenRowsAreFewAndLong) {
  const int64_t target = 132 * 4;
  EXPECT_EQ(row_splits(1, 100, target), 1);           // short row: one block
  EXPECT_EQ(row_splits(100000, 1 << 20, target), 1);  // many rows fill the GPU already
  for (int64_t n_out : {1, 3, 100})
    for (int64_t count : {8192, 100000, 1 << 26}) {
      int64_t s = row_splits(n_out, count, target);
      ASSERT_GE(s, 1);
      ASSERT_LE(s, 1024);
      EXPECT_GE(count / s, 4096) << n_out << " " << count;
      EXPECT_LE((s - 1) * n_out, target) << n_out << " " << count;
    }
  EXPECT_GT(row_splits(1, 1 << 26, target), 100);  // a full reduction spreads over the GPU
}

TEST(LaunchShape, RowThreadsArePowersOfTwoInRange) {
  for (int64_t c : {0, 1, 32, 33, 100, 512, 513, 1 << 20}) {
    int t = row_threads(c);
    EXPECT_GE(t, 32);
    EXPECT_LE(t, 512);
    EXPECT_EQ(t & (t - 1), 0);
    if (c <= 512) {
      EXPECT_LT(t / 2, std::max<int64_t>(c, 32));
    }
  }
}

TEST(LaunchShape, MultiTensorChunksCoverEachTensorOnce) {
  std::vector<int64_t> sizes = {0, 1, 65536, 65537, 3, 200000, 0};
  const int64_t chunk = 65536;
  auto chunks = multi_tensor_chunks(sizes, chunk);
  std::vector<int64_t> covered(sizes.size(), 0);
  int32_t prev = -1;
  for (const Chunk& c : chunks) {
    ASSERT_GE(c.tensor, prev);  // in tensor order
    prev = c.tensor;
    ASSERT_EQ(c.begin, covered[static_cast<size_t>(c.tensor)]);  // contiguous, no overlap
    ASSERT_GT(c.end, c.begin);
    ASSERT_LE(c.end - c.begin, chunk);
    covered[static_cast<size_t>(c.tensor)] = c.end;
  }
  EXPECT_EQ(covered, sizes);
  int64_t expect_chunks = 0;
  for (int64_t s : sizes) expect_chunks += (s + chunk - 1) / chunk;
  EXPECT_EQ(static_cast<int64_t>(chunks.size()), expect_chunks);
}

}  // namespace
}  // namespace strata::launch
