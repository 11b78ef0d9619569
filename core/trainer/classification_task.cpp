#include "core/trainer/classification_task.h"

#include "core/autograd.h"
#include "core/ops.h"
#include "core/trainer/batch_tensors.h"

namespace strata {
namespace {

// Top-1 and (when top5 is given) top-5 hits of (B, C) logits against labels.
// Ties count against the sample unless the label is the lowest tied index.
void count_hits(const Tensor& logits, const Tensor& labels, int64_t* top1, int64_t* top5) {
  auto v = logits.to_float_vector();
  auto l = labels.to_i64_vector();
  int64_t n = logits.size(0), c = logits.size(1);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = v.data() + i * c;
    const int64_t label = l[static_cast<size_t>(i)];
    float target = row[label];
    int64_t above = 0;
    for (int64_t j = 0; j < c; ++j)
      if (row[j] > target || (row[j] == target && j < label)) ++above;
    if (above == 0) ++*top1;
    if (top5 && above < 5) ++*top5;
  }
}

}  // namespace

ClassificationTask::ClassificationTask(const TaskOptions& o)
    : input_field_(o.input_field.empty() ? "image" : o.input_field),
      label_field_(o.target_field.empty() ? "label" : o.target_field),
      sample_shape_(o.sample_shape) {
  if (!o.input_mean.empty()) input_norm_.mean = o.input_mean;
  if (!o.input_std.empty()) input_norm_.std = o.input_std;
}

TaskOutput ClassificationTask::run(Module& model, const FedBatch& b, int64_t rows, Device device,
                                   Precision precision, bool evaluating) const {
  BatchTensors t = batch_to_tensors(b, input_field_, label_field_, sample_shape_, input_norm_);
  if (rows < t.labels.numel()) {  // evaluation: the padding rows of the last global batch
    t.input = slice(t.input, 0, 0, rows);
    auto l = t.labels.to_i64_vector();  // integer tensors stay out of the float ops
    l.resize(static_cast<size_t>(rows));
    t.labels = Tensor::from_vector_i64(l, {rows});
  }
  t.input = t.input.to(device);  // no-op on the host
  t.labels = t.labels.to(device);
  Tensor logits;
  {
    AutocastGuard autocast(precision);
    logits = model(t.input);
  }
  // half logits go to cross_entropy as they are: its loss and saved lse are FP32
  // whatever the logits' storage, so an f32 copy of [B, classes] buys nothing
  TaskOutput out;
  out.loss = cross_entropy(logits, t.labels);
  int64_t top1 = 0, top5 = 0;
  count_hits(logits, t.labels, &top1, evaluating ? &top5 : nullptr);
  const double n = static_cast<double>(rows);
  out.sums = {out.loss.item() * n, static_cast<double>(top1), static_cast<double>(top5), n};
  return out;
}

Metrics ClassificationTask::metrics(const std::vector<double>& s, bool evaluating) const {
  const double n = s.at(3) > 0 ? s[3] : 1;
  Metrics m = {{"loss", s[0] / n}, {"accuracy", s[1] / n}};
  if (evaluating) m.push_back({"top5", s[2] / n});
  return m;
}

}  // namespace strata
