#include "train/trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "base/error.h"
#include "core/autograd.h"
#include "core/ops.h"
#include "core/random.h"
#include "kernels/runtime/parallel.h"
#include "kernels/runtime/trace_range.h"
#include "nn/grad_clip.h"
#include "train/make_optimizer.h"
#include "train/make_schedule.h"
#include "train/trainer/collective_sums.h"
#include "train/trainer/config_checks.h"

namespace strata {
namespace {

TaskOptions image_task_options(std::vector<int64_t> sample_shape) {
  TaskOptions o;
  o.sample_shape = std::move(sample_shape);
  return o;
}

}  // namespace

Trainer::Trainer(TrainConfig cfg, std::string run_dir, std::shared_ptr<Module> model,
                 std::vector<int64_t> sample_shape, Communicator& comm)
    : Trainer(std::move(cfg), std::move(run_dir), std::move(model),
              make_task("classification", image_task_options(std::move(sample_shape))), comm) {}

Trainer::Trainer(TrainConfig cfg, std::string run_dir, std::shared_ptr<Module> model,
                 std::unique_ptr<Task> task, Communicator& comm)
    : cfg_(std::move(cfg)),
      run_dir_(std::move(run_dir)),
      model_(std::move(model)),
      task_(std::move(task)),
      comm_(comm),
      precision_(precision_from_name(cfg_.precision.dtype)),
      reporter_(cfg_, run_dir_, comm_, task_->item_unit()),
      checkpointer_(cfg_, run_dir_, comm_.rank()),
      evaluator_(cfg_, *model_, *task_, precision_, comm_) {
  check_monitors(cfg_, *task_);
  // 0: the node's cores shared among its local ranks (8 ranks of a node do not
  // each start a thread per core)
  set_num_threads(cfg_.trainer.threads > 0 ? static_cast<int>(cfg_.trainer.threads)
                                           : threads_per_local_rank(comm_.local_size()));
  params_ = model_->named_parameters();
  optimizer_ = make_optimizer(cfg_.optimizer, *model_);
  LossScalerOptions so;
  so.enabled = precision_ == Precision::fp16;
  so.init_scale = cfg_.precision.init_scale;
  so.growth_factor = cfg_.precision.growth_factor;
  so.backoff_factor = cfg_.precision.backoff_factor;
  so.growth_interval = cfg_.precision.growth_interval;
  scaler_ = LossScaler(so);
  sync_ = std::make_unique<AllreduceAfterBackward>(comm_, params_);
}

Trainer::~Trainer() = default;

void Trainer::sync_buffers_if_trained() {
  if (buffer_sync_ && trained_since_buffer_sync_) buffer_sync_();
  trained_since_buffer_sync_ = false;
}

CopyEngine& Trainer::copy_engine() {
  if (!copy_engine_) copy_engine_ = make_copy_engine(model_device());
  return *copy_engine_;
}

TrainParts Trainer::parts() {
  return TrainParts{*model_, *optimizer_, scaler_, *schedule_, *task_, cfg_, model_device()};
}

double Trainer::forward_backward(const FedBatch& b, bool sync, TrainState& s) {
  trained_since_buffer_sync_ = true;
  TraceRange forward("forward");  // the batch's h2d copy, the forward pass and the loss
  const Device device = model_device();
  if (s.sums.empty()) s.sums = TaskSums(task_->sum_names().size(), device);
  TaskOutput out = task_->run(*model_, b, b.host->size, device, precision_, false, s.sums);
  const Tensor& loss = out.loss;
  reporter_.loss_window(device).add_scaled(0, loss, 1.0);  // read at the next progress line, not now
  Tensor objective =
      cfg_.trainer.accumulate > 1 ? scale(loss, 1.0 / static_cast<double>(cfg_.trainer.accumulate)) : loss;
  sync_->begin_step(sync);
  forward.end();
  TraceRange backward("backward");
  scaler_.scale_loss(objective).backward();
  return out.items;
}

namespace {

// The first parameter, in the model's order, whose gradient holds an inf or a NaN.
std::string first_non_finite_gradient(const NamedTensors& params) {
  for (auto& [name, t] : params)
    if (t.grad().defined() && !std::isfinite(grad_norm({t}))) return name;
  return "?";
}

}  // namespace

bool Trainer::optimizer_update(int64_t step) {
  {
    TraceRange allreduce("allreduce");  // the wait for the buckets still reducing after backward
    sync_->finish();
  }
  TraceRange optimizer("optimizer");  // the norm's read, the fused update, zero_grad
  // The step's one read from the device: the global norm of the gradients as
  // they are (loss-scaled in fp16). It is not finite when any gradient holds an
  // inf or a NaN, it gives the clip coefficient, and unscale and clip then fold
  // into the factor the fused optimizer multiplies each gradient by as it reads
  // it (grad_scale): no pass that rewrites the gradients, no other host sync.
  // The loss scale is a power of two, so scaling the norm by its reciprocal
  // gives the bits unscaling the gradients first would have.
  const float inv_scale = scaler_.enabled() ? static_cast<float>(1.0 / scaler_.scale()) : 1.0f;
  const double scaled_norm = grad_norm(params_);
  bool finite = std::isfinite(scaled_norm);
  if (scaler_.enabled()) {
    // every rank must agree to skip: an overflow on one rank skips all
    finite = allreduce_sums(comm_, {finite ? 0.0 : 1.0})[0] == 0.0;
  } else if (!finite) {
    // Without a scaler an inf or NaN is divergence, not overflow: stop before it
    // reaches the weights (and so any checkpoint). Gradients are synced, so
    // every rank stops at the same step.
    throw NumericsError("step " + std::to_string(step + 1) + ": the gradient of parameter '" +
                        first_non_finite_gradient(params_) +
                        "' is not finite (inf or NaN); training stopped before the optimizer step, so the "
                        "weights and the last checkpoint are from before it. Lower optimizer.lr, set "
                        "clipping.max_norm, or look for bad values in the data");
  }
  if (finite) {
    float grad_scale = inv_scale;
    if (cfg_.clipping.max_norm > 0) {
      const double coef = cfg_.clipping.max_norm / (scaled_norm * inv_scale + 1e-6);
      if (coef < 1.0) grad_scale = inv_scale * static_cast<float>(coef);  // exact: inv_scale is 2^-k
    }
    NoGradGuard no_grad;
    optimizer_->step(grad_scale);
  }
  if (scaler_.enabled()) {
    if (!finite) scaler_.mark_overflow();
    scaler_.update();
    if (scaler_.scale() < cfg_.precision.min_scale)
      throw NumericsError(
          "step " + std::to_string(step + 1) + ": fp16 overflows cut the loss scale to " +
          std::to_string(scaler_.scale()) + ", below precision.min_scale (" +
          std::to_string(cfg_.precision.min_scale) +
          "): the gradients overflow even unscaled, so the run diverged; the weights and the last "
          "checkpoint are from before it. Lower optimizer.lr, or train in bf16");
  }
  optimizer_->zero_grad();
  return finite;
}

EvalResult Trainer::evaluate(BatchSource& src) {
  sync_buffers_if_trained();
  return evaluator_.evaluate(src, copy_engine(), model_device(), reporter_.log_or_null());
}

}  // namespace strata
