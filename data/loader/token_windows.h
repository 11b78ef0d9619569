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

  int64_t tokens() const { return tokens_; }
  int64_t context() const { return context_; }
  int64_t windows() const { return windows_; }
  const TokenOrderOptions& order() const { return order_; }
  // Global batches of an epoch under the remainder rule (0: not one batch).
  int64_t global_batches() const;
  // The first token of window k (it reads tokens [kT, kT + T]).
  int64_t first_token(int64_t k) const { return k * context_; }

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
};

}  // namespace strata::data
