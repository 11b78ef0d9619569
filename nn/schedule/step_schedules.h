// Step-driven schedules that are a base learning rate times a decay factor, as
// PyTorch's ConstantLR(factor=1), StepLR, MultiStepLR and ExponentialLR.
#pragma once
#include <vector>

#include "nn/schedule/schedule.h"

namespace strata {

// lr = base_lr
class ConstantSchedule : public LrSchedule {
 public:
  explicit ConstantSchedule(double base_lr);
  double lr(int64_t step) const override;
  std::string name() const override { return "constant"; }

 private:
  double base_;
};

// lr = base_lr * gamma^floor(step / step_size)
class StepSchedule : public LrSchedule {
 public:
  StepSchedule(double base_lr, int64_t step_size, double gamma);
  double lr(int64_t step) const override;
  std::string name() const override { return "step"; }

 private:
  double base_, gamma_;
  int64_t step_size_;
};

// lr = base_lr * gamma^(number of milestones <= step)
class MultiStepSchedule : public LrSchedule {
 public:
  MultiStepSchedule(double base_lr, std::vector<int64_t> milestones, double gamma);
  double lr(int64_t step) const override;
  std::string name() const override { return "multistep"; }

 private:
  double base_, gamma_;
  std::vector<int64_t> milestones_;  // sorted
};

// lr = base_lr * gamma^step
class ExponentialSchedule : public LrSchedule {
 public:
  ExponentialSchedule(double base_lr, double gamma);
  double lr(int64_t step) const override;
  std::string name() const override { return "exponential"; }

 private:
  double base_, gamma_;
};

}  // namespace strata
