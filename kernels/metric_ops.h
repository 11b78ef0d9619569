// Metric ops: the per-batch figures a task adds to its running sums where the
// batch lives, so that a GPU run reads its loss and accuracy once per logging
// interval instead of once per micro-batch (the step then has no host round
// trip; docs/gpu.md). Accumulators are f64 scalars on the batch's device: sums
// of counts stay exact to 2^53 and a loss sum adds as it did on the host. A CPU
// and a CUDA implementation (kernels/cpu/metric_ops.cpp, kernels/cuda/
// metric_ops.cu) share the per-row rule of kernels/metric_math.h.
#pragma once
#include "kernels/runtime/tensor_view.h"

namespace strata::dev {

// acc += alpha * x, in double; x is a floating scalar (a batch's mean loss),
// acc an f64 scalar on x's device.
void add_scaled(const TensorView& x, double alpha, const TensorView& acc);

// For (B, C) logits (f32, f16 or bf16) and B i64 labels on one device: top1 +=
// the rows whose label is the top class, top5 (when defined) += the rows whose
// label is among the top five, under metric_math.h's tie rule. Both f64 scalars.
void count_hits(const TensorView& logits, const TensorView& labels, const TensorView& top1,
                const TensorView& top5);

}  // namespace strata::dev
