#include "data/loader/staging_plan.h"

#include <algorithm>
#include <unordered_map>

namespace strata::data {

StagingPlan::StagingPlan(const std::vector<SampleRef>& order, const Manifest& manifest)
    : use_at_(order.size()), uses_of_shard_(manifest.shards.size()) {
  std::unordered_map<uint64_t, int32_t> index;  // (shard, segment) -> use
  uint64_t last_key = UINT64_MAX;
  int32_t last_use = -1;
  for (size_t p = 0; p < order.size(); ++p) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(order[p].shard)) << 32) |
                         static_cast<uint32_t>(order[p].segment);
    if (key == last_key) {  // runs of one shard are common: skip the hash lookup
      ShardUse& u = uses_[static_cast<size_t>(last_use)];
      u.last = static_cast<int64_t>(p);
      u.samples++;
      use_at_[p] = last_use;
      continue;
    }
    auto [it, fresh] = index.emplace(key, static_cast<int32_t>(uses_.size()));
    last_key = key;
    last_use = it->second;
    if (fresh) {
      ShardUse u;
      u.shard = order[p].shard;
      u.first = static_cast<int64_t>(p);
      u.bytes = manifest.shards[static_cast<size_t>(u.shard)].staged_bytes();
      uses_.push_back(u);
    }
    ShardUse& u = uses_[static_cast<size_t>(it->second)];
    u.last = static_cast<int64_t>(p);
    u.samples++;
    use_at_[p] = it->second;
  }
  // Uses were created in order of first position, so uses_ is already sorted.
  for (size_t i = 0; i < uses_.size(); ++i)
    uses_of_shard_[static_cast<size_t>(uses_[i].shard)].push_back(static_cast<int32_t>(i));
}

int64_t StagingPlan::next_use(int32_t shard, int64_t pos) const {
  for (int32_t i : uses_of_shard_[static_cast<size_t>(shard)]) {
    const ShardUse& u = uses_[static_cast<size_t>(i)];
    if (u.last >= pos) return std::max(u.first, pos);
  }
  return -1;
}

int64_t StagingPlan::max_bytes_in_span(int64_t span) const {
  // A use overlaps [p, p+span) iff p lies in [first-span+1, last]: the answer is
  // the heaviest point of those intervals, found by a sweep.
  std::vector<std::pair<int64_t, int64_t>> events;  // (position, +bytes / -bytes)
  for (auto& u : uses_) {
    events.emplace_back(u.first - span + 1, u.bytes);
    events.emplace_back(u.last + 1, -u.bytes);
  }
  std::sort(events.begin(), events.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // ends before starts
  });
  int64_t cur = 0, best = 0;
  for (auto& [pos, d] : events) {
    cur += d;
    best = std::max(best, cur);
  }
  return best;
}

int64_t node_cache_need(int64_t in_use, int64_t lookahead, int64_t whole, int local_ranks) {
  const int64_t per_rank = std::min(in_use + lookahead, whole);
  return std::min(per_rank * std::max(local_ranks, 1), whole);
}

}  // namespace strata::data
