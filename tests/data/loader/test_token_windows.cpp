// TokenWindows, the pure windowing and order logic under TokenLoader: window
// counts, a shuffled order that is a permutation depending on (seed, epoch) only,
// stream order without shuffle, and the remainder rules (drop whole global
// batches only; pad by repeating the head, with the real positions counted).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "base/error.h"
#include "data/loader/token_windows.h"

namespace strata::data {
namespace {

std::vector<int64_t> positions(TokenWindows& w, int64_t epoch) {
  w.start_epoch(epoch);
  std::vector<int64_t> out;
  for (int64_t p = 0; p < w.global_batches() * w.order().global_batch; ++p) out.push_back(w.window_at(p));
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(TokenWindows, WindowCountsAndFirstTokens) {
  EXPECT_EQ(TokenWindows(1000, 16, {}).windows(), 999 / 16);  // the tail is dropped
  EXPECT_EQ(TokenWindows(17, 16, {}).windows(), 1);           // T + 1 tokens: one window
  EXPECT_EQ(TokenWindows(16, 16, {}).windows(), 0);
  EXPECT_EQ(TokenWindows(0, 16, {}).windows(), 0);
  EXPECT_EQ(TokenWindows(16, 16, {}).global_batches(), 0);
  EXPECT_EQ(TokenWindows(1000, 16, {}).first_token(5), 80);
  EXPECT_THROW(TokenWindows(100, 0, {}), ConfigError);
  EXPECT_THROW(TokenWindows(100, 4, {.global_batch = 0}), ConfigError);
}

TEST(TokenWindows, OrderIsAPureFunctionOfSeedAndEpoch) {
  const auto a = TokenWindows::epoch_order(500, 7, 3);
  EXPECT_EQ(a, TokenWindows::epoch_order(500, 7, 3));
  EXPECT_NE(a, TokenWindows::epoch_order(500, 7, 4));
  EXPECT_NE(a, TokenWindows::epoch_order(500, 8, 3));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, iota(500));
  EXPECT_NE(a, iota(500));  // shuffled
  // The windows object serves exactly that permutation, and recomputes it per epoch.
  TokenWindows w(500 * 8 + 1, 8, {.seed = 7, .global_batch = 5});
  EXPECT_EQ(positions(w, 3), a);
  EXPECT_EQ(positions(w, 4), TokenWindows::epoch_order(500, 7, 4));
  EXPECT_EQ(positions(w, 3), a);
}

TEST(TokenWindows, WithoutShuffleWindowsComeInStreamOrder) {
  TokenWindows w(10 * 4 + 1, 4, {.seed = 9, .global_batch = 2, .shuffle = false});
  EXPECT_EQ(positions(w, 0), iota(10));
  EXPECT_EQ(positions(w, 5), iota(10));
}

TEST(TokenWindows, DropKeepsWholeGlobalBatchesEachEpochADifferentRemainder) {
  // 103 windows, global batch 10: 10 batches, 3 windows left out, not the same ones each epoch.
  TokenWindows w(103 * 4 + 1, 4, {.seed = 1, .global_batch = 10});
  EXPECT_EQ(w.global_batches(), 10);
  std::set<std::set<int64_t>> left_out;
  for (int64_t e = 0; e < 4; ++e) {
    const auto p = positions(w, e);
    ASSERT_EQ(p.size(), 100u);
    std::set<int64_t> seen(p.begin(), p.end());
    EXPECT_EQ(seen.size(), 100u) << "a window repeated in epoch " << e;
    std::set<int64_t> out;
    for (int64_t k = 0; k < 103; ++k)
      if (!seen.count(k)) out.insert(k);
    left_out.insert(out);
  }
  EXPECT_GT(left_out.size(), 1u);
  EXPECT_EQ(w.real_positions(90, 10), 10);
}

TEST(TokenWindows, PadRepeatsTheHeadAndCountsRealPositions) {
  for (bool shuffle : {false, true}) {
    TokenWindows w(23 * 4 + 1, 4,
                   {.seed = 3, .global_batch = 10, .shuffle = shuffle, .remainder = Remainder::kPad});
    EXPECT_EQ(w.global_batches(), 3);
    const auto p = positions(w, 2);
    ASSERT_EQ(p.size(), 30u);
    std::vector<int64_t> head(p.begin(), p.begin() + 23), sorted = head;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(23));                                  // every window once, then ...
    for (size_t i = 23; i < 30; ++i) EXPECT_EQ(p[i], p[i - 23]);  // ... the head again
    EXPECT_EQ(w.real_positions(20, 10), 3);
    EXPECT_EQ(w.real_positions(25, 5), 0);
    EXPECT_EQ(w.real_positions(0, 10), 10);
  }
  // Fewer windows than one global batch: the head wraps more than once.
  TokenWindows small(3 * 4 + 1, 4, {.global_batch = 8, .shuffle = false, .remainder = Remainder::kPad});
  EXPECT_EQ(positions(small, 0), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}));
  EXPECT_EQ(small.real_positions(0, 8), 3);
  EXPECT_THROW(small.window_at(8), ConfigError);
}

}  // namespace
}  // namespace strata::data
