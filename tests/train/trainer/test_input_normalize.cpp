// u8 pixels are normalised exactly once, to the same values wherever it
// happens: the device op normalize_u8 (its CPU implementation here; the CUDA
// one in tests/train/trainer/test_device_feeder.cpp) against the loader's NormalizeU8,
// and batch_to_tensors, which normalises a u8 input and leaves an f32 one (the
// loader's output) as it is. A bf16 or f16 destination (the model's compute
// dtype under autocast) gets the f32 value rounded once.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/precision.h"
#include "core/random.h"
#include "data/loader/transforms.h"
#include "kernels/device_ops.h"
#include "kernels/runtime/half.h"
#include "nn/modules/conv.h"
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

// A bf16 or f16 destination (a model's compute dtype) gets the f32 result
// rounded once. Exact equality holds by construction: the kernel computes each
// value in f32 exactly as for an f32 destination and rounds it once, to nearest
// even, with the converters the cast (Tensor::to, dev::convert) uses. Shapes with
// three channels and with one mean/std over rows longer than the kernel's chunk.
TEST(InputNormalize, HalfDestinationsGetTheF32ResultRoundedOnce) {
  struct Case {
    Shape shape;
    std::vector<float> mean, std;
  };
  const std::vector<Case> cases = {
      {{kBatch, kC, kH, kW}, {0.4914f, 0.4822f, 0.4465f}, {0.247f, 0.243f, 0.261f}},
      {{3, 1, 50, 47}, {0.2860f}, {0.3530f}},  // rows of 2350 elements
  };
  for (const Case& c : cases) {
    const int64_t n = shape_numel(c.shape);
    auto px = pixels(n, 6);
    std::vector<float> f32(static_cast<size_t>(n));
    dev::normalize_u8(TensorView{px.data(), DType::u8, c.shape}, TensorView{f32.data(), DType::f32, c.shape},
                      c.mean.data(), c.std.data(), c.mean.size());
    for (DType dt : {DType::bf16, DType::f16}) {
      std::vector<uint16_t> half(static_cast<size_t>(n), 0xdead);
      dev::normalize_u8(TensorView{px.data(), DType::u8, c.shape}, TensorView{half.data(), dt, c.shape},
                        c.mean.data(), c.std.data(), c.mean.size());
      const Tensor cast = Tensor::from_vector(f32, c.shape).to(dt);  // what the model's autocast gives
      for (int64_t i = 0; i < n; ++i) {
        const float v = f32[static_cast<size_t>(i)];
        const uint16_t want = dt == DType::bf16 ? float_to_bf16_bits(v) : float_to_f16_bits(v);
        ASSERT_EQ(half[static_cast<size_t>(i)], want) << dtype_name(dt) << " element " << i << " of " << v;
        ASSERT_EQ(half[static_cast<size_t>(i)], cast.data<uint16_t>()[i])
            << dtype_name(dt) << " element " << i;
      }
    }
  }
}

// batch_to_tensors normalises u8 pixels into the dtype it is asked for, and a
// model under autocast computes the same bits from it as from the f32 input it
// would otherwise cast itself: its first layer's cast() is then the input.
TEST(InputNormalize, ABatchNormalisedIntoTheComputeDtypeGivesTheModelTheSameBits) {
  const auto px = pixels(kBatch * kSample, 7);
  const InputNormalization norm{{0.1f, 0.2f, 0.3f}, {0.9f, 0.8f, 0.7f}};
  const HostBatch b = image_batch(px.data(), px.size(), DType::u8);
  Generator gen(3);
  Conv2d conv(kC, 4, 3, 1, 1, true, &gen);
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const DType dt = precision_dtype(p);
    BatchTensors f32 = batch_to_tensors(b, "image", "label", {kC, kH, kW}, norm);
    BatchTensors half = batch_to_tensors(b, "image", "label", {kC, kH, kW}, norm, dt);
    ASSERT_EQ(half.input.dtype(), dt);
    const Tensor cast = f32.input.to(dt);
    EXPECT_EQ(std::memcmp(half.input.data<uint16_t>(), cast.data<uint16_t>(), px.size() * 2), 0);
    AutocastGuard autocast(p);
    const Tensor y_f32 = conv(f32.input), y_half = conv(half.input);
    ASSERT_EQ(y_half.dtype(), dt);
    EXPECT_EQ(std::memcmp(y_half.data<uint16_t>(), y_f32.data<uint16_t>(), y_f32.numel() * 2), 0)
        << precision_name(p);
  }
}

TEST(InputNormalize, ADestinationOtherThanF32Bf16OrF16IsRefused) {
  const auto px = pixels(kBatch * kSample, 8);
  const Shape shape{kBatch, kC, kH, kW};
  const float mean = 0.5f, std = 0.5f;
  for (DType dt : {DType::i32, DType::i64, DType::u8, DType::f64}) {
    std::vector<std::byte> out(px.size() * dtype_size(dt));
    try {
      dev::normalize_u8(TensorView{const_cast<uint8_t*>(px.data()), DType::u8, shape},
                        TensorView{out.data(), dt, shape}, &mean, &std, 1);
      ADD_FAILURE() << "normalize_u8 wrote " << dtype_name(dt);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("into ") + dtype_name(dt)), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("f32, bf16 or f16"), std::string::npos) << e.what();
    }
  }
  const HostBatch b = image_batch(px.data(), px.size(), DType::u8);
  EXPECT_THROW(batch_to_tensors(b, "image", "label", {kC, kH, kW}, {}, DType::i64), Error);
}

}  // namespace
}  // namespace strata
