#include "nn/schedule/schedule.h"

#include "base/error.h"

namespace strata {

void LrSchedule::load_state(const ScheduleState& s) {
  if (s.name != name())
    throw Error("schedule load_state: state was saved by schedule '" + s.name + "', this one is '" + name() +
                "'");
}

}  // namespace strata
