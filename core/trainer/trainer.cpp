#include "core/trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "core/autograd.h"
#include "core/grad_clip.h"
#include "core/ops.h"
#include "core/optim/adamw.h"
#include "core/optim/sgd.h"
#include "core/random.h"
#include "core/schedule/make_schedule.h"
#include "core/trainer/batch_tensors.h"
#include "core/trainer/stop_signal.h"
#include "kernels/parallel.h"

namespace strata {

namespace {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, NamedTensors params) {
  if (c.name == "sgd") {
    SGDOptions o;
    o.lr = c.lr;
    o.momentum = c.momentum;
    o.dampening = c.dampening;
    o.nesterov = c.nesterov;
    o.weight_decay = c.weight_decay;
    return std::make_unique<SGD>(std::move(params), o);
  }
  if (c.name == "adamw") {
    AdamWOptions o;
    o.lr = c.lr;
    o.beta1 = c.beta1;
    o.beta2 = c.beta2;
    o.eps = c.eps;
    o.weight_decay = c.weight_decay;
    return std::make_unique<AdamW>(std::move(params), o);
  }
  throw ConfigError("optimizer.name: unknown optimizer '" + c.name + "' (sgd, adamw)");
}

// Top-1 and (when top5 is given) top-5 hits of (B, C) logits against labels.
void count_hits(const Tensor& logits, const Tensor& labels, int64_t* top1, int64_t* top5) {
  auto v = logits.to_float_vector();
  auto l = labels.to_i64_vector();
  int64_t n = logits.size(0), c = logits.size(1);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = v.data() + i * c;
    float target = row[l[static_cast<size_t>(i)]];
    int64_t above = 0;
    for (int64_t j = 0; j < c; ++j)
      if (row[j] > target || (row[j] == target && j < l[static_cast<size_t>(i)])) ++above;
    if (above == 0) ++*top1;
    if (top5 && above < 5) ++*top5;
  }
}

}  // namespace

Trainer::Trainer(TrainConfig cfg, std::string run_dir, std::shared_ptr<Module> model,
                 std::vector<int64_t> sample_shape, Communicator& comm)
    : cfg_(std::move(cfg)),
      run_dir_(std::move(run_dir)),
      model_(std::move(model)),
      sample_shape_(std::move(sample_shape)),
      comm_(comm),
      precision_(precision_from_name(cfg_.precision.dtype)) {
  if (cfg_.trainer.threads > 0) set_num_threads(static_cast<int>(cfg_.trainer.threads));
  params_ = model_->named_parameters();
  optimizer_ = make_optimizer(cfg_.optimizer, params_);
  LossScalerOptions so;
  so.enabled = precision_ == Precision::fp16;
  so.init_scale = cfg_.precision.init_scale;
  so.growth_factor = cfg_.precision.growth_factor;
  so.backoff_factor = cfg_.precision.backoff_factor;
  so.growth_interval = cfg_.precision.growth_interval;
  scaler_ = LossScaler(so);
  sync_ = std::make_unique<AllreduceAfterBackward>(comm_, params_);
  ConsoleMode console = cfg_.logging.console == "off"     ? ConsoleMode::off
                        : cfg_.logging.console == "plain" ? ConsoleMode::plain
                                                          : ConsoleMode::automatic;
  log_ = std::make_unique<RunLog>(run_dir_, comm_.rank() == 0, console, cfg_.logging.tensorboard);
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

double Trainer::train_micro_batch(const HostBatch& b, bool sync, int64_t* correct) {
  trained_since_buffer_sync_ = true;
  BatchTensors t = batch_to_tensors(b, input_field_, label_field_, sample_shape_);
  t.input = t.input.to(model_device());  // no-op on the host
  t.labels = t.labels.to(model_device());
  Tensor logits;
  {
    AutocastGuard autocast(precision_);
    logits = (*model_)(t.input);
  }
  // half logits go to cross_entropy as they are: its loss and saved lse are FP32
  // whatever the logits' storage, so an f32 copy of [B, classes] buys nothing
  Tensor loss = cross_entropy(logits, t.labels);
  double value = loss.item();
  count_hits(logits, t.labels, correct, nullptr);
  Tensor objective =
      cfg_.trainer.accumulate > 1 ? scale(loss, 1.0 / static_cast<double>(cfg_.trainer.accumulate)) : loss;
  sync_->begin_step(sync);
  scaler_.scale_loss(objective).backward();
  return value;
}

bool Trainer::optimizer_step() {
  sync_->finish();
  bool finite = true;
  if (scaler_.enabled()) {
    finite = scaler_.unscale(params_);
    // every rank must agree to skip: an overflow on one rank skips all
    std::vector<double> flag{finite ? 0.0 : 1.0};
    finite = allreduce_sums(flag)[0] == 0.0;
  }
  if (finite && cfg_.clipping.max_norm > 0) clip_grad_norm(params_, cfg_.clipping.max_norm);
  if (finite) {
    NoGradGuard no_grad;
    optimizer_->step();
  }
  if (scaler_.enabled()) {
    if (!finite && scaler_.should_step()) scaler_.mark_overflow();  // another rank overflowed
    scaler_.update();
  }
  optimizer_->zero_grad();
  return finite;
}

EvalResult Trainer::evaluate(BatchSource& src) {
  sync_buffers_if_trained();
  bool was_training = model_->is_training();
  model_->eval();
  NoGradGuard no_grad;
  AutocastGuard autocast(precision_);
  src.start_epoch(0);
  HostBatch b;
  double loss_sum = 0;
  int64_t top1 = 0, top5 = 0, n = 0;
  while (src.next(b)) {
    BatchTensors t = batch_to_tensors(b, input_field_, label_field_, sample_shape_);
    t.input = t.input.to(model_device());
    Tensor logits = cast((*model_)(t.input), DType::f32);
    int64_t valid = b.valid_count();
    if (valid < t.labels.numel()) {  // drop the padding rows of the last global batch
      if (valid == 0) continue;
      logits = slice(logits, 0, 0, valid);
      auto l = t.labels.to_i64_vector();
      l.resize(static_cast<size_t>(valid));
      t.labels = Tensor::from_vector_i64(l, {valid});
    }
    t.labels = t.labels.to(model_device());
    loss_sum += cross_entropy(logits, t.labels).item() * static_cast<double>(valid);
    count_hits(logits, t.labels, &top1, &top5);
    n += valid;
  }
  model_->train(was_training);
  auto s = allreduce_sums(
      {loss_sum, static_cast<double>(top1), static_cast<double>(top5), static_cast<double>(n)});
  EvalResult r;
  r.samples = static_cast<int64_t>(s[3]);
  if (r.samples > 0) {
    r.loss = s[0] / s[3];
    r.accuracy = s[1] / s[3];
    r.top5 = s[2] / s[3];
  }
  return r;
}

}  // namespace strata
