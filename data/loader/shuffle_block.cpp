#include "data/loader/shuffle_block.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "base/error.h"
#include "data/loader/staging_plan.h"

namespace strata::data {

namespace {

// Sorted prefix sums: the fewest samples any `w` shards hold, and the most bytes
// any `k` shards take. Shard sizes differ, and an epoch's permutation may put
// the smallest (or the largest) together, so the bound takes the extremes.
struct Extremes {
  std::vector<int64_t> fewest_samples;  // [w] = sum of the w smallest sample counts
  std::vector<int64_t> most_bytes;      // [k] = sum of the k largest byte sizes

  Extremes(std::vector<int64_t> samples, std::vector<int64_t> bytes) {
    std::sort(samples.begin(), samples.end());
    std::sort(bytes.begin(), bytes.end(), std::greater<>());
    fewest_samples.assign(samples.size() + 1, 0);
    most_bytes.assign(bytes.size() + 1, 0);
    std::partial_sum(samples.begin(), samples.end(), fewest_samples.begin() + 1);
    std::partial_sum(bytes.begin(), bytes.end(), most_bytes.begin() + 1);
  }
  int64_t shards() const { return static_cast<int64_t>(most_bytes.size()) - 1; }
};

// Windows that `len` consecutive positions of the order can touch. The windows
// strictly inside such a range are whole; every one but the last window of the
// order (which can only be at the range's end) holds `window` shards, so at
// least `min_samples` samples: (touched - 2) * min_samples <= len - 2.
int64_t windows_touched(int64_t len, int64_t min_samples) {
  if (len <= 1) return 1;
  return 2 + (len - 2) / std::max<int64_t>(min_samples, 1);
}

int64_t pin_bound(const Extremes& x, int64_t window, const WindowBudget& b) {
  const int64_t n = x.shards();
  window = std::clamp<int64_t>(window, 1, std::max<int64_t>(n, 1));
  const int64_t min_samples = x.fewest_samples[static_cast<size_t>(window)];
  // A rank's `span_batches` consecutive batches lie within span_batches global
  // steps of the global order (its slices of them), whatever the world size.
  const int64_t span = b.span_batches * b.global_batch;
  auto shards_of = [&](int64_t len) { return std::min(n, window * windows_touched(len, min_samples)); };
  int64_t bound = x.most_bytes[static_cast<size_t>(shards_of(span))];
  // The padded tail (shorter than a global batch) repeats the order's head: its
  // uses are new uses of the shards of the windows that head touches.
  if (b.pad) bound += x.most_bytes[static_cast<size_t>(shards_of(std::min(span, b.global_batch - 1)))];
  return bound;
}

void check(const std::vector<int64_t>& samples, const std::vector<int64_t>& bytes, const WindowBudget& b) {
  if (samples.size() != bytes.size())
    throw ConfigError("shuffle window: " + std::to_string(samples.size()) + " sample counts for " +
                      std::to_string(bytes.size()) + " shard sizes");
  if (b.global_batch < 1 || b.span_batches < 1)
    throw ConfigError("shuffle window: global batch and batches in flight must be >= 1, got " +
                      std::to_string(b.global_batch) + " and " + std::to_string(b.span_batches));
}

}  // namespace

int64_t window_pin_bound(const std::vector<int64_t>& shard_samples, const std::vector<int64_t>& shard_bytes,
                         int64_t window, const WindowBudget& budget) {
  check(shard_samples, shard_bytes, budget);
  return pin_bound(Extremes(shard_samples, shard_bytes), window, budget);
}

int64_t widest_shuffle_window(const std::vector<int64_t>& shard_samples,
                              const std::vector<int64_t>& shard_bytes, const WindowBudget& budget) {
  check(shard_samples, shard_bytes, budget);
  const Extremes x(shard_samples, shard_bytes);
  const int64_t n = x.shards(), whole = x.most_bytes.back();
  for (int64_t w = n; w > 1; --w) {
    const int64_t need =
        node_cache_need(pin_bound(x, w, budget), budget.lookahead_bytes, whole, budget.local_ranks);
    if (need <= budget.cache_bytes) return w;
  }
  return 1;
}

}  // namespace strata::data
