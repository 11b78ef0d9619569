// Launch arithmetic of the CUDA elementwise, reduction, layout and device-op
// kernels, kept in plain C++ so that it is unit-tested on machines without a GPU
// (tests/kernels/test_launch_shape.cpp): grid sizes for grid-stride loops, the
// packing of broadcast / strided index maps into a few collapsed dimensions that
// a kernel decodes per element, the [kept, reduced] geometry of a reduction, the
// split of a column reduction into deterministic partial sums, and the chunking
// of multi-tensor launches. Decoders are STRATA_HD so kernels call the same code.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/runtime/tensor_view.h"
#include "kernels/scalar_math.h"

namespace strata::launch {

inline constexpr int kThreads = 256;  // threads per block of the 1-D kernels
inline constexpr int kMaxDims = 8;    // dimensions an index map keeps after collapsing

// ---- 1-D grids ----------------------------------------------------------------

// Blocks resident at once on `sm_count` SMs (2048 threads each), times `waves`:
// a grid-stride loop needs no more blocks than this to keep every SM busy.
inline int64_t grid_cap(int sm_count, int threads = kThreads, int waves = 4) {
  return static_cast<int64_t>(std::max(sm_count, 1)) * std::max(2048 / threads, 1) * waves;
}

// Blocks of `threads` for n items at `per_thread` items per thread, at most
// `cap` (the loop strides over the rest). 0 blocks when there is nothing to do.
inline int64_t blocks_for(int64_t n, int64_t cap, int threads = kThreads, int per_thread = 1) {
  if (n <= 0) return 0;
  int64_t per_block = static_cast<int64_t>(threads) * per_thread;
  return std::min((n + per_block - 1) / per_block, std::max<int64_t>(cap, 1));
}

// ---- index maps -------------------------------------------------------------

// Flat index over `size` (row-major) -> element offset through `stride`.
struct IndexMap {
  int ndim = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};

  STRATA_HD int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t q = i / size[d];
      off += (i - q * size[d]) * stride[d];
      i = q;
    }
    return off;
  }
};

// Flat index over one shape -> the offsets of two operands (numpy broadcasting).
struct BinaryMap {
  int ndim = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride_a[kMaxDims] = {};
  int64_t stride_b[kMaxDims] = {};

  STRATA_HD void offsets(int64_t i, int64_t& oa, int64_t& ob) const {
    oa = 0;
    ob = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t q = i / size[d];
      int64_t idx = i - q * size[d];
      oa += idx * stride_a[d];
      ob += idx * stride_b[d];
      i = q;
    }
  }
};

// Drops dimensions of size 1 and merges each dimension into its outer neighbour
// when every stride array walks both as one (stride[d] == stride[d+1] * size[d+1]).
// `size` and each array of `strides` are rewritten in place, in step.
void collapse_dims(Shape& size, std::vector<std::vector<int64_t>*> strides);

// Row-major strides of a contiguous tensor of shape s.
std::vector<int64_t> contiguous_strides(const Shape& s);

// The collapsed map of `shape` read through `strides`; throws Error naming `what`
// when more than kMaxDims dimensions remain.
IndexMap pack_index(Shape shape, std::vector<int64_t> strides, const char* what);
// The collapsed two-operand map of a broadcast plan.
BinaryMap pack_broadcast(const BroadcastPlan& p, const char* what);

// ---- reductions ---------------------------------------------------------------

// A contiguous input seen as kept dimensions (the output's, in order) and reduced
// dimensions: element (o, r) lives at kept.offset(o) + reduced.offset(r).
struct ReducePlan {
  int64_t n_out = 1;        // outputs (product of the kept extents)
  int64_t count = 1;        // elements folded into each output
  IndexMap kept;            // output flat index -> input offset
  IndexMap reduced;         // reduced flat index -> input offset
  bool inner_kept = false;  // the innermost input dimension is kept: outputs are
                            // contiguous in the input, so thread-per-output reads coalesce
};

// reduced[d]: input dimension d is folded (its extent may be anything).
ReducePlan reduce_plan(const Shape& in, const std::vector<bool>& reduced, const char* what);
// Reduction of the gradient of a broadcast: `from` (the broadcast shape) summed
// down to `to` (broadcastable to `from`).
ReducePlan broadcast_reduce_plan(const Shape& from, const Shape& to, const char* what);

// Partial sums per output for a thread-per-output (column) reduction: enough
// splits of the reduced range that about `target_threads` threads work, each
// split at least `min_rows` long, at most `max_splits`. 1 means no partials.
int64_t column_splits(int64_t n_out, int64_t count, int64_t target_threads, int64_t min_rows = 32,
                      int64_t max_splits = 256);
// [begin, end) of split s of count rows cut into `splits` near-equal parts.
STRATA_HD inline void split_range(int64_t count, int64_t splits, int64_t s, int64_t& begin, int64_t& end) {
  begin = count * s / splits;
  end = count * (s + 1) / splits;
}

// Blocks per output for a block-per-output (row) reduction: with few outputs and
// long rows, each row is cut into segments (about `target_blocks` blocks in all,
// each segment at least `min_per_block` elements) whose partial sums a second
// pass adds in segment order. 1 means one block per row.
int64_t row_splits(int64_t n_out, int64_t count, int64_t target_blocks, int64_t min_per_block = 4096,
                   int64_t max_splits = 1024);

// Threads of a block-per-output (row) reduction: a power of two from 32 to 512,
// no more than the row needs.
int row_threads(int64_t count);

// ---- multi-tensor launches ----------------------------------------------------

// One block's share of a multi-tensor launch: elements [begin, end) of tensor `tensor`.
struct Chunk {
  int32_t tensor = 0;
  int64_t begin = 0, end = 0;
};

// Cuts tensors of the given sizes into chunks of at most `chunk` elements, in
// tensor order (empty tensors give none): block b of the launch takes chunk b.
std::vector<Chunk> multi_tensor_chunks(const std::vector<int64_t>& numels, int64_t chunk);

}  // namespace strata::launch
