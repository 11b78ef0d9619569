// DeviceFeeder with the real CUDA copy engine and page-locked batches: every
// batch's bytes arrive on the device intact and in order while the next one is
// copied (read back on the compute stream, which therefore must have waited on
// the copy's fence), the loader's buffers are pinned, and u8 pixels normalised
// on the device match the host's normalisation (into bf16 and f16: the f32
// values rounded once). The protocol itself is tested on the CPU
// (tests/train/trainer/test_device_feeder_protocol.cpp). SKIPPED without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/batch_memory.h"
#include "device_buffer.h"
#include "kernels/cuda/runtime.h"
#include "kernels/runtime/copy_engine.h"
#include "kernels/runtime/half.h"
#include "train/trainer/batch_tensors.h"
#include "train/trainer/device_feeder.h"

namespace strata {
namespace {

constexpr int64_t kBatch = 64, kC = 3, kH = 128, kW = 128;  // 3 MiB of u8 pixels a batch

uint8_t pixel(int64_t batch, int64_t i) {
  return static_cast<uint8_t>((batch * 131 + i * 7 + i / 251) & 0xff);
}

// Batch k: "image" u8 [B, C, H, W] of pixel(k, i), "label" i32 [B] = k * 1000 + row,
// in the batch memory a GPU run gives the loader.
class PinnedSource final : public BatchSource {
 public:
  explicit PinnedSource(int64_t batches) : batches_(batches), memory_(batch_memory_for(Device::cuda)) {}
  void start_epoch(int64_t) override { next_ = 0; }
  bool next(HostBatch& out) override {
    if (next_ >= batches_) return false;
    out.fields.resize(2);
    HostArray& x = out.fields[0];
    HostArray& y = out.fields[1];
    for (HostArray* a : {&x, &y})
      if (a->bytes.resource() != memory_) a->bytes = HostBytes(memory_);
    x.name = "image";
    x.dtype = DType::u8;
    x.shape = {kBatch, kC, kH, kW};
    x.bytes.resize(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) x.as<uint8_t>()[i] = pixel(next_, i);
    y.name = "label";
    y.dtype = DType::i32;
    y.shape = {kBatch};
    y.bytes.resize(kBatch * 4);
    for (int64_t r = 0; r < kBatch; ++r) y.as<int32_t>()[r] = static_cast<int32_t>(next_ * 1000 + r);
    out.size = kBatch;
    ++next_;
    return true;
  }
  int64_t batches_per_epoch() const override { return batches_; }
  SourcePosition position() const override { return {{"batch", next_}}; }
  void restore(const SourcePosition& p) override { next_ = p.at("batch"); }
  DataMetrics metrics() const override { return {}; }

 private:
  int64_t batches_, next_ = 0;
  HostBufferResource* memory_;
};

// Runs on every machine: with a device the engine and pinned memory come up,
// without one both refuse with an Error.
TEST(DeviceFeederCuda, TheEngineAndPinnedMemoryComeUpWithADeviceOrSayWhy) {
  auto st = cuda::device_status();
  if (st.device_count > 0) {
    EXPECT_NO_THROW(make_copy_engine(Device::cuda)) << st.name;
    EXPECT_NO_THROW(batch_memory_for(Device::cuda)) << st.name;
    return;
  }
  EXPECT_THROW(make_copy_engine(Device::cuda), Error);
  EXPECT_THROW(batch_memory_for(Device::cuda), Error);
}

#if STRATA_HAVE_CUDA

TEST(DeviceFeederCuda, EveryBatchArrivesOnTheDeviceIntactAndInOrder) {
  STRATA_SKIP_WITHOUT_DEVICE();
  auto engine = make_copy_engine(Device::cuda);
  PinnedSource src(12);
  DeviceFeeder feeder(src, *engine);
  for (int64_t k = 0; k < 12; ++k) {
    auto b = feeder.next();
    ASSERT_TRUE(b) << "batch " << k;
    ASSERT_NE(b->device_fields, nullptr);
    const HostArray& hx = b->host->field("image");
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, hx.bytes.data()), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeHost) << "the batch's host bytes are page-locked";
    const Tensor& dx = (*b->device_fields)[0];
    EXPECT_EQ(dx.device(), Device::cuda);
    EXPECT_EQ(dx.dtype(), DType::u8) << "u8 pixels travel as u8";
    // Read back on the compute stream: correct only if it waited for the copy.
    const Tensor back = dx.to(Device::cpu);
    const auto* p = back.data<uint8_t>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < back.numel(); ++i) wrong += p[i] != pixel(k, i);
    EXPECT_EQ(wrong, 0) << "bytes of batch " << k << " differ on the device";
    const std::vector<int64_t> labels = (*b->device_fields)[1].to(Device::cpu).to(DType::i64).to_i64_vector();
    EXPECT_EQ(labels.front(), k * 1000);
    EXPECT_EQ(labels.back(), k * 1000 + kBatch - 1);
  }
  EXPECT_FALSE(feeder.next());
}

TEST(DeviceFeederCuda, U8PixelsNormalisedOnTheDeviceMatchTheHost) {
  STRATA_SKIP_WITHOUT_DEVICE();
  auto engine = make_copy_engine(Device::cuda);
  PinnedSource src(2);
  DeviceFeeder feeder(src, *engine);
  const InputNormalization norm{{0.4914f, 0.4822f, 0.4465f}, {0.247f, 0.243f, 0.261f}};
  for (int64_t k = 0; k < 2; ++k) {
    auto b = feeder.next();
    ASSERT_TRUE(b);
    BatchTensors dev = batch_to_tensors(*b, "image", "label", {kC, kH, kW}, norm);
    BatchTensors host = batch_to_tensors(*b->host, "image", "label", {kC, kH, kW}, norm);
    EXPECT_EQ(dev.input.device(), Device::cuda);
    EXPECT_EQ(dev.labels.device(), Device::cuda);
    EXPECT_EQ(dev.labels.dtype(), DType::i64);
    const std::vector<float> d = dev.input.to_float_vector(), h = host.input.to_float_vector();
    ASSERT_EQ(d.size(), h.size());
    int64_t off = 0;
    for (size_t i = 0; i < d.size(); ++i)  // one multiply-add: at most one rounding apart
      off += std::fabs(d[i] - h[i]) > 4e-7f * std::fmax(1.0f, std::fabs(h[i]));
    EXPECT_EQ(off, 0);
    EXPECT_EQ(dev.labels.to_i64_vector(), host.labels.to_i64_vector());
  }
}

// Into bf16 or f16 (a model's compute dtype) the device op writes the device's
// f32 values rounded once. Exact equality holds by construction: the kernel
// computes each value in f32 as for an f32 destination and stores it with the
// round-to-nearest-even conversion convert uses, so the bits are those of the
// model's cast of the f32 input, and of the host's rounding of those values.
TEST(DeviceFeederCuda, U8PixelsNormalisedIntoAHalfDtypeAreTheF32ValuesRoundedOnce) {
  STRATA_SKIP_WITHOUT_DEVICE();
  auto engine = make_copy_engine(Device::cuda);
  PinnedSource src(1);
  DeviceFeeder feeder(src, *engine);
  const InputNormalization norm{{0.4914f, 0.4822f, 0.4465f}, {0.247f, 0.243f, 0.261f}};
  auto b = feeder.next();
  ASSERT_TRUE(b);
  const BatchTensors f32 = batch_to_tensors(*b, "image", "label", {kC, kH, kW}, norm);
  const Tensor values = f32.input.to(Device::cpu);
  for (DType dt : {DType::bf16, DType::f16}) {
    const BatchTensors half = batch_to_tensors(*b, "image", "label", {kC, kH, kW}, norm, dt);
    ASSERT_EQ(half.input.device(), Device::cuda);
    ASSERT_EQ(half.input.dtype(), dt);
    const Tensor got = half.input.to(Device::cpu), cast = f32.input.to(dt).to(Device::cpu);
    int64_t off_cast = 0, off_host = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const uint16_t g = got.data<uint16_t>()[i];
      const float v = values.data<float>()[i];
      off_cast += g != cast.data<uint16_t>()[i];
      off_host += g != (dt == DType::bf16 ? float_to_bf16_bits(v) : float_to_f16_bits(v));
    }
    EXPECT_EQ(off_cast, 0) << dtype_name(dt);
    EXPECT_EQ(off_host, 0) << dtype_name(dt);
  }
}

#endif

}  // namespace
}  // namespace strata
