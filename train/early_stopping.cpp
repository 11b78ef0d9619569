#include "train/early_stopping.h"

#include <cmath>
#include <limits>

#include "base/error.h"

namespace strata {

EarlyStopping::EarlyStopping(EarlyStoppingOptions opt) : opt_(std::move(opt)) {
  if (opt_.mode != "min" && opt_.mode != "max")
    throw ConfigError("early stopping: mode must be 'min' or 'max', got '" + opt_.mode + "'");
  if (opt_.patience < 1)
    throw ConfigError("early stopping: patience must be >= 1, got " + std::to_string(opt_.patience));
  if (!(opt_.min_delta >= 0.0))
    throw ConfigError("early stopping: min_delta must be >= 0, got " + std::to_string(opt_.min_delta));
  best_ =
      opt_.mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

bool EarlyStopping::update(double value, int64_t epoch) {
  improved_ = opt_.mode == "min" ? value < best_ - opt_.min_delta : value > best_ + opt_.min_delta;
  if (improved_) {
    best_ = value;
    best_epoch_ = epoch;
    bad_ = 0;
  } else {
    ++bad_;
  }
  return should_stop();
}

void EarlyStopping::load_state(const EarlyStoppingState& s) {
  if (s.bad_epochs < 0) throw Error("early stopping load_state: bad_epochs must be >= 0");
  best_ = s.best;
  best_epoch_ = s.best_epoch;
  bad_ = s.bad_epochs;
  improved_ = false;
}

}  // namespace strata
