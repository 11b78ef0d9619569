// The training step on a CUDA device (issue 10, "the step stays on the
// device"): the metric ops' CUDA implementation against the CPU one, and the
// Trainer on cuda in fp32, bf16 and fp16 (with clipping) reading the device at
// most once per optimizer step outside logging, evaluation and checkpoints,
// from the backend's own counter (kernels/cuda/runtime.h host_syncs()), while
// training to the CPU's accuracy. SKIPPED with the reason when there is no device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/communicator.h"
#include "core/random.h"
#include "kernels/cuda/runtime.h"
#include "kernels/metric_ops.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {

#define SKIP_WITHOUT_CUDA()                                             \
  do {                                                                  \
    const cuda::DeviceStatus st = cuda::device_status();                \
    if (st.device_count == 0) GTEST_SKIP() << "SKIPPED: " << st.reason; \
  } while (0)

TEST(CudaMetricOps, CountHitsMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  Generator g(5);
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{1000, 10}, {64, 1000}, {3, 5}}) {
    // small integers, so that ties are common and the tie rule is exercised
    Tensor logits = Tensor::uniform({rows, classes}, 0, 4, g);
    std::vector<float> v = logits.to_float_vector();
    for (float& x : v) x = std::floor(x);
    std::vector<int64_t> labels(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) labels[static_cast<size_t>(i)] = (i * 7) % classes;
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      Tensor host = Tensor::from_vector(v, {rows, classes}).to(dt);
      Tensor lab = Tensor::from_vector_i64(labels, {rows});
      Tensor c1 = Tensor::zeros({}, DType::f64), c5 = Tensor::zeros({}, DType::f64);
      dev::count_hits(host.view(), lab.view(), c1.view(), c5.view());
      Tensor d1 = Tensor::zeros({}, DType::f64, Device::cuda),
             d5 = Tensor::zeros({}, DType::f64, Device::cuda);
      Tensor dlog = host.to(Device::cuda), dlab = lab.to(Device::cuda);
      dev::count_hits(dlog.view(), dlab.view(), d1.view(), d5.view());
      EXPECT_EQ(d1.item(), c1.item()) << rows << "x" << classes << " " << dtype_name(dt);
      EXPECT_EQ(d5.item(), c5.item()) << rows << "x" << classes << " " << dtype_name(dt);
    }
  }
}

struct Result {
  TrainSummary summary;
};

Result train_on(Device device, const std::string& precision, double max_norm, const std::string& name) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 3;
  c.precision.dtype = precision;
  c.clipping.max_norm = max_norm;
  c.logging.every_steps = 10;  // logging steps read the device: they are left out of the count
  c.checkpoint.every_epochs = 1;
  std::vector<float> x, tx;
  std::vector<int64_t> y, ty;
  synthetic_data(1024, 16, 4, 7, x, y);
  synthetic_data(256, 16, 4, 8, tx, ty);
  MemoryBatchSource src(x, y, {16}, 32, 3, false);
  MemoryBatchSource test(tx, ty, {16}, 64, 0, false);
  SingleProcessCommunicator comm;
  auto model = build(c, {16});
  model->to(device);
  Trainer t(c, temp_dir(name), model, {16}, comm);
  return {t.fit(src, &test, &test)};
}

TEST(CudaTrainerStep, ReadsTheDeviceAtMostOncePerStep) {
  SKIP_WITHOUT_CUDA();
  const Result cpu = train_on(Device::cpu, "fp32", 1.0, "step-cpu");
  EXPECT_EQ(cpu.summary.host_syncs_per_step_max, 0) << "the CPU has nothing to wait for";
  for (const char* precision : {"fp32", "bf16", "fp16"}) {
    const Result gpu = train_on(Device::cuda, precision, 1.0, std::string("step-") + precision);
    EXPECT_EQ(gpu.summary.device, "cuda");
    EXPECT_LE(gpu.summary.host_syncs_per_step_max, 1) << precision;
    EXPECT_GE(gpu.summary.host_syncs_per_step_mean, 1.0) << precision << ": the norm's read was not counted";
    EXPECT_EQ(gpu.summary.steps, cpu.summary.steps) << precision;
    EXPECT_NEAR(gpu.summary.test_accuracy, cpu.summary.test_accuracy, 0.03) << precision;
    std::printf("[ figures  ] %s: host syncs per step max %ld mean %.3f, test accuracy %.4f (cpu %.4f)\n",
                precision, static_cast<long>(gpu.summary.host_syncs_per_step_max),
                gpu.summary.host_syncs_per_step_mean, gpu.summary.test_accuracy, cpu.summary.test_accuracy);
  }
}

}  // namespace
}  // namespace strata::testing
