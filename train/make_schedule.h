// make_schedule: builds a schedule from the `schedule.*` config keys.
//   name: constant | step | multistep | exponential | cosine | linear | onecycle | plateau
// cosine and linear have their warmup built in (total_steps counts the warmup);
// any other step-driven schedule (and plateau) with warmup_steps > 0 is wrapped in
// a WarmupSchedule, which starts the inner schedule when warmup ends. onecycle
// warms up through pct_start and rejects warmup_steps > 0.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nn/schedule/schedule.h"
#include "train/config/train_config.h"

namespace strata {

// Reads the `schedule` section itself. `derived_total_steps` is the run's length
// in optimizer steps, used when schedule.total_steps is 0. Throws
// strata::ConfigError naming the schedule.* key that is wrong.
std::unique_ptr<LrSchedule> make_schedule(const ScheduleConfig& config, int64_t derived_total_steps,
                                          double base_lr);

// The names make_schedule accepts.
const std::vector<std::string>& schedule_names();

}  // namespace strata
