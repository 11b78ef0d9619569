// Reduce-on-plateau, as PyTorch's ReduceLROnPlateau with threshold_mode='rel'.
// After each observe(metric):
//   better = mode min: metric < best * (1 - threshold); max: metric > best * (1 + threshold)
//   better ? (best = metric, bad = 0) : ++bad
//   in cooldown (cooldown_counter > 0): --cooldown_counter, bad = 0
//   bad > patience: lr = max(lr * factor, min_lr) (only if that lowers it by > 1e-8),
//                   cooldown_counter = cooldown, bad = 0
// lr(step) is the current rate whatever the step.
#pragma once
#include "nn/schedule/schedule.h"

namespace strata {

struct PlateauOptions {
  std::string mode = "min";  // "min" or "max"
  double factor = 0.1;       // < 1
  int64_t patience = 10;
  double threshold = 1e-4;  // relative
  int64_t cooldown = 0;
  double min_lr = 0.0;
};

class ReduceOnPlateauSchedule : public LrSchedule {
 public:
  ReduceOnPlateauSchedule(double base_lr, PlateauOptions opt = {});
  double lr(int64_t step) const override;
  void observe(double metric) override;
  bool metric_driven() const override { return true; }
  std::string name() const override { return "plateau"; }
  ScheduleState state() const override;
  void load_state(const ScheduleState& s) override;

  double current_lr() const { return lr_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return bad_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }

 private:
  bool is_better(double metric) const;

  PlateauOptions opt_;
  bool max_mode_;
  double lr_, best_;
  int64_t bad_ = 0, cooldown_counter_ = 0;
};

}  // namespace strata
