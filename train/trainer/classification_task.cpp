#include "train/trainer/classification_task.h"

#include "core/autograd.h"
#include "core/ops.h"
#include "kernels/runtime/trace_range.h"
#include "train/trainer/batch_tensors.h"

namespace strata {
namespace {

// sum_names() positions
constexpr size_t kLossSum = 0, kTop1 = 1, kTop5 = 2, kItems = 3;

// The first `rows` rows of `t`: a view of its storage where it is (no copy, and
// for a device tensor no trip through the host), whatever its dtype.
Tensor leading_rows(const Tensor& t, int64_t rows) {
  const Tensor c = t.contiguous();
  Shape shape = c.shape();
  shape.at(0) = rows;
  return Tensor::from_storage(c.storage(), shape, c.dtype(), c.impl()->offset);
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
                                   Precision precision, bool evaluating, TaskSums& sums) const {
  // Under fp16/bf16 the model's first layer casts its input to the compute dtype
  // (the classification models start with a Conv2d or a Flatten and a Linear,
  // which cast() their input): u8 pixels are normalised straight into that
  // dtype, one device pass instead of a normalise and a cast, with the same
  // bits (normalize_u8 rounds its f32 value once, to nearest even, as the cast
  // does). The model's cast() of an input already in the compute dtype is the
  // input itself. An f32 input (the loader normalised it) stays f32.
  BatchTensors t =
      batch_to_tensors(b, input_field_, label_field_, sample_shape_, input_norm_, precision_dtype(precision));
  if (rows < t.labels.numel()) {  // evaluation: the padding rows of the last global batch
    t.input = leading_rows(t.input, rows);
    t.labels = leading_rows(t.labels, rows);
  }
  TraceRange h2d("h2d");
  t.input = t.input.to(device);  // no-op on the host
  t.labels = t.labels.to(device);
  h2d.end();
  Tensor logits;
  {
    AutocastGuard autocast(precision);
    logits = model(t.input);
  }
  // half logits go to cross_entropy as they are: its loss and saved lse are FP32
  // whatever the logits' storage, so an f32 copy of [B, classes] buys nothing
  TaskOutput out;
  out.loss = cross_entropy(logits, t.labels);
  out.items = static_cast<double>(rows);
  // hits counted where the logits are, under the tie rule of kernels/metric_math.h
  sums.add_hits(kTop1, evaluating ? kTop5 : TaskSums::npos, logits, t.labels);
  sums.add_scaled(kLossSum, out.loss, out.items);
  sums.add(kItems, out.items);
  return out;
}

Metrics ClassificationTask::metrics(const std::vector<double>& s, bool evaluating) const {
  const double n = s.at(3) > 0 ? s[3] : 1;
  Metrics m = {{"loss", s[0] / n}, {"accuracy", s[1] / n}};
  if (evaluating) m.push_back({"top5", s[2] / n});
  return m;
}

}  // namespace strata
