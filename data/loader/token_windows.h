// TokenWindows: the (input, target) windows of a token stream and the order in
// which an epoch visits them, as pure functions of (token count, context, seed,
// epoch, global batch); TokenLoader (data/loader/token_loader.h) reads the tokens.
//
// The dataset's shards form one stream t[0..N). Window k (k < (N - 1) / T) is
// input = t[kT, kT + T) and target = t[kT + 1, kT + T + 1): the input shifted by
// one token, so a window reads T + 1 tokens and windows share none of their
// inputs. The global order of an epoch is a permutation of the windows (stream
// order without shuffle) cut into global batches like the image loader's
// (data/loader/order_planner.h): kDrop keeps whole global batches only, kPad repeats the
// head of the order to fill the last one. Global step s is positions
// [s*GB, (s+1)*GB); rank r of a world of w takes [s*GB + r*GB/w, s*GB + (r+1)*GB/w),
// so every world size with the same global batch sees the same global batches.
//
// Shard windows (a corpus larger than the node cache, docs/loader.md): built
// from the shards' token counts and W shards per window, the windows are then
// per shard (window k of shard s reads t[start_s + kT, start_s + kT + T], never
// past the shard's end: up to T tokens at each shard's end are not read), and an
// epoch is: the shards permuted (seed, epoch), cut into shard windows of W
// consecutive shards, each shard window's windows shuffled (seed, epoch, shard
// window), each shard window giving floor(windows / GB) global batches (the rest
// of it is dropped), so that a global batch reads the shards of one shard window
// only. The epoch keeps the first global_batches() of those: a count that every
// permutation reaches (token_windows.cpp), so every epoch has the same number of
// steps; a surplus is dropped from the epoch's last shard windows. Shards whose
// windows are a multiple of GB (equal shards, as strata-pack writes) lose none.
// Only Remainder::kDrop with shuffle.
#pragma once
#include <cstdint>
#include <vector>

#include "data/loader/order_planner.h"

namespace strata::data {

struct TokenOrderOptions {
  uint64_t seed = 0;
  int64_t global_batch = 1;
  bool shuffle = true;  // false: windows in stream order
  Remainder remainder = Remainder::kDrop;
};

class TokenWindows {
 public:
  // `context` is T (>= 1). A stream too short for one window has windows() == 0.
  TokenWindows(int64_t tokens, int64_t context, TokenOrderOptions order);
  // Shard windows of `window_shards` (1 .. shards - 1) shards each; `shard_tokens`
  // per shard (manifest order). Needs order.shuffle and Remainder::kDrop.
  TokenWindows(const std::vector<int64_t>& shard_tokens, int64_t window_shards, int64_t context,
               TokenOrderOptions order);

  int64_t tokens() const { return tokens_; }
  int64_t context() const { return context_; }
  int64_t windows() const { return windows_; }
  const TokenOrderOptions& order() const { return order_; }
  // Global batches of an epoch under the remainder rule (0: not one batch).
  int64_t global_batches() const;
  // The first token of window k (it reads tokens [kT, kT + T]); stream windows only.
  int64_t first_token(int64_t k) const { return k * context_; }

  // 0: the windows are the stream's (the whole corpus is one shard window);
  // else the shards per shard window.
  int64_t window_shards() const { return window_shards_; }
  // The shard window that global step `step` of the current epoch reads
  // (0 without shard windows), and its shards in the epoch's shard order
  // (manifest indices; none without shard windows).
  int64_t shard_window_of_step(int64_t step) const;
  std::vector<int32_t> shards_of_window(int64_t w) const;
  // Shard windows of the current epoch that serve at least one batch.
  int64_t shard_windows_used() const;
  // The shard window read after shard window w, or -1 when w is the epoch's last.
  int64_t next_shard_window(int64_t w) const;
  // The first token of the window at position p of the current epoch (either mode).
  int64_t start_at(int64_t p);

  // The permutation of [0, windows) that a shuffled epoch `epoch` visits.
  static std::vector<int64_t> epoch_order(int64_t windows, uint64_t seed, int64_t epoch);

  // Makes `epoch` the epoch that window_at() answers for.
  void start_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }
  // The window at position p (< global_batches() * global_batch) of the epoch's
  // global order; positions past windows() are padding (kPad) and repeat the head.
  int64_t window_at(int64_t p) const;
  // How many of the positions [first, first + n) hold real windows, not padding:
  // padding only ever follows the last real window.
  int64_t real_positions(int64_t first, int64_t n) const;

 private:
  int64_t tokens_;
  int64_t context_;
  int64_t windows_;
  TokenOrderOptions order_;
  int64_t epoch_ = -1;
  std::vector<int64_t> perm_;  // empty without shuffle

  // Shard windows (window_shards_ > 0).
  void plan_epoch();
  int64_t window_shards_ = 0;
  int64_t plan_batches_ = 0;
  std::vector<int64_t> shard_start_, shard_windows_;  // per shard: first token, windows
  std::vector<int32_t> shard_perm_;                   // this epoch's shard order
  std::vector<int64_t> first_batch_;                  // per shard window: its first global step, then the end
  int64_t ordered_window_ = -1;                       // the shard window group_order_ holds
  std::vector<int64_t> group_order_;                  // its windows' first tokens, shuffled
};

}  // namespace strata::data
