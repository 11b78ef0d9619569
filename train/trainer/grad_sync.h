// GradientSync: how gradients become the same on every rank before the
// optimizer steps. The trainer calls begin_step() before the backward of every
// micro-batch (saying whether this one ends an accumulation window, i.e. must
// sync) and finish() before the optimizer step. The plain implementation here
// averages every gradient after backward; distributed/ provides the bucketed
// one that overlaps the allreduce with backward.
#pragma once
#include <memory>

#include "core/communicator.h"
#include "core/module.h"

namespace strata {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual void begin_step(bool sync) = 0;
  // After the last backward of the window: every gradient is averaged over ranks.
  virtual void finish() = 0;
};

// One allreduce (avg) per parameter after backward; nothing with one rank.
class AllreduceAfterBackward final : public GradientSync {
 public:
  AllreduceAfterBackward(Communicator& comm, NamedTensors params) : comm_(comm), params_(std::move(params)) {}
  void begin_step(bool) override {}
  void finish() override;

 private:
  Communicator& comm_;
  NamedTensors params_;
};

}  // namespace strata
