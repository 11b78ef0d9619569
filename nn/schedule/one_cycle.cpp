#include "nn/schedule/one_cycle.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"

namespace strata {
namespace {
double cos_anneal(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
}
}  // namespace

OneCycleSchedule::OneCycleSchedule(double max_lr, int64_t total_steps, double pct_start, double div_factor,
                                   double final_div_factor)
    : max_lr_(max_lr) {
  if (!(max_lr > 0.0) || !std::isfinite(max_lr))
    throw ConfigError("onecycle schedule: schedule.max_lr must be > 0, got " + std::to_string(max_lr));
  if (total_steps <= 0)
    throw ConfigError("onecycle schedule: schedule.total_steps must be > 0, got " +
                      std::to_string(total_steps));
  if (!(div_factor > 0.0) || !(final_div_factor > 0.0))
    throw ConfigError("onecycle schedule: div_factor and final_div_factor must be > 0");
  end1_ = pct_start * static_cast<double>(total_steps) - 1.0;
  end2_ = static_cast<double>(total_steps) - 1.0;
  if (!(pct_start > 0.0 && pct_start < 1.0) || !(end1_ > 0.0) || !(end2_ > end1_))
    throw ConfigError("onecycle schedule: schedule.pct_start (" + std::to_string(pct_start) +
                      ") must leave at least two steps in each phase of schedule.total_steps (" +
                      std::to_string(total_steps) + ")");
  initial_ = max_lr / div_factor;
  final_ = initial_ / final_div_factor;
}

double OneCycleSchedule::lr(int64_t step) const {
  if (step < 0) throw Error("schedule: step must be >= 0, got " + std::to_string(step));
  double s = std::min(static_cast<double>(step), end2_);
  if (s <= end1_) return cos_anneal(initial_, max_lr_, s / end1_);
  return cos_anneal(max_lr_, final_, (s - end1_) / (end2_ - end1_));
}

}  // namespace strata
