#include "core/trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "base/error.h"
#include "core/autograd.h"
#include "core/grad_clip.h"
#include "core/ops.h"
#include "core/optim/make_optimizer.h"
#include "core/random.h"
#include "core/schedule/make_schedule.h"
#include "core/trainer/config_checks.h"
#include "core/trainer/stop_signal.h"
#include "core/trainer/trainer_progress.h"
#include "kernels/parallel.h"

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
      precision_(precision_from_name(cfg_.precision.dtype)) {
  check_monitors(cfg_, *task_);
  if (cfg_.trainer.threads > 0) set_num_threads(static_cast<int>(cfg_.trainer.threads));
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

std::vector<double> Trainer::allreduce_sums(std::vector<double> v) {
  if (comm_.size() > 1) comm_.allreduce(v.data(), v.size(), DType::f64, ReduceOp::sum);
  return v;
}

void Trainer::sync_buffers_if_trained() {
  if (buffer_sync_ && trained_since_buffer_sync_) buffer_sync_();
  trained_since_buffer_sync_ = false;
}

double Trainer::train_micro_batch(const FedBatch& b, bool sync, Progress& p) {
  trained_since_buffer_sync_ = true;
  TaskOutput out = task_->run(*model_, b, b.host->size, model_device(), precision_, false);
  if (p.sums.size() != out.sums.size()) p.sums.assign(out.sums.size(), 0.0);
  for (size_t i = 0; i < out.sums.size(); ++i) p.sums[i] += out.sums[i];
  const Tensor& loss = out.loss;
  double value = out.sums.front() / std::max(1.0, out.sums.back());
  Tensor objective =
      cfg_.trainer.accumulate > 1 ? scale(loss, 1.0 / static_cast<double>(cfg_.trainer.accumulate)) : loss;
  sync_->begin_step(sync);
  scaler_.scale_loss(objective).backward();
  return value;
}

namespace {

// The first parameter, in the model's order, whose gradient holds an inf or a NaN.
std::string first_non_finite_gradient(const NamedTensors& params) {
  for (auto& [name, t] : params)
    if (t.grad().defined() && !std::isfinite(grad_norm({t}))) return name;
  return "?";
}

}  // namespace

bool Trainer::optimizer_step(int64_t step) {
  sync_->finish();
  bool finite = true;
  if (scaler_.enabled()) {
    finite = scaler_.unscale(params_);
    // every rank must agree to skip: an overflow on one rank skips all
    std::vector<double> flag{finite ? 0.0 : 1.0};
    finite = allreduce_sums(flag)[0] == 0.0;
  } else {
    // Without a scaler an inf or NaN is divergence, not overflow: stop before it
    // reaches the weights (and so any checkpoint). The norm is one reduction
    // read once per step; clipping reuses it. Gradients are synced, so every
    // rank stops at the same step.
    const double norm =
        cfg_.clipping.max_norm > 0 ? clip_grad_norm(params_, cfg_.clipping.max_norm) : grad_norm(params_);
    if (!std::isfinite(norm))
      throw NumericsError("step " + std::to_string(step + 1) + ": the gradient of parameter '" +
                          first_non_finite_gradient(params_) +
                          "' is not finite (inf or NaN); training stopped before the optimizer step, so the "
                          "weights and the last checkpoint are from before it. Lower optimizer.lr, set "
                          "clipping.max_norm, or look for bad values in the data");
  }
  if (finite && scaler_.enabled() && cfg_.clipping.max_norm > 0)
    clip_grad_norm(params_, cfg_.clipping.max_norm);
  if (finite) {
    NoGradGuard no_grad;
    optimizer_->step();
  }
  if (scaler_.enabled()) {
    if (!finite && scaler_.should_step()) scaler_.mark_overflow();  // another rank overflowed
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
  bool was_training = model_->is_training();
  model_->eval();
  NoGradGuard no_grad;
  src.start_epoch(0);
  if (!copy_engine_) copy_engine_ = make_copy_engine(model_device());
  DeviceFeeder feeder(src, *copy_engine_);  // its own slots: a training epoch's feeder may be mid-epoch
  std::vector<double> sums(task_->sum_names().size(), 0.0);
  double rows = 0;
  const int64_t batches = src.batches_per_epoch();
  int64_t done = 0;
  while (const std::optional<FedBatch> b = feeder.next()) {
    if (log_) log_->evaluation(++done, batches);
    const int64_t valid = b->host->valid_count();  // the padding rows of the last global batch are dropped
    if (valid == 0) continue;
    TaskOutput out = task_->run(*model_, *b, valid, model_device(), precision_, true);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] += out.sums[i];
    rows += static_cast<double>(valid);
  }
  if (log_) log_->end_evaluation();
  model_->train(was_training);
  sums.push_back(rows);
  sums = allreduce_sums(std::move(sums));
  rows = sums.back();
  sums.pop_back();
  EvalResult r;
  r.samples = static_cast<int64_t>(rows);
  r.items = static_cast<int64_t>(sums.back());
  r.metrics = task_->metrics(sums, true);
  for (auto& [name, value] : r.metrics) {
    if (name == "loss") r.loss = value;
    if (name == "accuracy") r.accuracy = value;
    if (name == "top5") r.top5 = value;
  }
  return r;
}

double EvalResult::metric(const std::string& name) const {
  for (auto& [n, v] : metrics)
    if (n == name) return v;
  throw ConfigError("no metric '" + name + "' in this evaluation");
}

}  // namespace strata
