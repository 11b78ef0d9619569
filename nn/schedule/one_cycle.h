// One-cycle learning rate, as PyTorch's OneCycleLR with anneal_strategy='cos'
// and three_phase=False. With initial = max_lr / div_factor and
// final = initial / final_div_factor, and the phase ends
//   e1 = pct_start * total_steps - 1,  e2 = total_steps - 1:
//   step <= e1:  lr = cos_anneal(initial, max_lr, step / e1)
//   step >  e1:  lr = cos_anneal(max_lr, final, (step - e1) / (e2 - e1))
// where cos_anneal(a, b, p) = b + (a - b) * (1 + cos(pi p)) / 2. Steps past
// e2 stay at `final` (PyTorch raises there instead).
#pragma once
#include "nn/schedule/schedule.h"

namespace strata {

class OneCycleSchedule : public LrSchedule {
 public:
  OneCycleSchedule(double max_lr, int64_t total_steps, double pct_start = 0.3, double div_factor = 25.0,
                   double final_div_factor = 1e4);
  double lr(int64_t step) const override;
  std::string name() const override { return "onecycle"; }
  double initial_lr() const { return initial_; }
  double final_lr() const { return final_; }

 private:
  double max_lr_, initial_, final_, end1_, end2_;
};

}  // namespace strata
