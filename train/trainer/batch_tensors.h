// Batch -> tensors the model takes: the input field reshaped to
// (B, *sample_shape), labels as i64. An f32 input is taken as it is (the loader
// normalised it); a u8 input is normalised here, exactly once, by the device op
// normalize_u8 on the device the batch is on: x/255, then (x - mean[c]) / std[c]
// with `norm`, into `u8_input_dtype`: f32, or the model's compute dtype (bf16,
// f16), which is the f32 value rounded once, as the model's cast would. A batch
// the DeviceFeeder copied to a device gives tensors there (no copy of an f32
// input or i64 labels); a host batch gives host tensors, which wrap an f32
// input and i64 labels without a copy when the batch has an owner
// (host_field_tensor).
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "train/trainer/fed_batch.h"

namespace strata {

struct BatchTensors {
  Tensor input;   // (B, *sample_shape)
  Tensor labels;  // (B) i64
};

// How u8 input pixels are scaled: one entry for every channel, or one per
// channel (the sample's first dimension).
struct InputNormalization {
  std::vector<float> mean{0.0f};
  std::vector<float> std{1.0f};
};

// The first shape_numel(shape) elements of host field `a` of `b` as a host tensor
// of `dtype` (a's own). With an owner (FedBatch::owner: DeviceFeeder's host
// path) the tensor wraps a's bytes and its storage holds the owner, so they
// outlive every use of the tensor however long autograd or a caller keeps it
// (the feeder gives the source a new batch while one is held); without one the
// bytes are copied, since nothing says how long a plain HostBatch lives.
Tensor host_field_tensor(const FedBatch& b, const HostArray& a, const Shape& shape, DType dtype);

BatchTensors batch_to_tensors(const FedBatch& b, const std::string& input_field,
                              const std::string& label_field, const std::vector<int64_t>& sample_shape,
                              const InputNormalization& norm = {}, DType u8_input_dtype = DType::f32);

}  // namespace strata
