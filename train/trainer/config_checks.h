// The checks between config keys that the trainer makes before it takes the
// run directory, split by what they need. Without data (strata-train
// --dry-run): the monitors against the task's metrics, the optimizer's
// options against each other, and the schedule
// against the run's length where the config alone bounds it. The rest (the
// schedule against a length set by the data size, sample shapes, vocabulary)
// needs the manifests and runs when the trainer starts, still before the run
// directory exists.
#pragma once
#include <string>
#include <vector>

#include "train/config/train_config.h"
#include "train/trainer/task.h"

namespace strata {

// early_stopping.monitor (and schedule.plateau_monitor for the plateau
// schedule) must name "val_" + a metric of `task`; throws ConfigError naming the key.
void check_monitors(const TrainConfig& cfg, const Task& task);

// check_monitors, the optimizer's options, then the schedule built for the steps the run makes at most
// when the config alone bounds them (schedule.total_steps, else
// trainer.max_steps). Returns one line per check saying what it was checked
// against, and what waits for the data. Throws ConfigError naming the key.
std::vector<std::string> check_config_without_data(const TrainConfig& cfg, const Task& task);

}  // namespace strata
