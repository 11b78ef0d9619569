// u8 pixels are normalised exactly once, to the same values wherever it
// happens: the device op normalize_u8 (its CPU implementation here; the CUDA
// one in tests/gpu/test_device_feeder.cpp) against the loader's NormalizeU8,
// and batch_to_tensors, which normalises a u8 input and leaves an f32 one (the
// loader's output) as it is.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "data/loader/transforms.h"
#include "kernels/device_ops.h"
#include "train/trainer/batch_tensors.h"

namespace strata {
namespace {

constexpr int64_t kBatch = 4, kC = 3, kH = 5, kW = 7, kSample = kC * kH * kW;

std::vector<uint8_t> pixels(int64_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<uint8_t>(g() & 0xff);
  v[0] = 0;
  v[1] = 255;
  return v;
}

// What the loader makes of the batch: FieldTransform sample by sample.
std::vector<float> loader_normalised(const std::vector<uint8_t>& px, const data::NormalizeU8& n) {
  data::FieldSpec spec{"image", "u8", {kC, kH, kW}, false};
  data::FieldTransform t(spec, &n);
  EXPECT_EQ(t.out_dtype(), DType::f32);
  std::vector<float> out(px.size());
  for (int64_t s = 0; s < kBatch; ++s)
    t.apply(px.data() + s * kSample, reinterpret_cast<uint8_t*>(out.data() + s * kSample));
  return out;
}

std::vector<float> device_op_normalised(std::vector<uint8_t> px, const std::vector<float>& mean,
                                        const std::vector<float>& std) {
  std::vector<float> out(px.size(), -1.0f);
  dev::normalize_u8(TensorView{px.data(), DType::u8, {kBatch, kC, kH, kW}, Device::cpu},
                    TensorView{out.data(), DType::f32, {kBatch, kC, kH, kW}, Device::cpu}, mean.data(),
                    std.data(), mean.size());
  return out;
}

HostBatch image_batch(const void* data, size_t bytes, DType dtype) {
  HostBatch b;
  b.fields.resize(2);
  b.fields[0].name = "image";
  b.fields[0].dtype = dtype;
  b.fields[0].shape = {kBatch, kC, kH, kW};
  b.fields[0].bytes.assign(static_cast<const std::byte*>(data), bytes);
  b.fields[1].name = "label";
  b.fields[1].dtype = DType::i64;
  b.fields[1].shape = {kBatch};
  b.fields[1].bytes.resize(kBatch * 8);
  for (int64_t i = 0; i < kBatch; ++i) b.fields[1].as<int64_t>()[i] = i;
  b.size = kBatch;
  return b;
}

TEST(InputNormalize, TheDeviceOpGivesTheLoadersValuesPerChannel) {
  const auto px = pixels(kBatch * kSample, 1);
  const std::vector<float> mean{0.4914f, 0.4822f, 0.4465f}, std{0.247f, 0.243f, 0.261f};
  const auto want = loader_normalised(px, data::NormalizeU8{"image", mean, std});
  const auto got = device_op_normalised(px, mean, std);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;  // bit for bit
  EXPECT_FLOAT_EQ(got[0], (0.0f - mean[0]) / std[0]);
  EXPECT_FLOAT_EQ(got[1], (1.0f - mean[0]) / std[0]);
}

TEST(InputNormalize, OneMeanAndStdForEveryChannel) {
  const auto px = pixels(kBatch * kSample, 2);
  const auto want = loader_normalised(px, data::NormalizeU8{"image", {0.5f}, {0.25f}});
  const auto got = device_op_normalised(px, {0.5f}, {0.25f});
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
}

TEST(InputNormalize, ABatchToTensorsOfU8PixelsScalesOnceAsTheLoaderWould) {
  const auto px = pixels(kBatch * kSample, 3);
  const std::vector<float> mean{0.1f, 0.2f, 0.3f}, std{0.9f, 0.8f, 0.7f};
  const HostBatch b = image_batch(px.data(), px.size(), DType::u8);
  BatchTensors t = batch_to_tensors(b, "image", "label", {kC, kH, kW}, InputNormalization{mean, std});
  const auto want = loader_normalised(px, data::NormalizeU8{"image", mean, std});
  ASSERT_EQ(t.input.numel(), kBatch * kSample);
  EXPECT_EQ(std::memcmp(t.input.data<float>(), want.data(), want.size() * 4), 0);
  // The default is x / 255, the values batch_to_tensors gave before the device op.
  BatchTensors plain = batch_to_tensors(b, "image", "label", {kC, kH, kW});
  for (int64_t i = 0; i < t.input.numel(); ++i)
    ASSERT_EQ(plain.input.data<float>()[i], static_cast<float>(px[static_cast<size_t>(i)]) * (1.0f / 255.0f));
}

TEST(InputNormalize, AnF32InputTheLoaderNormalisedIsNotScaledAgain) {
  const auto px = pixels(kBatch * kSample, 4);
  const auto normalised = loader_normalised(px, data::NormalizeU8{"image", {0.5f}, {0.5f}});
  const HostBatch b = image_batch(normalised.data(), normalised.size() * 4, DType::f32);
  BatchTensors t = batch_to_tensors(b, "image", "label", {kC, kH, kW}, InputNormalization{{0.5f}, {0.5f}});
  EXPECT_EQ(std::memcmp(t.input.data<float>(), normalised.data(), normalised.size() * 4), 0);
}

TEST(InputNormalize, ChannelsThatDoNotMatchTheInputAreRefused) {
  const auto px = pixels(kBatch * kSample, 5);
  std::vector<float> out(px.size());
  const std::vector<float> two{0.5f, 0.5f};
  EXPECT_THROW(
      dev::normalize_u8(TensorView{const_cast<uint8_t*>(px.data()), DType::u8, {kBatch, kC, kH, kW}},
                        TensorView{out.data(), DType::f32, {kBatch, kC, kH, kW}}, two.data(), two.data(), 2),
      Error);
  const HostBatch b = image_batch(px.data(), px.size(), DType::u8);
  EXPECT_THROW(batch_to_tensors(b, "image", "label", {kC, kH, kW}, InputNormalization{{0.5f, 0.5f}, {0.5f}}),
               ConfigError);
}

}  // namespace
}  // namespace strata
