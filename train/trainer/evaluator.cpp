#include "train/trainer/evaluator.h"

#include <cmath>

#include "base/error.h"
#include "core/autograd.h"
#include "train/trainer/collective_sums.h"
#include "train/trainer/device_feeder.h"
#include "train/trainer/task_sums.h"

namespace strata {
namespace {

double metric_named(const Metrics& m, const std::string& name) {
  for (auto& [n, v] : m)
    if (n == name) return v;
  return NAN;
}

// "val_loss" -> "loss": the trainer's constructor checked the prefix and the name.
std::string metric_of_monitor(const std::string& monitor) { return monitor.substr(4); }

}  // namespace

Evaluator::Evaluator(const TrainConfig& cfg, Module& model, const Task& task, Precision precision,
                     Communicator& comm)
    : cfg_(cfg), model_(model), task_(task), precision_(precision), comm_(comm) {}

EvalResult Evaluator::evaluate(BatchSource& src, CopyEngine& engine, Device device, RunLog* log) {
  bool was_training = model_.is_training();
  model_.eval();
  NoGradGuard no_grad;
  src.start_epoch(0);
  DeviceFeeder feeder(src, engine);  // its own slots: a training epoch's feeder may be mid-epoch
  TaskSums device_sums(task_.sum_names().size(), device);
  double rows = 0;
  const int64_t batches = src.batches_per_epoch();
  int64_t done = 0;
  while (const std::optional<FedBatch> b = feeder.next()) {
    if (log) log->evaluation(++done, batches);
    const int64_t valid = b->host->valid_count();  // the padding rows of the last global batch are dropped
    if (valid == 0) continue;
    task_.run(model_, *b, valid, device, precision_, true, device_sums);
    rows += static_cast<double>(valid);
  }
  if (log) log->end_evaluation();
  model_.train(was_training);
  std::vector<double> sums = device_sums.read();  // the evaluation's one read of its figures
  sums.push_back(rows);
  sums = allreduce_sums(comm_, std::move(sums));
  rows = sums.back();
  sums.pop_back();
  EvalResult r;
  r.samples = static_cast<int64_t>(rows);
  r.items = static_cast<int64_t>(sums.back());
  r.metrics = task_.metrics(sums, true);
  for (auto& [name, value] : r.metrics) {
    if (name == "loss") r.loss = value;
    if (name == "accuracy") r.accuracy = value;
    if (name == "top5") r.top5 = value;
  }
  return r;
}

double Evaluator::evaluate_and_track(BatchSource& val, CopyEngine& engine, Device device,
                                     LrSchedule& schedule, TrainState& s, RunLog& log) {
  EvalResult r = evaluate(val, engine, device, &log);
  std::map<std::string, double> record = {{"epoch", double(s.epoch + 1)}};
  std::string line =
      "epoch " + std::to_string(s.epoch + 1) + " step " + std::to_string(s.step) + " validation:";
  for (auto& [name, value] : r.metrics) {
    record[name] = value;
    line += " " + name + " " + std::to_string(value);
  }
  log.record("val", s.step, record);
  log.message(line);
  const double m = metric_named(r.metrics, metric_of_monitor(cfg_.early_stopping.monitor));
  if (schedule.metric_driven())
    schedule.observe(metric_named(r.metrics, metric_of_monitor(cfg_.schedule.plateau_monitor)));
  BestTracking& b = s.best;
  const bool max_mode = cfg_.early_stopping.mode == "max";
  const bool better = !b.have_best || (max_mode ? m > b.best_metric : m < b.best_metric);
  if (better) {
    b.have_best = true;
    b.best_metric = m;
    b.best_epoch = s.epoch;
    if (cfg_.early_stopping.enabled && cfg_.early_stopping.restore_best) {
      best_weights_.clear();
      for (auto& [n, t] : model_.named_parameters()) best_weights_.push_back({n, t.clone()});
      for (auto& [n, t] : model_.named_buffers()) best_weights_.push_back({n, t.clone()});
    }
  }
  if (cfg_.early_stopping.enabled && b.early.update(m, s.epoch)) stopped_at_epoch_ = s.epoch;
  return m;
}

void Evaluator::restore_best_weights(const TrainState& s, RunLog& log) {
  if (best_weights_.empty()) return;
  NoGradGuard no_grad;
  NamedTensors all = model_.named_parameters();
  for (auto& b : model_.named_buffers()) all.push_back(b);
  for (auto& [n, t] : all)
    for (auto& [bn, bt] : best_weights_)
      if (bn == n) t.copy_(bt);
  log.message("restored the best weights (epoch " + std::to_string(s.best.best_epoch + 1) + ")");
}

double EvalResult::metric(const std::string& name) const {
  for (auto& [n, v] : metrics)
    if (n == name) return v;
  throw ConfigError("no metric '" + name + "' in this evaluation");
}

}  // namespace strata
