// TokenWindows: (input, target) training windows of a token dataset for causal
// language modelling. The dataset's shards form one token stream t[0..N); window
// k (k < (N - 1) / T) is input = t[kT, kT + T) and target = t[kT + 1, kT + T + 1),
// the input shifted by one token. An epoch visits every window exactly once in a
// shuffled order that is a pure function of (seed, epoch); position() / restore()
// continue an epoch exactly where it stopped (the loader's resume convention).
// The whole stream is held in memory (a few MB for the byte-level corpus); the
// loader's shard-by-shard staging is not used here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch_source.h"

namespace strata::data {

class TokenWindows {
 public:
  // `tokens` is the stream; `context` is T (>= 1).
  TokenWindows(std::vector<int32_t> tokens, int64_t context, uint64_t seed);
  // Reads a local token dataset (a directory with manifest.json, docs/data-format.md).
  static TokenWindows open(const std::string& dir, int64_t context, uint64_t seed);

  int64_t context() const { return context_; }
  int64_t windows_per_epoch() const { return windows_; }
  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }

  // The order of epoch `epoch`: a permutation of [0, windows).
  static std::vector<int64_t> epoch_order(int64_t windows, uint64_t seed, int64_t epoch);

  void start_epoch(int64_t epoch);
  // Writes the next window of the epoch (T ids each, i64 as the embedding op
  // takes them); false at the end of the epoch.
  bool next(int64_t* input, int64_t* target);
  // Window k of the stream, whatever the order.
  void window(int64_t k, int64_t* input, int64_t* target) const;

  // {"epoch", "window" (the next window of the epoch), "seed", "context"}.
  SourcePosition position() const;
  // Throws ConfigError when the position was saved with another seed or context.
  void restore(const SourcePosition& pos);

 private:
  std::vector<int32_t> tokens_;
  int64_t context_;
  uint64_t seed_;
  int64_t windows_;
  int64_t epoch_ = 0;
  int64_t cursor_ = 0;
  std::vector<int64_t> order_;
};

}  // namespace strata::data
