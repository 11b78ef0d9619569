// The CUDA metric ops (strata::cuda_metric, kernels/cuda/metric_ops.cu) on the
// host SIMT emulator (tests/simt; this file is compiled with its cuda_host.h
// force-included, so cuda_metric:: here is the emulated backend), against the CPU
// metric ops (cpu_metric) on the cases of tests/kernels/test_metric_ops.cpp: the
// tie rule, half logits, top-5 left out, accumulating rather than overwriting,
// and a batch of more rows than count_hits' block has threads, with ragged class
// counts. A label outside [0, C) is a miss on CUDA (the CPU names it instead).
// Operands are exact-size heap blocks, so AddressSanitizer sees an overrun.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/metric_ops_backends.h"
#include "kernels/runtime/half.h"

namespace strata {
namespace {

TensorView on_device(void* p, DType dt, Shape s) { return TensorView{p, dt, std::move(s), Device::cuda}; }
TensorView on_host(void* p, DType dt, Shape s) { return TensorView{p, dt, std::move(s), Device::cpu}; }

// Logits of one dtype: f32 values, or their f16 / bf16 bits.
struct Logits {
  DType dt;
  std::vector<float> f32;
  std::vector<uint16_t> half;
  Logits(DType d, const std::vector<float>& v) : dt(d) {
    if (dt == DType::f32) {
      f32 = v;
      return;
    }
    for (float x : v) half.push_back(dt == DType::f16 ? float_to_f16_bits(x) : float_to_bf16_bits(x));
  }
  void* data() { return dt == DType::f32 ? static_cast<void*>(f32.data()) : static_cast<void*>(half.data()); }
};

// Rows: label top alone; label tied with a lower index (a miss); label tied
// with a higher index (a hit); label third (a top-5 hit, top-1 miss); label
// sixth of six (a miss for both).
struct Batch {
  std::vector<float> logits = {
      5, 1, 0, 0, 0, 0,  // label 0: top
      2, 2, 0, 0, 0, 0,  // label 1: tied with class 0 -> not top
      3, 3, 0, 0, 0, 0,  // label 0: tied with class 1 -> top
      1, 4, 2, 3, 0, 0,  // label 2: two above -> top-5 only
      6, 5, 4, 3, 2, 1,  // label 5: five above -> neither
  };
  std::vector<int64_t> labels = {0, 1, 0, 2, 5};
};

TEST(CudaSimMetricOps, CountsTopOneAndTopFiveUnderTheTieRule) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    Batch b;
    Logits l(dt, b.logits);
    std::vector<double> top1(1, 0.0), top5(1, 0.0);
    cuda_metric::count_hits(on_device(l.data(), dt, {5, 6}), on_device(b.labels.data(), DType::i64, {5}),
                            on_device(top1.data(), DType::f64, {}), on_device(top5.data(), DType::f64, {}));
    EXPECT_EQ(top1[0], 2.0) << dtype_name(dt);  // rows 0 and 2
    EXPECT_EQ(top5[0], 4.0) << dtype_name(dt);  // all but row 4
  }
}

TEST(CudaSimMetricOps, AddsToTheAccumulatorsAndLeavesTopFiveOutWhenUndefined) {
  Batch b;
  std::vector<double> top1(1, 10.0);
  for (int i = 0; i < 2; ++i)
    cuda_metric::count_hits(on_device(b.logits.data(), DType::f32, {5, 6}),
                            on_device(b.labels.data(), DType::i64, {5}),
                            on_device(top1.data(), DType::f64, {}), TensorView{});
  EXPECT_EQ(top1[0], 14.0);
}

// More rows than the block's 256 threads (each thread walks several), class
// counts off every power of two, many ties (integer logits), in every float
// dtype, against the CPU.
TEST(CudaSimMetricOps, CountHitsMatchesTheCpuOnLargeBatches) {
  std::mt19937 rng(7);
  for (int64_t classes : {1, 3, 7, 13}) {
    for (int64_t rows : {int64_t(1), int64_t(255), int64_t(257), int64_t(1003)}) {
      std::vector<float> v(static_cast<size_t>(rows * classes));
      std::uniform_int_distribution<int> score(0, 5);
      for (auto& x : v) x = static_cast<float>(score(rng));
      std::vector<int64_t> labels(static_cast<size_t>(rows));
      std::uniform_int_distribution<int64_t> label(0, classes - 1);
      for (auto& y : labels) y = label(rng);
      for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
        Logits l(dt, v);
        std::vector<double> d1(1, 0.5), d5(1, 0.25), c1(1, 0.5), c5(1, 0.25);
        cuda_metric::count_hits(on_device(l.data(), dt, {rows, classes}),
                                on_device(labels.data(), DType::i64, {rows}),
                                on_device(d1.data(), DType::f64, {}), on_device(d5.data(), DType::f64, {}));
        cpu_metric::count_hits(on_host(l.data(), dt, {rows, classes}),
                               on_host(labels.data(), DType::i64, {rows}), on_host(c1.data(), DType::f64, {}),
                               on_host(c5.data(), DType::f64, {}));
        EXPECT_EQ(d1[0], c1[0]) << dtype_name(dt) << " " << rows << "x" << classes;
        EXPECT_EQ(d5[0], c5[0]) << dtype_name(dt) << " " << rows << "x" << classes;
      }
    }
  }
}

TEST(CudaSimMetricOps, CountsALabelOutsideTheClassesAsAMiss) {
  Batch b;
  b.labels = {0, 1, 0, 2, 6};  // class 6 of 6: the CPU throws; cross_entropy refused it before
  std::vector<double> top1(1, 0.0), top5(1, 0.0);
  cuda_metric::count_hits(on_device(b.logits.data(), DType::f32, {5, 6}),
                          on_device(b.labels.data(), DType::i64, {5}), on_device(top1.data(), DType::f64, {}),
                          on_device(top5.data(), DType::f64, {}));
  EXPECT_EQ(top1[0], 2.0);
  EXPECT_EQ(top5[0], 4.0);
  b.labels[4] = -1;
  cuda_metric::count_hits(on_device(b.logits.data(), DType::f32, {5, 6}),
                          on_device(b.labels.data(), DType::i64, {5}), on_device(top1.data(), DType::f64, {}),
                          TensorView{});
  EXPECT_EQ(top1[0], 4.0);
}

TEST(CudaSimMetricOps, CountHitsOnNoRowsLeavesTheAccumulators) {
  std::vector<float> logits(1);  // a block for the pointer; no row is read
  std::vector<int64_t> labels(1);
  std::vector<double> top1(1, 3.0);
  cuda_metric::count_hits(on_device(logits.data(), DType::f32, {0, 6}),
                          on_device(labels.data(), DType::i64, {0}), on_device(top1.data(), DType::f64, {}),
                          TensorView{});
  EXPECT_EQ(top1[0], 3.0);
}

// add_scaled in every dtype x takes, bit for bit with the CPU: f64 stays double,
// the others are what item() reads.
TEST(CudaSimMetricOps, AddScaledAccumulatesInDoubleLikeTheCpu) {
  const float value = 0.1f;
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    std::vector<double> x64(1, 0.1);
    Logits x(dt == DType::f64 ? DType::f32 : dt, {value});
    void* xp = dt == DType::f64 ? static_cast<void*>(x64.data()) : x.data();
    std::vector<double> on_dev(1, 1.0), on_cpu(1, 1.0);
    cuda_metric::add_scaled(on_device(xp, dt, {}), 128.0, on_device(on_dev.data(), DType::f64, {}));
    cuda_metric::add_scaled(on_device(xp, dt, {}), -3.0, on_device(on_dev.data(), DType::f64, {}));
    cpu_metric::add_scaled(on_host(xp, dt, {}), 128.0, on_host(on_cpu.data(), DType::f64, {}));
    cpu_metric::add_scaled(on_host(xp, dt, {}), -3.0, on_host(on_cpu.data(), DType::f64, {}));
    EXPECT_EQ(on_dev[0], on_cpu[0]) << dtype_name(dt);
  }
  std::vector<float> loss(1, value);
  std::vector<double> acc(1, 1.0);
  cuda_metric::add_scaled(on_device(loss.data(), DType::f32, {}), 128.0,
                          on_device(acc.data(), DType::f64, {}));
  EXPECT_EQ(acc[0], 1.0 + 128.0 * static_cast<double>(0.1f));  // the product item() * n gave
}

}  // namespace
}  // namespace strata
