// TokenWindows (see token_windows.h). The order of an epoch is a Fisher-Yates
// shuffle driven by PlanRng (the order planner's generator, identical on every
// standard library) seeded from (seed, epoch) alone, so it can be recomputed on
// restore instead of being saved.
#include "data/loader/token_windows.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "base/error.h"

namespace strata::data {

TokenWindows::TokenWindows(int64_t tokens, int64_t context, TokenOrderOptions order)
    : tokens_(tokens), context_(context), order_(order) {
  if (context_ < 1)
    throw ConfigError("token windows: context length must be >= 1, got " + std::to_string(context));
  if (tokens_ < 0) throw ConfigError("token windows: negative token count " + std::to_string(tokens));
  if (order_.global_batch < 1)
    throw ConfigError("token windows: global batch must be >= 1, got " + std::to_string(order_.global_batch));
  windows_ = tokens_ == 0 ? 0 : (tokens_ - 1) / context_;
}

TokenWindows::TokenWindows(const std::vector<int64_t>& shard_tokens, int64_t window_shards, int64_t context,
                           TokenOrderOptions order)
    : tokens_(0), context_(context), windows_(0), order_(order), window_shards_(window_shards) {
  if (context_ < 1)
    throw ConfigError("token windows: context length must be >= 1, got " + std::to_string(context));
  if (order_.global_batch < 1)
    throw ConfigError("token windows: global batch must be >= 1, got " + std::to_string(order_.global_batch));
  const auto n = static_cast<int64_t>(shard_tokens.size());
  if (window_shards < 1 || window_shards >= n)
    throw ConfigError("token windows: " + std::to_string(window_shards) +
                      " shards per shard window, must be 1 .. " + std::to_string(n - 1));
  if (!order_.shuffle || order_.remainder != Remainder::kDrop)
    throw ConfigError("token windows: shard windows need a shuffled order that drops the remainder");
  for (int64_t t : shard_tokens) {
    if (t < 0) throw ConfigError("token windows: negative token count " + std::to_string(t));
    shard_start_.push_back(tokens_);
    shard_windows_.push_back(t == 0 ? 0 : (t - 1) / context_);
    tokens_ += t;
    windows_ += shard_windows_.back();
  }
  // A count that every shard permutation reaches: a shard window of shards with
  // a_i windows gives floor(sum a_i / GB) >= sum floor(a_i / GB) + floor(sum r_i / GB)
  // batches (r_i = a_i mod GB), and over the G shard windows the remainders' part
  // sums to at least (sum r_i - G (GB - 1)) / GB.
  const int64_t gb = order_.global_batch, groups = (n + window_shards - 1) / window_shards;
  int64_t whole = 0, rest = 0;
  for (int64_t a : shard_windows_) {
    whole += a / gb;
    rest += a % gb;
  }
  plan_batches_ = whole + std::max<int64_t>(rest - groups * (gb - 1), 0) / gb;
}

int64_t TokenWindows::global_batches() const {
  const int64_t gb = order_.global_batch;
  if (window_shards_ > 0) return plan_batches_;
  return order_.remainder == Remainder::kDrop ? windows_ / gb : (windows_ + gb - 1) / gb;
}

std::vector<int64_t> TokenWindows::epoch_order(int64_t windows, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(windows));
  std::iota(order.begin(), order.end(), 0);
  PlanRng mix(seed ^ 0x5EED70CE4E5A11EDull);  // a stream of its own, apart from the order planner's
  PlanRng rng(mix.next() ^ (static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

void TokenWindows::start_epoch(int64_t epoch) {
  if (epoch < 0) throw ConfigError("token windows: negative epoch " + std::to_string(epoch));
  if (epoch == epoch_) return;
  epoch_ = epoch;
  if (window_shards_ > 0)
    plan_epoch();
  else if (order_.shuffle)
    perm_ = epoch_order(windows_, order_.seed, epoch);
}

void TokenWindows::plan_epoch() {
  const size_t n = shard_windows_.size();
  shard_perm_.resize(n);
  std::iota(shard_perm_.begin(), shard_perm_.end(), 0);
  PlanRng mix(order_.seed ^ 0x5A4D0EB1DC0FFEE5ull);  // apart from the stream order's and the planner's
  PlanRng rng(mix.next() ^ (static_cast<uint64_t>(epoch_) * 0x9E3779B97F4A7C15ull));
  for (size_t i = n; i > 1; --i) std::swap(shard_perm_[i - 1], shard_perm_[rng.below(i)]);
  const int64_t gb = order_.global_batch, total = global_batches();
  const auto w = static_cast<size_t>(window_shards_);
  first_batch_.assign(1, 0);
  for (size_t g = 0; g * w < n; ++g) {
    int64_t windows = 0;
    for (size_t i = g * w; i < std::min(n, (g + 1) * w); ++i)
      windows += shard_windows_[static_cast<size_t>(shard_perm_[i])];
    first_batch_.push_back(std::min(first_batch_.back() + windows / gb, total));
  }
  ordered_window_ = -1;
  group_order_.clear();
}

int64_t TokenWindows::shard_window_of_step(int64_t step) const {
  if (window_shards_ == 0) return 0;
  if (epoch_ < 0) throw Error("token windows: shard_window_of_step before start_epoch");
  if (step < 0 || step >= global_batches())
    throw ConfigError("token windows: step " + std::to_string(step) + " is outside the epoch's " +
                      std::to_string(global_batches()) + " steps");
  // The last shard window starting at or before `step`: empty ones are passed over.
  return std::upper_bound(first_batch_.begin(), first_batch_.end(), step) - first_batch_.begin() - 1;
}

std::vector<int32_t> TokenWindows::shards_of_window(int64_t w) const {
  std::vector<int32_t> out;
  if (window_shards_ == 0) return out;
  const size_t n = shard_perm_.size(), first = static_cast<size_t>(w * window_shards_);
  for (size_t i = first; i < std::min(n, first + static_cast<size_t>(window_shards_)); ++i)
    out.push_back(shard_perm_[i]);
  return out;
}

int64_t TokenWindows::shard_windows_used() const {
  if (window_shards_ == 0) return 1;
  int64_t used = 0;
  for (size_t g = 0; g + 1 < first_batch_.size(); ++g) used += first_batch_[g + 1] > first_batch_[g];
  return used;
}

int64_t TokenWindows::next_shard_window(int64_t w) const {
  if (window_shards_ == 0 || w < 0 || static_cast<size_t>(w) + 1 >= first_batch_.size()) return -1;
  const int64_t end = first_batch_[static_cast<size_t>(w) + 1];
  return end < global_batches() ? shard_window_of_step(end) : -1;
}

int64_t TokenWindows::start_at(int64_t p) {
  if (window_shards_ == 0) return first_token(window_at(p));
  const int64_t gb = order_.global_batch, step = p / gb;
  const int64_t g = shard_window_of_step(step);
  if (g != ordered_window_) {
    group_order_.clear();
    for (int32_t s : shards_of_window(g)) {
      const auto i = static_cast<size_t>(s);
      for (int64_t k = 0; k < shard_windows_[i]; ++k) group_order_.push_back(shard_start_[i] + k * context_);
    }
    PlanRng mix(order_.seed ^ 0x70C5B10C5EEDull);
    PlanRng rng(mix.next() ^ (static_cast<uint64_t>(epoch_) * 0x9E3779B97F4A7C15ull) ^
                (static_cast<uint64_t>(g + 1) * 0xC2B2AE3D27D4EB4Full));
    for (size_t i = group_order_.size(); i > 1; --i)
      std::swap(group_order_[i - 1], group_order_[rng.below(i)]);
    ordered_window_ = g;
  }
  return group_order_[static_cast<size_t>((step - first_batch_[static_cast<size_t>(g)]) * gb + p % gb)];
}

int64_t TokenWindows::window_at(int64_t p) const {
  if (epoch_ < 0) throw Error("token windows: window_at before start_epoch");
  if (window_shards_ > 0) throw Error("token windows: window_at with shard windows (use start_at)");
  const int64_t end = global_batches() * order_.global_batch;
  if (p < 0 || p >= end)
    throw ConfigError("token windows: position " + std::to_string(p) + " is outside the epoch's " +
                      std::to_string(end) + " positions");
  const int64_t q = p % windows_;  // padding wraps to the head of the order
  return order_.shuffle ? perm_[static_cast<size_t>(q)] : q;
}

int64_t TokenWindows::real_positions(int64_t first, int64_t n) const {
  return std::clamp<int64_t>(windows_ - first, 0, n);
}

}  // namespace strata::data
