// Host batch -> tensors the model takes: the input field reshaped to
// (B, *sample_shape) as f32 (u8 fields are scaled to [0, 1]), labels as i64.
#pragma once
#include <string>
#include <vector>

#include "core/batch_source.h"
#include "core/tensor.h"

namespace strata {

struct BatchTensors {
  Tensor input;   // (B, *sample_shape)
  Tensor labels;  // (B) i64
};

BatchTensors batch_to_tensors(const HostBatch& b, const std::string& input_field,
                              const std::string& label_field, const std::vector<int64_t>& sample_shape);

}  // namespace strata
