// Early stopping: min/max modes, min_delta, patience, state round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "train/early_stopping.h"

using namespace strata;

TEST(EarlyStopping, MinModeWithDelta) {
  EarlyStopping es({.mode = "min", .patience = 3, .min_delta = 0.1});
  struct Row {
    double v;
    bool improved;
    bool stop;
    double best;
    int64_t best_epoch;
  };
  const std::vector<Row> rows = {
      {1.0, true, false, 1.0, 0},    // first value always improves
      {0.95, false, false, 1.0, 0},  // not below 1.0 - 0.1
      {0.85, true, false, 0.85, 2}, {0.9, false, false, 0.85, 2},
      {0.8, false, false, 0.85, 2},  // 0.8 is not below 0.75
      {0.76, false, true, 0.85, 2},  // third bad evaluation in a row
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(es.update(rows[i].v, static_cast<int64_t>(i)), rows[i].stop) << i;
    EXPECT_EQ(es.improved(), rows[i].improved) << i;
    EXPECT_EQ(es.best(), rows[i].best) << i;
    EXPECT_EQ(es.best_epoch(), rows[i].best_epoch) << i;
  }
  EXPECT_TRUE(es.should_stop());
  EXPECT_EQ(es.bad_epochs(), 3);
}

TEST(EarlyStopping, MaxModeAndNaN) {
  EarlyStopping es({.mode = "max", .patience = 2, .min_delta = 0.0});
  EXPECT_FALSE(es.update(0.5, 10));
  EXPECT_FALSE(es.update(0.5, 11));  // equal is not better
  EXPECT_FALSE(es.improved());
  EXPECT_FALSE(es.update(0.7, 12));
  EXPECT_TRUE(es.improved());
  EXPECT_EQ(es.best_epoch(), 12);
  EXPECT_FALSE(es.update(std::nan(""), 13));
  EXPECT_FALSE(es.improved());
  EXPECT_TRUE(es.update(0.6, 14));
}

TEST(EarlyStopping, StateRoundTrip) {
  EarlyStopping a({.mode = "min", .patience = 4, .min_delta = 0.0});
  for (int e = 0; e < 5; ++e) a.update(e == 1 ? 0.1 : 1.0, e);
  EarlyStoppingState s = a.state();
  EXPECT_EQ(s.best, 0.1);
  EXPECT_EQ(s.best_epoch, 1);
  EXPECT_EQ(s.bad_epochs, 3);
  EarlyStopping b({.mode = "min", .patience = 4, .min_delta = 0.0});
  b.load_state(s);
  EXPECT_EQ(a.update(2.0, 5), b.update(2.0, 5));
  EXPECT_TRUE(b.should_stop());
  EXPECT_THROW(EarlyStopping({.mode = "lowest"}), ConfigError);
  EXPECT_THROW(EarlyStopping({.patience = 0}), ConfigError);
}
