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

int64_t TokenWindows::global_batches() const {
  const int64_t gb = order_.global_batch;
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
  if (order_.shuffle) perm_ = epoch_order(windows_, order_.seed, epoch);
}

int64_t TokenWindows::window_at(int64_t p) const {
  if (epoch_ < 0) throw Error("token windows: window_at before start_epoch");
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
