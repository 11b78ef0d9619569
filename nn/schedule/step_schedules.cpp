#include "nn/schedule/step_schedules.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace strata {
namespace {
void check_base(double base_lr, const char* who) {
  if (!(base_lr >= 0.0) || !std::isfinite(base_lr))
    throw ConfigError(std::string(who) + " schedule: base lr must be finite and >= 0, got " +
                      std::to_string(base_lr));
}
void check_gamma(double gamma, const char* who) {
  if (!(gamma > 0.0) || !std::isfinite(gamma))
    throw ConfigError(std::string(who) + " schedule: schedule.gamma must be > 0, got " +
                      std::to_string(gamma));
}
void check_step(int64_t step) {
  if (step < 0) throw Error("schedule: step must be >= 0, got " + std::to_string(step));
}
}  // namespace

ConstantSchedule::ConstantSchedule(double base_lr) : base_(base_lr) { check_base(base_lr, "constant"); }
double ConstantSchedule::lr(int64_t step) const {
  check_step(step);
  return base_;
}

StepSchedule::StepSchedule(double base_lr, int64_t step_size, double gamma)
    : base_(base_lr), gamma_(gamma), step_size_(step_size) {
  check_base(base_lr, "step");
  check_gamma(gamma, "step");
  if (step_size <= 0)
    throw ConfigError("step schedule: schedule.step_size must be > 0, got " + std::to_string(step_size));
}
double StepSchedule::lr(int64_t step) const {
  check_step(step);
  return base_ * std::pow(gamma_, static_cast<double>(step / step_size_));
}

MultiStepSchedule::MultiStepSchedule(double base_lr, std::vector<int64_t> milestones, double gamma)
    : base_(base_lr), gamma_(gamma), milestones_(std::move(milestones)) {
  check_base(base_lr, "multistep");
  check_gamma(gamma, "multistep");
  for (size_t i = 0; i < milestones_.size(); ++i) {
    if (milestones_[i] < 0)
      throw ConfigError("multistep schedule: schedule.milestones must be >= 0, got " +
                        std::to_string(milestones_[i]));
    if (i > 0 && milestones_[i] <= milestones_[i - 1])
      throw ConfigError("multistep schedule: schedule.milestones must be strictly increasing");
  }
}
double MultiStepSchedule::lr(int64_t step) const {
  check_step(step);
  auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), step) - milestones_.begin();
  return base_ * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialSchedule::ExponentialSchedule(double base_lr, double gamma) : base_(base_lr), gamma_(gamma) {
  check_base(base_lr, "exponential");
  check_gamma(gamma, "exponential");
}
double ExponentialSchedule::lr(int64_t step) const {
  check_step(step);
  return base_ * std::pow(gamma_, static_cast<double>(step));
}

}  // namespace strata
