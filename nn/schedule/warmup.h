// Linear warmup and the schedules built on it.
//
// Warmup over W steps from factor f: for step < W, lr = target * (f + (1-f) * step / W),
// so step 0 runs at f * target and step W reaches target.
//
// CosineSchedule:  warmup to base_lr, then for W <= step, t = min(step - W, T - W) / (T - W):
//                  lr = min_lr + (base_lr - min_lr) * (1 + cos(pi t)) / 2   (min_lr from step T on)
// LinearSchedule:  warmup to base_lr, then lr = base_lr + (min_lr - base_lr) * t
// WarmupSchedule:  wraps any schedule: warmup to inner.lr(0), then inner.lr(step - W),
//                  i.e. the inner schedule starts counting when warmup ends (as
//                  PyTorch's SequentialLR([LinearLR, inner], milestones=[W])).
#pragma once
#include <memory>

#include "nn/schedule/schedule.h"

namespace strata {

// The warmup multiplier for `step` < warmup_steps (1 from warmup_steps on).
double warmup_factor(int64_t step, int64_t warmup_steps, double start_factor);

class CosineSchedule : public LrSchedule {
 public:
  CosineSchedule(double base_lr, int64_t warmup_steps, double warmup_start_factor, int64_t total_steps,
                 double min_lr);
  double lr(int64_t step) const override;
  std::string name() const override { return "cosine"; }

 private:
  double base_, start_factor_, min_lr_;
  int64_t warmup_, total_;
};

class LinearSchedule : public LrSchedule {
 public:
  LinearSchedule(double base_lr, int64_t warmup_steps, double warmup_start_factor, int64_t total_steps,
                 double min_lr);
  double lr(int64_t step) const override;
  std::string name() const override { return "linear"; }

 private:
  double base_, start_factor_, min_lr_;
  int64_t warmup_, total_;
};

class WarmupSchedule : public LrSchedule {
 public:
  WarmupSchedule(std::unique_ptr<LrSchedule> inner, int64_t warmup_steps, double warmup_start_factor);
  double lr(int64_t step) const override;
  void observe(double metric) override { inner_->observe(metric); }
  bool metric_driven() const override { return inner_->metric_driven(); }
  std::string name() const override { return "warmup+" + inner_->name(); }
  ScheduleState state() const override;
  void load_state(const ScheduleState& s) override;
  const LrSchedule& inner() const { return *inner_; }

 private:
  std::unique_ptr<LrSchedule> inner_;
  int64_t warmup_;
  double start_factor_;
};

}  // namespace strata
