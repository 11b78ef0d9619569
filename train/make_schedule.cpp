#include "train/make_schedule.h"

#include "base/error.h"
#include "nn/schedule/one_cycle.h"
#include "nn/schedule/plateau.h"
#include "nn/schedule/step_schedules.h"
#include "nn/schedule/warmup.h"

namespace strata {

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = {"constant", "step",   "multistep", "exponential",
                                                 "cosine",   "linear", "onecycle",  "plateau"};
  return names;
}

std::unique_ptr<LrSchedule> make_schedule(const ScheduleConfig& o, int64_t derived_total_steps,
                                          double base_lr) {
  const int64_t total_steps = o.total_steps > 0 ? o.total_steps : derived_total_steps;
  std::unique_ptr<LrSchedule> s;
  const std::string& n = o.name;
  if (n == "cosine")
    return std::make_unique<CosineSchedule>(base_lr, o.warmup_steps, o.warmup_start_factor, total_steps,
                                            o.min_lr);
  if (n == "linear")
    return std::make_unique<LinearSchedule>(base_lr, o.warmup_steps, o.warmup_start_factor, total_steps,
                                            o.min_lr);
  if (n == "onecycle") {
    if (o.warmup_steps != 0)
      throw ConfigError(
          "schedule.warmup_steps: onecycle warms up through schedule.pct_start; set warmup_steps to 0");
    return std::make_unique<OneCycleSchedule>(o.max_lr > 0.0 ? o.max_lr : base_lr, total_steps, o.pct_start,
                                              o.div_factor, o.final_div_factor);
  }
  if (n == "constant")
    s = std::make_unique<ConstantSchedule>(base_lr);
  else if (n == "step")
    s = std::make_unique<StepSchedule>(base_lr, o.step_size, o.gamma);
  else if (n == "multistep")
    s = std::make_unique<MultiStepSchedule>(base_lr, o.milestones, o.gamma);
  else if (n == "exponential")
    s = std::make_unique<ExponentialSchedule>(base_lr, o.gamma);
  else if (n == "plateau") {
    PlateauOptions p;
    p.mode = o.plateau_mode;
    p.factor = o.plateau_factor;
    p.patience = o.plateau_patience;
    p.threshold = o.plateau_threshold;
    p.cooldown = o.plateau_cooldown;
    p.min_lr = o.min_lr;
    s = std::make_unique<ReduceOnPlateauSchedule>(base_lr, p);
  } else {
    std::string list;
    for (auto& k : schedule_names()) list += (list.empty() ? "" : ", ") + k;
    throw ConfigError("schedule.name: unknown schedule '" + n + "' (one of: " + list + ")");
  }
  if (o.warmup_steps > 0)
    return std::make_unique<WarmupSchedule>(std::move(s), o.warmup_steps, o.warmup_start_factor);
  if (o.warmup_steps < 0)
    throw ConfigError("schedule.warmup_steps must be >= 0, got " + std::to_string(o.warmup_steps));
  return s;
}

}  // namespace strata
