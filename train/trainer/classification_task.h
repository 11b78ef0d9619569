// Image classification: input (B, *sample_shape) f32 from an f32 or u8 field,
// labels (B) integers; loss = mean cross-entropy; metrics loss, accuracy (top-1)
// and, in evaluation, top-5.
#pragma once
#include "train/trainer/batch_tensors.h"
#include "train/trainer/task.h"

namespace strata {

class ClassificationTask : public Task {
 public:
  explicit ClassificationTask(const TaskOptions& options);
  std::string name() const override { return "classification"; }
  std::string item_unit() const override { return "sample"; }
  TaskOutput run(Module& model, const FedBatch& b, int64_t rows, Device device, Precision precision,
                 bool evaluating, TaskSums& sums) const override;
  std::vector<std::string> sum_names() const override { return {"loss_sum", "top1", "top5", "items"}; }
  Metrics metrics(const std::vector<double>& sums, bool evaluating) const override;
  std::vector<std::string> metric_names() const override { return {"loss", "accuracy", "top5"}; }
  bool higher_is_better(const std::string& metric) const override { return metric != "loss"; }

 private:
  std::string input_field_, label_field_;
  std::vector<int64_t> sample_shape_;
  InputNormalization input_norm_;
};

}  // namespace strata
