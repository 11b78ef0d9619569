#include "data/loader/order_planner.h"

#include <numeric>
#include <string>

#include "base/error.h"

namespace strata::data {

namespace {

// Independent streams for (seed, epoch, purpose, index) so that changing one
// window's shuffle never shifts another's.
uint64_t stream_seed(uint64_t seed, int64_t epoch, uint64_t purpose, uint64_t index) {
  PlanRng r(seed ^ 0xA0761D6478BD642Full);
  uint64_t s = r.next() ^ (static_cast<uint64_t>(epoch) * 0xE7037ED1A0B428DBull);
  PlanRng r2(s + purpose * 0x8EBC6AF09C88C6E3ull);
  return r2.next() ^ (index * 0x589965CC75374CC3ull);
}

template <typename T>
void fisher_yates(std::vector<T>& v, size_t begin, size_t end, PlanRng& rng) {
  for (size_t i = end - begin; i > 1; --i) {
    size_t j = static_cast<size_t>(rng.below(i));
    std::swap(v[begin + i - 1], v[begin + j]);
  }
}

void check(const OrderOptions& o) {
  if (o.global_batch < 1)
    throw ConfigError("order: global batch must be >= 1, got " + std::to_string(o.global_batch));
  if (o.shuffle_window < 1)
    throw ConfigError("order: shuffle window must be >= 1 shard, got " + std::to_string(o.shuffle_window));
}

}  // namespace

int64_t global_batches(int64_t total_samples, const OrderOptions& opts) {
  check(opts);
  if (opts.remainder == Remainder::kDrop) return total_samples / opts.global_batch;
  return (total_samples + opts.global_batch - 1) / opts.global_batch;
}

std::vector<SampleRef> global_order(const std::vector<int64_t>& shard_samples, const OrderOptions& opts,
                                    int64_t epoch) {
  check(opts);
  const size_t nshards = shard_samples.size();
  std::vector<int32_t> shards(nshards);
  std::iota(shards.begin(), shards.end(), 0);
  if (opts.shuffle) {
    PlanRng rng(stream_seed(opts.seed, epoch, 1, 0));
    fisher_yates(shards, 0, nshards, rng);
  }
  int64_t total = std::accumulate(shard_samples.begin(), shard_samples.end(), int64_t{0});
  std::vector<SampleRef> order;
  order.reserve(static_cast<size_t>(global_batches(total, opts) * opts.global_batch));
  int32_t window = 0;
  for (size_t w0 = 0; w0 < nshards; w0 += static_cast<size_t>(opts.shuffle_window), ++window) {
    size_t begin = order.size();
    size_t w1 = std::min(nshards, w0 + static_cast<size_t>(opts.shuffle_window));
    for (size_t k = w0; k < w1; ++k)
      for (int64_t i = 0; i < shard_samples[static_cast<size_t>(shards[k])]; ++i)
        order.push_back(SampleRef{shards[k], window, i});
    if (opts.shuffle) {
      PlanRng rng(stream_seed(opts.seed, epoch, 2, static_cast<uint64_t>(window)));
      fisher_yates(order, begin, order.size(), rng);
    }
  }
  int64_t keep = global_batches(total, opts) * opts.global_batch;
  if (keep <= total) {
    order.resize(static_cast<size_t>(keep));
  } else {
    // Pad by repeating the head of the order; the repeats form their own segment
    // because they come back long after their window was released.
    for (int64_t i = 0; order.size() < static_cast<size_t>(keep); ++i) {
      SampleRef r = order[static_cast<size_t>(i % total)];
      r.segment = window;
      order.push_back(r);
    }
  }
  return order;
}

std::vector<SampleRef> rank_order(const std::vector<SampleRef>& global, int64_t global_batch, int world,
                                  int rank, int64_t first_step) {
  if (world < 1 || rank < 0 || rank >= world)
    throw ConfigError("order: rank " + std::to_string(rank) + " is outside world size " +
                      std::to_string(world));
  if (global_batch % world != 0)
    throw ConfigError("order: global batch " + std::to_string(global_batch) +
                      " is not divisible by world size " + std::to_string(world));
  const int64_t per_rank = global_batch / world;
  const int64_t steps = static_cast<int64_t>(global.size()) / global_batch;
  std::vector<SampleRef> mine;
  if (first_step < steps) mine.reserve(static_cast<size_t>((steps - first_step) * per_rank));
  for (int64_t s = first_step; s < steps; ++s) {
    auto it = global.begin() + s * global_batch + rank * per_rank;
    mine.insert(mine.end(), it, it + per_rank);
  }
  return mine;
}

}  // namespace strata::data
