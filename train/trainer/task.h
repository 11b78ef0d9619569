// Task: what a batch means to the model. A task turns a host batch into the
// model's input, runs the model, returns the loss and adds the batch's share of
// the sums its metrics are made of; the trainer stays the same for image
// classification and language modelling. Sums (not means) so that micro-batches,
// epochs and ranks combine by plain addition (one allreduce of a few doubles);
// they accumulate on the model's device (train/trainer/task_sums.h), so a GPU
// step never waits for its own loss.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/batch_source.h"
#include "core/module.h"
#include "core/precision.h"
#include "train/trainer/fed_batch.h"
#include "train/trainer/task_sums.h"

namespace strata {

struct TaskOutput {
  Tensor loss;       // f32 scalar, the mean over the batch's items (autograd when training)
  double items = 0;  // the batch's items (samples or tokens): what the loss is a mean over
};

// Metrics, in the order of Task::metric_names().
using Metrics = std::vector<std::pair<std::string, double>>;

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  // What one item is, for throughput and FLOPs: "sample" or "token".
  virtual std::string item_unit() const = 0;
  // Runs `model` on the first `rows` samples of `b` (the batch's valid rows in
  // evaluation, all of them in training), moved to `device` unless DeviceFeeder
  // put it there already, under autocast. `evaluating` asks for the
  // evaluation-only figures (top-5). Adds the batch's share of the sums to
  // `sums` (sum_names().size() of them, on `device`).
  virtual TaskOutput run(Module& model, const FedBatch& b, int64_t rows, Device device, Precision precision,
                         bool evaluating, TaskSums& sums) const = 0;
  // Names of the sums; the first is always "loss_sum" (loss x items) and the last "items".
  virtual std::vector<std::string> sum_names() const = 0;
  // Metrics of summed sums; every name of metric_names() appears, in that order.
  virtual Metrics metrics(const std::vector<double>& sums, bool evaluating) const = 0;
  // What metrics() reports in evaluation; "val_" + one of these is a valid monitor.
  virtual std::vector<std::string> metric_names() const = 0;
  // Whether a higher value of the metric is better (accuracy) or lower (loss).
  virtual bool higher_is_better(const std::string& metric) const = 0;
};

struct TaskOptions {
  std::string input_field;   // "" = the task's default (image / input)
  std::string target_field;  // "" = the task's default (label / target)
  // classification: the per-sample input shape the model takes, e.g. {1, 28, 28}
  std::vector<int64_t> sample_shape;
  // causal_lm: text bytes per token, for bits per byte (1 for byte-level
  // vocabularies); 0 = unknown, bits per byte is then not reported (NaN).
  double bytes_per_token = 0;
  // classification: how a u8 input that reaches the task as u8 is scaled, on
  // the model's device: x/255, then (x - mean[c]) / std[c] (one entry, or one
  // per channel; empty = 0 and 1). On the CPU the loader normalises
  // (LoaderOptions::normalize) and the input arrives as f32, untouched here; on
  // a GPU the loader leaves u8 pixels (4x fewer bytes to copy) and this does it.
  std::vector<float> input_mean, input_std;
};

// The registered tasks: "classification", "causal_lm".
std::unique_ptr<Task> make_task(const std::string& name, const TaskOptions& options);
std::vector<std::string> task_names();
// Every monitor any task can serve ("val_" + each metric), for the config schema.
std::vector<std::string> monitor_names();

}  // namespace strata
