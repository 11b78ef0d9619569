#include "train/trainer/config_checks.h"

#include "base/error.h"
#include "train/make_optimizer.h"
#include "train/make_schedule.h"

namespace strata {
namespace {

// A monitor names "val_" + a metric of the task; anything else is refused
// before the first step, rather than at the first evaluation.
void check_monitor(const std::string& key, const std::string& monitor, const Task& task) {
  std::string known;
  for (auto& m : task.metric_names()) {
    if (monitor == "val_" + m) return;
    known += (known.empty() ? "val_" : ", val_") + m;
  }
  throw ConfigError(key + ": '" + monitor + "' is not a validation metric of the " + task.name() + " task (" +
                    known + ")");
}

// What the optimizer checks of its options (optimizer.decay_groups with sgd,
// Nesterov without momentum) needs no parameters: it is built over none.
class NoParameters final : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace

void check_monitors(const TrainConfig& cfg, const Task& task) {
  check_monitor("early_stopping.monitor", cfg.early_stopping.monitor, task);
  if (cfg.schedule.name == "plateau")
    check_monitor("schedule.plateau_monitor", cfg.schedule.plateau_monitor, task);
}

std::vector<std::string> check_config_without_data(const TrainConfig& cfg, const Task& task) {
  std::vector<std::string> done;
  check_monitors(cfg, task);
  done.push_back("monitors: " + cfg.early_stopping.monitor + " is a validation metric of the " + task.name() +
                 " task");
  make_optimizer(cfg.optimizer, NoParameters());
  done.push_back("optimizer " + cfg.optimizer.name + ": its options agree with each other");
  // make_schedule takes schedule.total_steps over the derived length when it is set.
  const int64_t bound = cfg.schedule.total_steps > 0 ? cfg.schedule.total_steps : cfg.trainer.max_steps;
  if (bound > 0) {
    const std::string why = cfg.schedule.total_steps > 0 ? "schedule.total_steps"
                                                         : "trainer.max_steps, the most steps the run makes";
    try {
      make_schedule(cfg.schedule, bound, cfg.optimizer.lr);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(e.what()) + " (the schedule spans " + std::to_string(bound) +
                        " steps: " + why + ")");
    }
    done.push_back("schedule " + cfg.schedule.name + ": built for " + std::to_string(bound) + " steps (" +
                   why + ")");
  } else {
    done.push_back("schedule " + cfg.schedule.name +
                   ": not checked: the run's length is trainer.epochs x steps per "
                   "epoch, known once the data's manifest is read (before the run directory is made)");
  }
  return done;
}

}  // namespace strata
