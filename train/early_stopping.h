// EarlyStopping: stop when a monitored value has not improved for `patience`
// evaluations. Improvement: mode min: value < best - min_delta; max: value >
// best + min_delta (a NaN never improves). update() returns true once
// `patience` evaluations in a row brought no improvement (Keras semantics).
#pragma once
#include <cstdint>
#include <string>

namespace strata {

struct EarlyStoppingOptions {
  std::string mode = "min";  // "min" or "max"
  int64_t patience = 10;     // >= 1
  double min_delta = 0.0;    // >= 0
};

struct EarlyStoppingState {
  double best = 0.0;  // best value so far; +inf (min) / -inf (max) before any update
  int64_t best_epoch = -1;
  int64_t bad_epochs = 0;  // evaluations since the last improvement
};

class EarlyStopping {
 public:
  explicit EarlyStopping(EarlyStoppingOptions opt = {});

  // Records `value` seen at `epoch`; returns should_stop().
  bool update(double value, int64_t epoch);
  bool should_stop() const { return bad_ >= opt_.patience; }
  bool improved() const { return improved_; }  // by the last update()
  double best() const { return best_; }
  int64_t best_epoch() const { return best_epoch_; }
  int64_t bad_epochs() const { return bad_; }
  const EarlyStoppingOptions& options() const { return opt_; }

  EarlyStoppingState state() const { return {best_, best_epoch_, bad_}; }
  void load_state(const EarlyStoppingState& s);

 private:
  EarlyStoppingOptions opt_;
  double best_;
  int64_t best_epoch_ = -1, bad_ = 0;
  bool improved_ = false;
};

}  // namespace strata
