// Causal language modelling: token ids (B, T) in, the model's logits (B, T, V)
// scored against the next tokens (B, T); loss = mean cross-entropy per token in
// nats; metrics loss, perplexity (e^loss) and bits per byte (loss / ln 2 / bytes
// per token: the figure that compares models with different tokenisers).
#pragma once
#include "train/trainer/task.h"

namespace strata {

class CausalLmTask : public Task {
 public:
  explicit CausalLmTask(const TaskOptions& options);
  std::string name() const override { return "causal_lm"; }
  std::string item_unit() const override { return "token"; }
  TaskOutput run(Module& model, const FedBatch& b, int64_t rows, Device device, Precision precision,
                 bool evaluating, TaskSums& sums) const override;
  std::vector<std::string> sum_names() const override { return {"loss_sum", "items"}; }
  Metrics metrics(const std::vector<double>& sums, bool evaluating) const override;
  std::vector<std::string> metric_names() const override { return {"loss", "perplexity", "bpb"}; }
  bool higher_is_better(const std::string&) const override { return false; }

 private:
  std::string input_field_, target_field_;
  double bytes_per_token_;
};

}  // namespace strata
