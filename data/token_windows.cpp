// TokenWindows (see token_windows.h). The order of an epoch is a Fisher-Yates
// shuffle driven by PlanRng (the order planner's generator, identical on every
// standard library) seeded from (seed, epoch) alone, so it can be recomputed on
// restore instead of being saved.
#include "data/token_windows.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "base/error.h"
#include "data/manifest.h"
#include "data/order_planner.h"
#include "data/shard.h"

namespace strata::data {

TokenWindows::TokenWindows(std::vector<int32_t> tokens, int64_t context, uint64_t seed)
    : tokens_(std::move(tokens)), context_(context), seed_(seed) {
  if (context_ < 1)
    throw ConfigError("token windows: context length must be >= 1, got " + std::to_string(context));
  windows_ = tokens_.empty() ? 0 : (static_cast<int64_t>(tokens_.size()) - 1) / context_;
  if (windows_ == 0)
    throw ConfigError("token windows: " + std::to_string(tokens_.size()) +
                      " tokens hold no window of context " + std::to_string(context_) +
                      " (need T + 1 tokens)");
  start_epoch(0);
}

TokenWindows TokenWindows::open(const std::string& dir, int64_t context, uint64_t seed) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  std::ifstream in(root / "manifest.json", std::ios::binary);
  if (!in) throw IoError("token dataset " + dir + ": cannot read manifest.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const Manifest m = Manifest::from_json(text, (root / "manifest.json").string());
  if (m.vocab_size == 0) throw ConfigError("dataset " + dir + " is not a token dataset (no vocab_size)");
  const bool u16 = m.schema[0].dtype == "u16";
  std::vector<int32_t> tokens;
  tokens.reserve(static_cast<size_t>(m.total_samples()));
  for (const auto& s : m.shards) {
    const ShardData d = ShardData::read((root / s.name).string(), m.schema);
    for (int64_t i = 0; i < d.samples(); ++i) {
      size_t n = 0;
      const uint8_t* p = d.sample(0, i, &n);
      if (u16) {
        uint16_t v;
        std::memcpy(&v, p, 2);
        tokens.push_back(v);
      } else {
        int32_t v;
        std::memcpy(&v, p, 4);
        tokens.push_back(v);
      }
    }
  }
  return TokenWindows(std::move(tokens), context, seed);
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
  epoch_ = epoch;
  cursor_ = 0;
  order_ = epoch_order(windows_, seed_, epoch);
}

void TokenWindows::window(int64_t k, int64_t* input, int64_t* target) const {
  if (k < 0 || k >= windows_)
    throw ConfigError("token windows: window " + std::to_string(k) + " out of range [0, " +
                      std::to_string(windows_) + ")");
  const int32_t* t = tokens_.data() + k * context_;
  for (int64_t i = 0; i < context_; ++i) {
    input[i] = t[i];
    target[i] = t[i + 1];
  }
}

bool TokenWindows::next(int64_t* input, int64_t* target) {
  if (cursor_ >= windows_) return false;
  window(order_[static_cast<size_t>(cursor_++)], input, target);
  return true;
}

SourcePosition TokenWindows::position() const {
  return {
      {"epoch", epoch_}, {"window", cursor_}, {"seed", static_cast<int64_t>(seed_)}, {"context", context_}};
}

void TokenWindows::restore(const SourcePosition& pos) {
  const auto get = [&](const char* key) {
    auto it = pos.find(key);
    if (it == pos.end()) throw ConfigError(std::string("token windows: saved position has no '") + key + "'");
    return it->second;
  };
  if (get("seed") != static_cast<int64_t>(seed_) || get("context") != context_)
    throw ConfigError("token windows: position saved with seed " + std::to_string(get("seed")) +
                      ", context " + std::to_string(get("context")) + "; this reader has seed " +
                      std::to_string(static_cast<int64_t>(seed_)) + ", context " + std::to_string(context_));
  const int64_t w = get("window");
  if (w < 0 || w > windows_)
    throw ConfigError("token windows: saved window " + std::to_string(w) + " is outside an epoch of " +
                      std::to_string(windows_) + " windows");
  start_epoch(get("epoch"));
  cursor_ = w;
}

}  // namespace strata::data
