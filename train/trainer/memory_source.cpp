#include "train/trainer/memory_source.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "base/error.h"

namespace strata {

MemoryBatchSource::MemoryBatchSource(std::vector<float> inputs, std::vector<int64_t> labels,
                                     std::vector<int64_t> sample_shape, int64_t batch_size, uint64_t seed,
                                     bool shuffle)
    : inputs_(std::move(inputs)),
      labels_(std::move(labels)),
      sample_shape_(std::move(sample_shape)),
      n_(static_cast<int64_t>(labels_.size())),
      batch_(batch_size),
      seed_(seed),
      shuffle_(shuffle) {
  sample_numel_ = 1;
  for (auto d : sample_shape_) sample_numel_ *= d;
  if (batch_ <= 0) throw Error("MemoryBatchSource: batch size must be positive");
  if (static_cast<int64_t>(inputs_.size()) != n_ * sample_numel_)
    throw Error("MemoryBatchSource: " + std::to_string(inputs_.size()) + " input values for " +
                std::to_string(n_) + " samples of " + std::to_string(sample_numel_));
  start_epoch(0);
}

void MemoryBatchSource::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  batch_index_ = 0;
  metrics_ = {};
  order_.resize(static_cast<size_t>(n_));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (shuffle_) {
    std::mt19937_64 rng(seed_ * 1000003ull + static_cast<uint64_t>(epoch));
    std::shuffle(order_.begin(), order_.end(), rng);
  }
}

void MemoryBatchSource::restore(const SourcePosition& pos) {
  start_epoch(pos.at("epoch"));
  batch_index_ = pos.at("batch");
}

bool MemoryBatchSource::next(HostBatch& out) {
  if (batch_index_ >= batches_per_epoch()) return false;
  out.fields.resize(2);
  HostArray& x = out.fields[0];
  HostArray& y = out.fields[1];
  x.name = "image";
  x.dtype = DType::f32;
  x.shape = {batch_};
  x.shape.insert(x.shape.end(), sample_shape_.begin(), sample_shape_.end());
  x.bytes.resize(static_cast<size_t>(batch_ * sample_numel_) * 4);
  y.name = "label";
  y.dtype = DType::i64;
  y.shape = {batch_};
  y.bytes.resize(static_cast<size_t>(batch_) * 8);
  for (int64_t i = 0; i < batch_; ++i) {
    int64_t s = order_[static_cast<size_t>(batch_index_ * batch_ + i)];
    std::memcpy(x.as<float>() + i * sample_numel_, inputs_.data() + s * sample_numel_,
                static_cast<size_t>(sample_numel_) * 4);
    y.as<int64_t>()[i] = labels_[static_cast<size_t>(s)];
  }
  out.size = batch_;
  ++batch_index_;
  metrics_.batches++;
  metrics_.samples += batch_;
  return true;
}

}  // namespace strata
