// Launch shapes of the deterministic two-stage reductions used by the norm and
// conv-bias kernels, as plain arithmetic so that it is tested on the host. Each
// output (a channel, or a layer_norm column tile) is split over `splits` blocks
// that write partial sums; a second kernel adds a channel's partials in a fixed
// order, so the result does not depend on scheduling (no atomics). The index
// maps of the NCHW channel walks are here too, for the same reason.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/scalar_math.h"

namespace strata::cuda {

struct SplitPlan {
  int64_t splits = 1;  // blocks per output
  int64_t chunk = 0;   // elements (or rows) per block; splits * chunk >= total, no block empty
};

// `outputs` independent reductions of `total` elements each, `threads` per block:
// enough blocks to fill the device (about 4 per SM), but each block gets at
// least `min_per_thread` elements per thread so that the partials stay few.
inline SplitPlan plan_splits(int64_t outputs, int64_t total, int sm_count, int threads,
                             int64_t min_per_thread = 4, int64_t max_splits = 1024) {
  SplitPlan p;
  if (outputs <= 0 || total <= 0) return p;
  int64_t want = std::max<int64_t>(1, (4 * static_cast<int64_t>(sm_count) + outputs - 1) / outputs);
  int64_t useful = std::max<int64_t>(1, total / (static_cast<int64_t>(threads) * min_per_thread));
  p.splits = std::min({want, useful, max_splits, total});
  p.chunk = (total + p.splits - 1) / p.splits;
  p.splits = (total + p.chunk - 1) / p.chunk;  // drop blocks the rounding left empty
  return p;
}

// x[N, C, S] (NCHW with S = H W): the flat index of the j-th of channel c's N S
// elements (plane by plane), and the channel of a flat index.
STRATA_HD inline int64_t channel_element(int64_t j, int64_t c, int64_t C, int64_t S) {
  int64_t n = j / S;
  return (n * C + c) * S + (j - n * S);
}
STRATA_HD inline int64_t channel_of(int64_t i, int64_t C, int64_t S) { return (i / S) % C; }

}  // namespace strata::cuda
