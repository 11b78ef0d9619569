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

#include "core/schedule/schedule.h"

namespace strata {

struct ScheduleOptions {
  std::string name = "constant";
  int64_t warmup_steps = 0;
  double warmup_start_factor = 0.0;
  int64_t step_size = 1;            // step
  std::vector<int64_t> milestones;  // multistep
  double gamma = 0.1;               // step, multistep, exponential
  double min_lr = 0.0;              // cosine, linear, plateau
  double max_lr = 0.0;              // onecycle; 0 means the optimizer's base lr
  double pct_start = 0.3;           // onecycle
  double div_factor = 25.0;         // onecycle
  double final_div_factor = 1e4;    // onecycle
  int64_t total_steps = 0;          // cosine, linear, onecycle
  int64_t plateau_patience = 10;
  double plateau_factor = 0.1;
  double plateau_threshold = 1e-4;
  int64_t plateau_cooldown = 0;
  std::string plateau_mode = "min";
};

// Throws strata::ConfigError naming the schedule.* key that is wrong.
std::unique_ptr<LrSchedule> make_schedule(const ScheduleOptions& opt, double base_lr);

// The names make_schedule accepts.
const std::vector<std::string>& schedule_names();

}  // namespace strata
