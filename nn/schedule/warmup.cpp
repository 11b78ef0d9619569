#include "nn/schedule/warmup.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"

namespace strata {
namespace {

void check_warmup(int64_t warmup_steps, double start_factor, const std::string& who) {
  if (warmup_steps < 0)
    throw ConfigError(who + " schedule: schedule.warmup_steps must be >= 0, got " +
                      std::to_string(warmup_steps));
  if (!(start_factor >= 0.0 && start_factor <= 1.0))
    throw ConfigError(who + " schedule: schedule.warmup_start_factor must be in [0, 1], got " +
                      std::to_string(start_factor));
}

void check_decay(double base_lr, int64_t warmup_steps, int64_t total_steps, double min_lr,
                 const std::string& who) {
  if (!(base_lr >= 0.0) || !std::isfinite(base_lr))
    throw ConfigError(who + " schedule: base lr must be finite and >= 0, got " + std::to_string(base_lr));
  if (total_steps <= warmup_steps)
    throw ConfigError(who + " schedule: schedule.warmup_steps (" + std::to_string(warmup_steps) +
                      ") must be less than the steps the schedule spans (" + std::to_string(total_steps) +
                      ": schedule.total_steps, or when it is 0 trainer.epochs x steps per epoch, at most "
                      "trainer.max_steps)");
  if (!(min_lr >= 0.0 && min_lr <= base_lr))
    throw ConfigError(who + " schedule: schedule.min_lr must be in [0, base lr], got " +
                      std::to_string(min_lr));
}

// Fraction of the decay phase done at `step` (0 at the end of warmup, 1 at total).
double decay_progress(int64_t step, int64_t warmup, int64_t total) {
  return static_cast<double>(std::min(step - warmup, total - warmup)) / static_cast<double>(total - warmup);
}

void check_step(int64_t step) {
  if (step < 0) throw Error("schedule: step must be >= 0, got " + std::to_string(step));
}

}  // namespace

double warmup_factor(int64_t step, int64_t warmup_steps, double start_factor) {
  if (step >= warmup_steps) return 1.0;
  return start_factor + (1.0 - start_factor) * static_cast<double>(step) / static_cast<double>(warmup_steps);
}

CosineSchedule::CosineSchedule(double base_lr, int64_t warmup_steps, double warmup_start_factor,
                               int64_t total_steps, double min_lr)
    : base_(base_lr),
      start_factor_(warmup_start_factor),
      min_lr_(min_lr),
      warmup_(warmup_steps),
      total_(total_steps) {
  check_warmup(warmup_steps, warmup_start_factor, "cosine");
  check_decay(base_lr, warmup_steps, total_steps, min_lr, "cosine");
}

double CosineSchedule::lr(int64_t step) const {
  check_step(step);
  if (step < warmup_) return base_ * warmup_factor(step, warmup_, start_factor_);
  double t = decay_progress(step, warmup_, total_);
  return min_lr_ + (base_ - min_lr_) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
}

LinearSchedule::LinearSchedule(double base_lr, int64_t warmup_steps, double warmup_start_factor,
                               int64_t total_steps, double min_lr)
    : base_(base_lr),
      start_factor_(warmup_start_factor),
      min_lr_(min_lr),
      warmup_(warmup_steps),
      total_(total_steps) {
  check_warmup(warmup_steps, warmup_start_factor, "linear");
  check_decay(base_lr, warmup_steps, total_steps, min_lr, "linear");
}

double LinearSchedule::lr(int64_t step) const {
  check_step(step);
  if (step < warmup_) return base_ * warmup_factor(step, warmup_, start_factor_);
  double t = decay_progress(step, warmup_, total_);
  return base_ + (min_lr_ - base_) * t;
}

WarmupSchedule::WarmupSchedule(std::unique_ptr<LrSchedule> inner, int64_t warmup_steps,
                               double warmup_start_factor)
    : inner_(std::move(inner)), warmup_(warmup_steps), start_factor_(warmup_start_factor) {
  if (!inner_) throw ConfigError("warmup schedule: no inner schedule");
  check_warmup(warmup_steps, warmup_start_factor, "warmup");
}

double WarmupSchedule::lr(int64_t step) const {
  check_step(step);
  if (step < warmup_) return inner_->lr(0) * warmup_factor(step, warmup_, start_factor_);
  return inner_->lr(step - warmup_);
}

ScheduleState WarmupSchedule::state() const {
  ScheduleState s = inner_->state();
  s.name = name();
  return s;
}

void WarmupSchedule::load_state(const ScheduleState& s) {
  LrSchedule::load_state(s);
  ScheduleState inner = s;
  inner.name = inner_->name();
  inner_->load_state(inner);
}

}  // namespace strata
