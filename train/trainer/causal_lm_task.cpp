#include "train/trainer/causal_lm_task.h"

#include <cmath>

#include "base/error.h"
#include "core/autograd.h"
#include "core/ops.h"
#include "kernels/device_ops.h"
#include "kernels/runtime/trace_range.h"
#include "train/trainer/batch_tensors.h"

namespace strata {
namespace {

// The first `rows` rows of an integer [B, T] field as an i64 tensor of `shape`
// ({rows, T} for the model, {rows * T} for the loss); on the device when the
// feeder put the batch there (i64 ids then as they are, without a copy).
Tensor token_rows(const FedBatch& fb, const std::string& name, int64_t rows, bool flat) {
  const HostArray& a = fb.host->field(name);
  if (a.shape.size() != 2)
    throw ShapeError("batch field '" + name + "' has shape " + shape_str(a.shape) +
                     "; a language model takes token ids of shape [B, T]");
  const int64_t T = a.shape[1], n = rows * T;
  const Shape shape = flat ? Shape{n} : Shape{rows, T};
  if (const Tensor* d = fb.device_field(name)) {
    if (a.dtype == DType::i64)
      return Tensor::from_storage(d->storage(), shape, DType::i64);  // its first rows
    if (a.dtype != DType::i32)
      throw Error("batch field '" + name + "': dtype " + dtype_name(a.dtype) +
                  " is not a token id type (i64, i32)");
    Tensor t = Tensor::empty(shape, DType::i64, d->device());
    dev::convert(TensorView{d->device_data(), DType::i32, shape, d->device()}, t.view());
    return t;
  }
  if (a.dtype == DType::i64) return host_field_tensor(fb, a, shape, DType::i64);  // its first rows
  Tensor t = Tensor::empty(shape, DType::i64);
  int64_t* dst = t.data<int64_t>();
  if (a.dtype == DType::i32)
    for (int64_t i = 0; i < n; ++i) dst[i] = a.as<int32_t>()[i];
  else
    throw Error("batch field '" + name + "': dtype " + dtype_name(a.dtype) +
                " is not a token id type (i64, i32)");
  return t;
}

}  // namespace

CausalLmTask::CausalLmTask(const TaskOptions& o)
    : input_field_(o.input_field.empty() ? "input" : o.input_field),
      target_field_(o.target_field.empty() ? "target" : o.target_field),
      bytes_per_token_(o.bytes_per_token) {}

TaskOutput CausalLmTask::run(Module& model, const FedBatch& fb, int64_t rows, Device device,
                             Precision precision, bool, TaskSums& sums) const {
  const HostBatch& b = *fb.host;
  if (b.field(input_field_).shape != b.field(target_field_).shape)
    throw ShapeError("batch fields '" + input_field_ + "' " + shape_str(b.field(input_field_).shape) +
                     " and '" + target_field_ + "' " + shape_str(b.field(target_field_).shape) +
                     " differ in shape");
  TraceRange h2d("h2d");
  Tensor ids = token_rows(fb, input_field_, rows, false).to(device);
  Tensor targets = token_rows(fb, target_field_, rows, true).to(device);
  h2d.end();
  const int64_t tokens = ids.numel();
  Tensor logits;
  {
    AutocastGuard autocast(precision);
    logits = model(ids);  // [B, T, V]
  }
  const int64_t vocab = logits.size(logits.dim() - 1);
  TaskOutput out;
  out.loss = cross_entropy(reshape(logits, {tokens, vocab}), targets);
  out.items = static_cast<double>(tokens);
  sums.add_scaled(0, out.loss, out.items);  // loss_sum
  sums.add(1, out.items);                   // items
  return out;
}

Metrics CausalLmTask::metrics(const std::vector<double>& s, bool) const {
  const double loss = s.at(1) > 0 ? s[0] / s[1] : 0.0;
  const double bpb = bytes_per_token_ > 0 ? loss / std::log(2.0) / bytes_per_token_ : NAN;
  return {{"loss", loss}, {"perplexity", std::exp(loss)}, {"bpb", bpb}};
}

}  // namespace strata
