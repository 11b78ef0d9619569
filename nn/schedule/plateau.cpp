#include "nn/schedule/plateau.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace strata {

ReduceOnPlateauSchedule::ReduceOnPlateauSchedule(double base_lr, PlateauOptions opt) : opt_(std::move(opt)) {
  if (opt_.mode != "min" && opt_.mode != "max")
    throw ConfigError("plateau schedule: schedule.plateau_mode must be 'min' or 'max', got '" + opt_.mode +
                      "'");
  if (!(opt_.factor > 0.0 && opt_.factor < 1.0))
    throw ConfigError("plateau schedule: schedule.plateau_factor must be in (0, 1), got " +
                      std::to_string(opt_.factor));
  if (opt_.patience < 0)
    throw ConfigError("plateau schedule: schedule.plateau_patience must be >= 0, got " +
                      std::to_string(opt_.patience));
  if (!(opt_.threshold >= 0.0))
    throw ConfigError("plateau schedule: schedule.plateau_threshold must be >= 0, got " +
                      std::to_string(opt_.threshold));
  if (opt_.cooldown < 0) throw ConfigError("plateau schedule: cooldown must be >= 0");
  if (!(opt_.min_lr >= 0.0)) throw ConfigError("plateau schedule: schedule.min_lr must be >= 0");
  if (!(base_lr >= 0.0) || !std::isfinite(base_lr))
    throw ConfigError("plateau schedule: base lr must be finite and >= 0, got " + std::to_string(base_lr));
  max_mode_ = opt_.mode == "max";
  lr_ = base_lr;
  best_ = max_mode_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

double ReduceOnPlateauSchedule::lr(int64_t step) const {
  if (step < 0) throw Error("schedule: step must be >= 0, got " + std::to_string(step));
  return lr_;
}

bool ReduceOnPlateauSchedule::is_better(double metric) const {
  return max_mode_ ? metric > best_ * (1.0 + opt_.threshold) : metric < best_ * (1.0 - opt_.threshold);
}

void ReduceOnPlateauSchedule::observe(double metric) {
  if (is_better(metric)) {
    best_ = metric;
    bad_ = 0;
  } else {
    ++bad_;  // NaN is never better
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    bad_ = 0;
  }
  if (bad_ > opt_.patience) {
    double next = std::max(lr_ * opt_.factor, opt_.min_lr);
    if (lr_ - next > 1e-8) lr_ = next;
    cooldown_counter_ = opt_.cooldown;
    bad_ = 0;
  }
}

ScheduleState ReduceOnPlateauSchedule::state() const {
  return {name(),
          {{"lr", lr_},
           {"best", best_},
           {"num_bad_epochs", static_cast<double>(bad_)},
           {"cooldown_counter", static_cast<double>(cooldown_counter_)}}};
}

void ReduceOnPlateauSchedule::load_state(const ScheduleState& s) {
  LrSchedule::load_state(s);
  auto get = [&](const char* key) {
    auto it = s.values.find(key);
    if (it == s.values.end()) throw Error(std::string("plateau schedule load_state: missing '") + key + "'");
    return it->second;
  };
  lr_ = get("lr");
  best_ = get("best");
  bad_ = static_cast<int64_t>(get("num_bad_epochs"));
  cooldown_counter_ = static_cast<int64_t>(get("cooldown_counter"));
}

}  // namespace strata
