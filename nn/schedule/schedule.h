// LrSchedule: the learning rate as a function of the optimizer step (step-driven
// schedules), or of the metrics seen so far (reduce-on-plateau). The trainer
// calls optimizer.set_lr(schedule.lr(step)) before optimizer step `step`
// (0-based: the number of optimizer steps already taken, PyTorch's last_epoch),
// and observe(metric) after each evaluation.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace strata {

// What a checkpoint keeps of a schedule. Step-driven schedules are pure
// functions of the step (kept by the trainer), so their values map is empty.
struct ScheduleState {
  std::string name;                      // the schedule's name(), checked on load
  std::map<std::string, double> values;  // e.g. plateau: lr, best, num_bad_epochs
};

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  // The learning rate for optimizer step `step` (>= 0).
  virtual double lr(int64_t step) const = 0;
  // A metric after an evaluation. Only metric-driven schedules use it; the
  // step-driven ones ignore it, so a trainer can call it unconditionally.
  virtual void observe(double /*metric*/) {}
  virtual bool metric_driven() const { return false; }
  virtual std::string name() const = 0;
  virtual ScheduleState state() const { return {name(), {}}; }
  // Throws strata::Error when `s` was saved by a different schedule.
  virtual void load_state(const ScheduleState& s);
};

}  // namespace strata
